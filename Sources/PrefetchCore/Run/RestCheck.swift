/// What a daemon pass that changed nothing leaves for the next ones (issue 20, target 6):
/// the state.db and cache stamps taken before it read anything, the moment its plan was
/// made and the first moment that plan changes on its own. While `holds`, a pass would
/// read the same state and the same listing at a moment the plan does not change, so it
/// would plan the same rows, transfer nothing, collect nothing and leave every index alone
/// (SPEC §6: "a pass that changed nothing leaves it alone"): the daemon's pass then only
/// probes (SPEC §7) and writes the metrics file (`RestingPass`) — no state read, no listing, no plan of 100,000 rows once a minute.
///
/// A plan is at rest only when none of its rows is `due` or `waiting` and every `deferred`
/// one says when it ends: then the conditions cannot change a row (they only decide between
/// `waiting` and `due`), and everything else that moves a row — a release, a window, a
/// backoff's end, an embargo, a copy turning stale — is a time the plan's wake-up weighs.
/// An `expires` and a removed feed's grace are times of the wake-up too (`DaemonWakeup`),
/// so the rest ends at the wake-up; a partial's 7 days (`gc`'s clean-up) end it as well.
/// Anything written to state.db (by this process or another) changes its stamp,
/// and a file deleted, planted or renamed in the cache changes a folder's (`CacheStamp`).
struct RestCheck {
    let state: StateStore.ChangeStamp
    let cache: CacheStamp
    /// The plan's moment; a clock set back before it plans again.
    let plannedAt: Instant
    /// What the pass said (when and why): told again by each pass that rests on it.
    let wakeup: DaemonWakeup?
    let wake: ConditionWake?

    /// The first moment a pass could differ: the wake-up's.
    var until: Instant? { wakeup?.at }

    /// The check a pass leaves: nil unless its plan is at rest. `state` and `cache`: the
    /// stamps taken before the pass read anything (a pass that wrote leaves a stamp that
    /// no longer holds, so the next pass plans again, and rests only if that one changed nothing).
    /// `wakeup`: the pass's (`DaemonWakeup.next`; a daemon with feed sources keeps no rest).
    static func after(_ plan: Plan, state: StateStore.ChangeStamp, cache: CacheStamp, wakeup: DaemonWakeup?,
                      wake: ConditionWake?) -> RestCheck? {
        for feedPlan in plan.feeds {
            for item in feedPlan.items.allValues {
                switch item.status {
                case .due, .waiting: return nil
                case .deferred where item.next == nil: return nil
                default: continue
                }
            }
        }
        return RestCheck(state: state, cache: cache, plannedAt: plan.now, wakeup: wakeup, wake: wake)
    }

    /// Whether a pass at `now` (the shifted clock; `realNow` the one mtimes go by) would
    /// plan the same: the time first (no I/O), then state.db's stamp, then every folder's.
    func holds(now: Instant, realNow: Instant, state: StateStore, cache: CacheFolder) -> Bool {
        guard timeHolds(now: now, realNow: realNow) else { return false }
        guard let current = try? state.changeStamp(), current == self.state else { return false }
        return self.cache.holds(in: cache)
    }

    /// The times alone: from the plan's moment to `until`, and before a partial turns old.
    func timeHolds(now: Instant, realNow: Instant) -> Bool {
        guard now >= plannedAt, until.map({ now < $0 }) ?? true else { return false }
        if let aging = cache.partialsAgeAt, realNow >= aging { return false }
        return true
    }
}
