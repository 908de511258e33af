/// A feed's `metered_budget` for the rest of its day, while a run moves bytes over a
/// metered link (SPEC §5): a transfer that would exceed it does not start, and one of
/// unknown size pauses when it runs out.
///
/// Every received chunk is counted as it arrives (`take`), so the budget holds within a
/// run however many transfers share it; known sizes are reserved when their transfer
/// starts, so two that each fit alone do not start together when both do not fit.
final class MeteredAllowance {
    /// Why a transfer (or a delta, SPEC §9) pauses when the budget does not cover it.
    static let pausedReason = "metered budget used"

    let budget: UInt64
    /// Bytes moved over metered links today: recorded before this run, plus this run's.
    private(set) var used: UInt64
    /// Sizes of running transfers of known size, not yet released.
    private(set) var reserved: UInt64 = 0

    init(budget: UInt64, usedToday: UInt64) {
        self.budget = budget
        used = usedToday
    }

    enum Admission: Equatable {
        case start
        /// Not now: running transfers hold reservations that may leave room when they end.
        case wait
        /// Not in this run: the budget cannot cover it.
        case refuse
    }

    /// Whether a transfer of `size` bytes still to move (nil: unknown) may start now.
    func admit(_ size: UInt64?) -> Admission {
        let committed = used + reserved
        if let size {
            if committed + size <= budget { return .start }
            return used + size <= budget && reserved > 0 ? .wait : .refuse
        }
        if committed < budget { return .start }
        return used < budget && reserved > 0 ? .wait : .refuse
    }

    func reserve(_ size: UInt64) { reserved += size }

    func release(_ size: UInt64) { reserved -= min(reserved, size) }

    /// Counts a chunk about to be written; false once the budget is used up (the chunk is
    /// then held back and the transfer paused). A transfer of unknown size also leaves the
    /// reservations of the others alone (`reservations: true`). A chunk that crosses the
    /// line is let through: the overshoot is at most one read.
    func take(_ count: Int, reservations: Bool) -> Bool {
        guard used + (reservations ? reserved : 0) < budget else { return false }
        used += UInt64(count)
        return true
    }
}
