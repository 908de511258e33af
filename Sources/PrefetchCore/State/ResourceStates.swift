/// The per-resource records of a `StateSnapshot`, keyed by feed and path: a dictionary's
/// interface over two arrays of exactly their count, in the order added (state.db's order),
/// found through a `PositionTable` (a `Dictionary` of a million records keeps room for a
/// third more of key and record each). Removal, which no pass does but a caller may,
/// rebuilds the table.
public struct ResourceStates: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// Every key, in the order added.
    public private(set) var keys: [ResourceKey] = []
    /// Every record, `keys`' order.
    public private(set) var values: [ResourceState] = []
    /// Where each key is in `keys`.
    private var table = PositionTable()

    public init() {}

    public init(dictionaryLiteral elements: (ResourceKey, ResourceState)...) {
        reserveCapacity(elements.count)
        for (key, value) in elements { self[key] = value }
    }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }

    /// Room for `capacity` records without growing the arrays or rebuilding the index.
    public mutating func reserveCapacity(_ capacity: Int) {
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
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

    public func makeIterator() -> Iterator { Iterator(keys: keys, values: values) }

    /// The records with their keys, in the order added.
    public struct Iterator: IteratorProtocol {
        fileprivate let keys: [ResourceKey]
        fileprivate let values: [ResourceState]
        private var index = 0

        fileprivate init(keys: [ResourceKey], values: [ResourceState]) {
            self.keys = keys
            self.values = values
        }

        public mutating func next() -> (key: ResourceKey, value: ResourceState)? {
            guard index < keys.count else { return nil }
            defer { index += 1 }
            return (key: keys[index], value: values[index])
        }
    }

    /// The same keys with equal records, in whatever order they were added.
    public static func == (a: ResourceStates, b: ResourceStates) -> Bool {
        guard a.count == b.count else { return false }
        for index in a.keys.indices where b[a.keys[index]] != a.values[index] { return false }
        return true
    }

    // MARK: The table

    private func position(of key: ResourceKey) -> Int? {
        table.position(hash: key.hashValue, where: { keys[$0] == key })
    }

    private mutating func append(_ key: ResourceKey, _ value: ResourceState) {
        keys.append(key)
        values.append(value)
        table.append(hash: key.hashValue)
    }

    private mutating func remove(at index: Int) {
        keys.remove(at: index)
        values.remove(at: index)
        table.remove(at: index)
    }
}
