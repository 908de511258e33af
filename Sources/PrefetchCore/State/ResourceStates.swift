/// The per-resource records of a `StateSnapshot`, keyed by feed and path: a dictionary's
/// interface over arrays of exactly their count, in the order added (state.db's order),
/// found through a `PositionTable`. The keys are kept as bytes: each feed's name once, and
/// every path's bytes one after another in one array, so a record's key costs no string of
/// its own (a snapshot holds one per resource; a key read back is made when asked).
/// Keys are their bytes, as `ResourceKey` compares them. Removal, which no pass does but a
/// caller may, moves the records after it down.
public struct ResourceStates: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// Every record, in the order added.
    public private(set) var values: [ResourceState] = []
    /// Each record's key: its feed (an index into `feeds`) and where its path's bytes end in
    /// `pathBytes` (they begin where the record before's end).
    private var keyRows: [(feed: UInt32, end: UInt32)] = []
    private var pathBytes: [UInt8] = []
    /// The feeds' names, each once, and where each is in `feeds`.
    private var feeds: [String] = []
    private var feedIndex: [ExactText: UInt32] = [:]
    /// Where each key is in `keyRows` and `values`.
    private var table = PositionTable()

    public init() {}

    public init(dictionaryLiteral elements: (ResourceKey, ResourceState)...) {
        reserveCapacity(elements.count)
        for (key, value) in elements { self[key] = value }
    }

    public var count: Int { values.count }
    public var isEmpty: Bool { values.isEmpty }

    /// Room for `capacity` records (and `pathBytes` bytes of their paths) without growing the
    /// arrays or the table.
    public mutating func reserveCapacity(_ capacity: Int, pathBytes bytes: Int = 0) {
        pathBytes.reserveCapacity(bytes)
        values.reserveCapacity(capacity)
        keyRows.reserveCapacity(capacity)
        table.reserveCapacity(capacity)
    }

    /// The record of `key`; setting nil removes it.
    public subscript(key: ResourceKey) -> ResourceState? {
        get { position(of: key).map { values[$0] } }
        set {
            if let index = position(of: key) {
                if let newValue { values[index] = newValue } else { remove(at: index) }
            } else if let newValue {
                append(key, newValue)
            }
        }
    }

    /// The record of `key`, or `defaultValue` added under it when a change is made through it.
    public subscript(key: ResourceKey, default defaultValue: @autoclosure () -> ResourceState) -> ResourceState {
        get { self[key] ?? defaultValue() }
        set { self[key] = newValue }
    }

    /// Every key, in the order added (made when asked).
    public var keys: [ResourceKey] { keyRows.indices.map(key(at:)) }

    public func makeIterator() -> Iterator { Iterator(records: self) }

    /// The records with their keys, in the order added.
    public struct Iterator: IteratorProtocol {
        fileprivate let records: ResourceStates
        private var index = 0

        fileprivate init(records: ResourceStates) { self.records = records }

        public mutating func next() -> (key: ResourceKey, value: ResourceState)? {
            guard index < records.count else { return nil }
            defer { index += 1 }
            return (key: records.key(at: index), value: records.values[index])
        }
    }

    /// The same keys with equal records, in whatever order they were added.
    public static func == (a: ResourceStates, b: ResourceStates) -> Bool {
        guard a.count == b.count else { return false }
        for index in a.values.indices where b[a.key(at: index)] != a.values[index] { return false }
        return true
    }

    // MARK: The keys

    private func pathRange(at index: Int) -> Range<Int> {
        (index == 0 ? 0 : Int(keyRows[index - 1].end))..<Int(keyRows[index].end)
    }

    private func key(at index: Int) -> ResourceKey {
        ResourceKey(feed: feeds[Int(keyRows[index].feed)], path: String(decoding: pathBytes[pathRange(at: index)], as: UTF8.self))
    }

    private func position(of key: ResourceKey) -> Int? {
        table.position(hash: key.hashValue) { index in
            SameBytes.equal(key.path, pathBytes[pathRange(at: index)]) && SameBytes.equal(key.feed, feeds[Int(keyRows[index].feed)])
        }
    }

    private mutating func append(_ key: ResourceKey, _ value: ResourceState) {
        pathBytes.append(contentsOf: key.path.utf8)
        precondition(pathBytes.count <= Int(UInt32.max), "more path bytes than a record's end holds")
        keyRows.append((feedNumber(key.feed), UInt32(pathBytes.count)))
        values.append(value)
        table.append(hash: key.hashValue)
    }

    /// Adds the record of a key not here yet (state.db's rows are unique by their bytes),
    /// its path's bytes written by `writePath` straight after the others: no string is made
    /// of them.
    mutating func appendNew(_ value: ResourceState, feed name: String, path writePath: (inout [UInt8]) -> Void) {
        let start = pathBytes.count
        writePath(&pathBytes)
        precondition(pathBytes.count <= Int(UInt32.max), "more path bytes than a record's end holds")
        keyRows.append((feedNumber(name), UInt32(pathBytes.count)))
        values.append(value)
        table.append(hash: SameBytes.hash(name, then: pathBytes[start...]))
    }

    private mutating func feedNumber(_ name: String) -> UInt32 {
        if let known = feedIndex[ExactText(name)] { return known }
        let number = UInt32(feeds.count)
        feeds.append(name)
        feedIndex[ExactText(name)] = number
        return number
    }

    private mutating func remove(at index: Int) {
        let range = pathRange(at: index)
        pathBytes.removeSubrange(range)
        for later in (index + 1)..<keyRows.count { keyRows[later].end -= UInt32(range.count) }
        keyRows.remove(at: index)
        values.remove(at: index)
        table.remove(at: index)
    }
}
