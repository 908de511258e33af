import Foundation

/// The conditions the running transfers of one pass go by (SPEC §7): each new snapshot's
/// known readings replace the held ones, an unknown reading leaves the last known one in
/// place. Asked from the transfer threads (under the board's lock, one at a time; the lock
/// here makes that not matter).
final class HeldConditions: @unchecked Sendable {
    private let lock = NSLock()
    private var snapshot: ConditionSnapshot

    init(_ start: ConditionSnapshot) {
        snapshot = start
    }

    /// Takes in `latest` and returns what is held now.
    func update(with latest: ConditionSnapshot) -> ConditionSnapshot {
        lock.lock()
        defer { lock.unlock() }
        snapshot = snapshot.keepingKnown(latest)
        return snapshot
    }
}
