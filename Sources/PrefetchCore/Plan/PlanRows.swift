/// A feed's rows in the plan, compact: a plan may have a million. Each row keeps its numbers
/// (`PlanItem.Values`) and indexes into the feed's texts — reasons and errors repeat from
/// row to row, so each distinct one is kept once — and reads its path and URL from the
/// feed's resources, by its place there. Reading a row makes its `PlanItem`; writing one
/// stores it back.
public struct PlanRows: RandomAccessCollection, MutableCollection, Sendable {
    public let feed: String
    /// The feed's resources (the manifest's array, shared, not copied).
    let resources: [Resource]
    private var rows: [Row] = []
    /// The distinct reasons, errors and mirror URLs; 0 is "none".
    private var texts: [String] = [""]
    private var textIndex: [ExactText: UInt32] = [:]
    /// The text last interned, looked up before the dictionary: consecutive rows mostly
    /// share their reason.
    private var lastText: (text: String, index: UInt32) = ("", 0)

    struct Row: Sendable {
        var values: PlanItem.Values
        var reason: UInt32
        /// 0: none; else 1 + an index into `texts`.
        var error: UInt32
        /// 0: nothing cached; 1: the entry's url; else 2 + an index into `texts`.
        var server: UInt32
    }

    init(feed: String, resources: [Resource]) {
        self.feed = feed
        self.resources = resources
        rows.reserveCapacity(resources.count)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { rows.count }

    public subscript(position: Int) -> PlanItem {
        get {
            let row = rows[position]
            let server: PlanItem.Server = switch row.server {
            case 0: .none
            case 1: .entry
            default: .other(texts[Int(row.server - 2)])
            }
            return PlanItem(feed: feed, resource: resources[Int(row.values.row)], values: row.values, reason: texts[Int(row.reason)],
                            error: row.error == 0 ? nil : texts[Int(row.error - 1)], server: server)
        }
        set { rows[position] = store(newValue) }
    }

    /// Row `position`'s numbers and small fields alone, no string touched: for the loops
    /// over every row (a whole `PlanItem` costs a retain and release of each of its strings).
    subscript(values position: Int) -> PlanItem.Values {
        get { rows[position].values }
        set { rows[position].values = newValue }
    }

    /// The rows' numbers and small fields alone, in order.
    var allValues: LazyMapCollection<[Row], PlanItem.Values> { rows.lazy.map(\.values) }

    /// Whether any row gives `reason`.
    func contains(reason: String) -> Bool {
        guard let code = reason.isEmpty ? 0 : textIndex[ExactText(reason)] else { return false }
        return rows.contains { $0.reason == code }
    }

    /// Row `position`'s path and reason, each without the rest of its row.
    func path(at position: Int) -> String { resources[Int(rows[position].values.row)].path }
    func reason(at position: Int) -> String { texts[Int(rows[position].reason)] }

    mutating func setReason(_ reason: String, at position: Int) {
        rows[position].reason = intern(reason)
    }

    mutating func append(_ item: PlanItem) {
        rows.append(store(item))
    }

    /// Reorders the rows as `Planner.permute` does (row `i` is the one that was at `order[i]`).
    mutating func permute(into order: [Int]) {
        Planner.permute(&rows, into: order)
    }

    private mutating func store(_ item: PlanItem) -> Row {
        let server: UInt32 = switch item.server {
        case .none: 0
        case .entry: 1
        case .other(let text): 2 + intern(text)
        }
        return Row(values: item.values, reason: intern(item.reason), error: item.error.map { 1 + intern($0) } ?? 0, server: server)
    }

    private mutating func intern(_ text: String) -> UInt32 {
        if text.isEmpty { return 0 }
        if SameBytes.equal(text, lastText.text) { return lastText.index }
        let index: UInt32
        if let known = textIndex[ExactText(text)] {
            index = known
        } else {
            index = UInt32(texts.count)
            texts.append(text)
            textIndex[ExactText(text)] = index
        }
        lastText = (text, index)
        return index
    }
}
