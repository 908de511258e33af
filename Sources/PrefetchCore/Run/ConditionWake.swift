/// Which changes of the readings unblock work a plan left waiting on a condition (SPEC
/// §7: the daemon acts on a probe's change within 5 s, not at its next minute's re-check):
/// the link no longer metered for work waiting on `network metered` or `metered budget
/// used`; AC power for `on battery`; the battery reaching the lowest `min_battery` waited
/// on; free space reaching the least that a waiting transfer needs (an unknown reading
/// counts as its default, so it can unblock too). Pure: made from the plan and the
/// snapshot it was made with, asked with the latest snapshot; a change that unblocks
/// nothing (free space creeping, a metered link turning metered) wakes nothing.
struct ConditionWake: Sendable, Equatable {
    /// The snapshot the plan was made with.
    var planned: ConditionSnapshot
    var network = false
    var power = false
    /// The lowest `min_battery` of a feed whose work waits on its battery.
    var battery: Int?
    /// The least free space a waiting transfer needs: its feed's `min_free_space` and
    /// its remaining bytes (what earlier transfers commit is left out: a lower bound).
    var freeSpace: UInt64?

    init(planned: ConditionSnapshot) {
        self.planned = planned
    }

    /// From a plan and the feeds it was made from (in the same order).
    init(_ plan: Plan, feeds: [Feed]) {
        self.init(planned: plan.conditions)
        for (feed, feedPlan) in zip(feeds, plan.feeds) {
            for i in feedPlan.items.indices where feedPlan.items[values: i].status == .waiting {
                let item = feedPlan.items[i]
                if item.reason == "network metered" || item.reason == "metered budget used" {
                    network = true
                } else if item.reason == "on battery" {
                    power = true
                } else if item.reason.hasPrefix("battery ") {
                    battery = min(battery ?? Int.max, feed.conditions.minBattery)
                } else if item.reason.hasPrefix("free space") {
                    let need = (feed.conditions.minFreeSpace?.bytes ?? 0).addingReportingOverflow(item.remaining ?? 0)
                    freeSpace = min(freeSpace ?? UInt64.max, need.overflow ? UInt64.max : need.partialValue)
                }
            }
        }
    }

    /// Whether it depends on power or free space, which are polled (the network's changes
    /// are signalled).
    var needsPolling: Bool { power || battery != nil || freeSpace != nil }

    /// True when `now` lets waiting work start that `planned` held back.
    func unblocks(_ now: ConditionSnapshot) -> Bool {
        if network, planned.metered, !now.metered { return true }
        if power, !planned.onAC, now.onAC { return true }
        // Work waits on `battery N% < M%` only while on battery below M: M reached, or AC.
        if let battery, now.onAC || (now.batteryLevel ?? 0) >= battery { return true }
        if let need = freeSpace, let had = planned.freeBytes, had < need {
            guard let free = now.freeBytes else { return true }  // unknown counts as enough
            if free >= need { return true }
        }
        return false
    }
}
