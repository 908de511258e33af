/// The one hash table: it finds positions in the caller's own arrays (0 ..< `count`, added in
/// order) and keeps nothing of their keys: a slot of 4 bytes per position and twice as many
/// slots (at most half used, linear probing), and each position's hash (4 bytes), so that it
/// grows without asking the caller again. The caller keeps its keys where they are (an
/// array, an arena of bytes) and says whether the key at a position is the one sought. A
/// `Dictionary` of a million keys holds its buckets up to three quarters full, with a key and
/// a value in each; this holds only the slots and the hashes.
///
///     if let found = table.position(hash: key.hashValue, where: { keys[$0] == key }) { ... }
///     keys.append(key); table.append(hash: key.hashValue)
struct PositionTable: Sendable, Equatable {
    /// A position + 1 in each used slot, 0 in a free one; 0 or a power of two slots.
    private var slots: [Int32] = []
    /// Each position's hash (its low 32 bits: enough to place it in any table that fits).
    private var hashes: [UInt32] = []

    init() {}

    /// How many positions it holds.
    var count: Int { hashes.count }

    /// The position whose key `isMatch` says is the one sought, among those with this hash.
    func position(hash: Int, where isMatch: (Int) -> Bool) -> Int? {
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1, low = UInt32(truncatingIfNeeded: hash)
        var slot = hash & mask
        while true {
            let entry = Int(slots[slot])
            if entry == 0 { return nil }
            if hashes[entry - 1] == low, isMatch(entry - 1) { return entry - 1 }
            slot = (slot + 1) & mask
        }
    }

    /// Adds the next position (`count`) with this hash.
    mutating func append(hash: Int) {
        precondition(count < Int32.max, "more positions than a slot holds")
        hashes.append(UInt32(truncatingIfNeeded: hash))
        if slots.count < 2 * count { rebuild(slotCount: Self.slotCount(for: count)) } else { place(count - 1) }
    }

    /// Room for `capacity` positions without growing again.
    mutating func reserveCapacity(_ capacity: Int) {
        hashes.reserveCapacity(capacity)
        if Self.slotCount(for: capacity) > slots.count { rebuild(slotCount: Self.slotCount(for: capacity)) }
    }

    /// Removes position `position`: the ones after it move down by one, as in the caller's
    /// arrays.
    mutating func remove(at position: Int) {
        hashes.remove(at: position)
        rebuild(slotCount: slots.count)
    }

    private mutating func rebuild(slotCount: Int) {
        slots = [Int32](repeating: 0, count: slotCount)
        for position in hashes.indices { place(position) }
    }

    private mutating func place(_ position: Int) {
        let mask = slots.count - 1
        var slot = Int(hashes[position]) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(position + 1)
    }

    private static func slotCount(for count: Int) -> Int {
        var slots = 8
        while slots < 2 * count { slots <<= 1 }
        return slots
    }
}
