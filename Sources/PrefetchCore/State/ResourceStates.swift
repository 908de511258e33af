/// The per-resource records of a `StateSnapshot`, keyed by feed and path: a dictionary's
/// interface over two plain arrays and a table of 32-bit slots.
///
/// A `Dictionary` of a million records keeps its buckets at most three quarters full and
/// doubles them as it grows, so after `reserveCapacity` of 100,000 it held 262,144 buckets of
/// key and record each, 84 MB where the records took 32 (heaptrack, a `run` over 100,000
/// resources). Here the keys and records sit in arrays of exactly their count, in the order
/// they were added (state.db's order), and only the open-addressing index has spare room:
/// 4 bytes a slot, at most half of them used, linear probing. Removal, which no pass does but
/// a caller may, rebuilds the index.
public struct ResourceStates: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// Every key, in the order added.
    public private(set) var keys: [ResourceKey] = []
    /// Every record, `keys`' order.
    public private(set) var values: [ResourceState] = []
    /// Index + 1 into `keys` and `values`; 0 is a free slot. Its count is 0 or a power of two
    /// at least twice `keys.count`.
    private var slots: [Int32] = []

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
        if Self.slotCount(for: capacity) > slots.count { rebuild(slotCount: Self.slotCount(for: capacity)) }
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

    // MARK: The index

    private static func slotCount(for count: Int) -> Int {
        var slots = 8
        while slots < 2 * count { slots <<= 1 }
        return slots
    }

    private func position(of key: ResourceKey) -> Int? {
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1
        var slot = key.hashValue & mask
        while true {
            let entry = Int(slots[slot])
            if entry == 0 { return nil }
            if keys[entry - 1] == key { return entry - 1 }
            slot = (slot + 1) & mask
        }
    }

    private mutating func append(_ key: ResourceKey, _ value: ResourceState) {
        precondition(keys.count < Int32.max, "more resource records than an index slot holds")
        keys.append(key)
        values.append(value)
        if slots.count < 2 * keys.count { rebuild(slotCount: Self.slotCount(for: keys.count)) } else { insertSlot(keys.count - 1) }
    }

    private mutating func remove(at index: Int) {
        keys.remove(at: index)
        values.remove(at: index)
        rebuild(slotCount: slots.count)
    }

    private mutating func insertSlot(_ index: Int) {
        let mask = slots.count - 1
        var slot = keys[index].hashValue & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(index + 1)
    }

    private mutating func rebuild(slotCount: Int) {
        slots = [Int32](repeating: 0, count: slotCount)
        for index in keys.indices { insertSlot(index) }
    }
}
