/// Turns feeds, recorded state, conditions and a moment into a plan: a pure function.
public enum Planner {
    /// Throughput assumed before any run has measured one: 4 MiB/s.
    public static let defaultThroughput: Double = 4 * 1_048_576

    /// How far ahead of now a recorded time may lie and still be believed. A time further
    /// ahead was recorded under a clock that has since been set back (a machine that booted
    /// with its clock wrong, then corrected): a copy "validated" then is not fresh, a release
    /// "finished" then does not hold the feed back, and a retry set beyond `max_backoff` (plus
    /// this slack) waits `max_backoff` from now. Otherwise such a copy would stay fresh, and
    /// such a feed idle, until the clock caught up.
    public static let clockSlack: Int64 = 3600

    /// Reasons of `deferred` and `backoff` rows whose `next` the daemon's wake-up tells
    /// apart (`DaemonWakeup.Why`), as `CacheBudget.cacheFullReason` is for the cap.
    static let embargoReason = "embargo"
    static let jitterReason = "jitter"
    static let originHeldPrefix = "origin held: "

    /// `time`, unless it lies more than `clockSlack` ahead of `now`; then `replacement`.
    static func believed(_ time: Instant?, now: Instant, else replacement: Instant?) -> Instant? {
        guard let time, time > now.advanced(bySeconds: clockSlack) else { return time }
        return replacement
    }

    public static func plan(_ input: PlanInput) -> Plan {
        let now = input.now
        var feedPlans: [FeedPlan] = []
        for feed in input.feeds {
            feedPlans.append(planFeed(feed, input: input))
        }
        // `consume`: the plan's rows the only reference to them, so ordering them below
        // changes them in place (a second reference made Swift copy every feed's rows).
        var plan = Plan(now: now, feeds: consume feedPlans, conditions: input.conditions, machineID: input.machineID,
                        throughput: input.state.throughput ?? defaultThroughput,
                        throughputMeasured: input.state.throughput != nil)
        CacheAdmission.apply(&plan, input: input)  // max_cache_size (SPEC §8), before the due work is ordered
        orderDueWork(&plan, input: input)
        // Rows: due work first in the order a run starts it, then by state, then manifest order.
        for index in plan.feeds.indices {
            let keys = rowKeys(plan.feeds[index].items)
            guard zip(keys, keys.dropFirst()).contains(where: { $0.0 > $0.1 }) else { continue }  // in order already
            let sorted = keys.indices.sorted { keys[$0] < keys[$1] }
            plan.feeds[index].items.permute(into: sorted)
        }
        return plan
    }

    /// Each row's place: due work first in the order a run starts it, then by state, then
    /// manifest order (a function, so no second reference to the rows outlives it and their
    /// reordering is in place).
    private static func rowKeys(_ items: PlanRows) -> [(Int, Int)] {
        items.indices.map { i in
            let item = items[values: i]
            return (rowRank(item.status), item.status == .due ? (item.startOrder ?? i) : i)
        }
    }

    /// Reorders `items` in place so that item `i` is the one that was at `order[i]`
    /// (`order` a permutation of the indices): by following each cycle, with no second array
    /// of items (a feed may have a million).
    static func permute<T>(_ items: inout [T], into order: [Int]) {
        var placed = [Bool](repeating: false, count: items.count)
        for start in items.indices where !placed[start] {
            // The cycle through `start`: each place takes the item of the next.
            let first = items[start]
            var here = start
            while true {
                placed[here] = true
                let from = order[here]
                if from == start {
                    items[here] = first
                    break
                }
                items[here] = items[from]
                here = from
            }
        }
    }

    static func rowRank(_ status: ResourceStatus) -> Int {
        switch status {
        case .due: return 0
        case .waiting: return 1
        case .deferred: return 2
        case .backoff: return 3
        case .failed: return 4
        case .fresh: return 5
        case .expired: return 6
        }
    }

    // MARK: One feed

    /// One feed's plan: its release, window and conditions, and a row per resource in
    /// manifest order.
    static func planFeed(_ feed: Feed, input: PlanInput) -> FeedPlan {
        let context = FeedContext(feed, input: input)
        var items = PlanRows(feed: feed.name, resources: feed.resources)
        for (row, resource) in feed.resources.enumerated() {
            items.append(planItem(resource, row: row, in: context))
        }
        let now = input.now, timing = context.timing, gate = context.gate
        return FeedPlan(name: feed.name, zoneName: feed.timeZoneName, clock: timing.clock,
                        schedule: feed.schedule?.source, windows: feed.windows, days: feed.days,
                        nextReleases: timing.nextReleases(after: now, count: 5, state: context.feedState),
                        currentRelease: context.release, jitter: feed.jitter, jitterOffset: timing.jitterOffset,
                        windowOpen: context.open != nil && (gate ?? now) <= now,
                        holds: context.blocked.map { (name: $0.name, ok: $0.ok) }, items: items)
    }

    /// What every row of one feed shares: its release and gate, its window, its conditions.
    struct FeedContext {
        let feed: Feed
        let input: PlanInput
        let now: Instant
        let timing: FeedTiming
        /// The feed's record, its times believed (`believed`).
        let feedState: FeedState?
        let release: Instant?
        let gate: Instant?
        let nextGate: Instant?
        let open: WindowSchedule.Interval?
        let blocked: [(name: String, ok: Bool, reason: String)]
        /// The next opportunity and why the window is shut.
        let nextOpportunity: Instant?
        let closedReason: String
        /// Due work's window end, and the opening after it.
        let windowEnd: Instant?
        let openingAfter: Instant?

        init(_ feed: Feed, input: PlanInput) {
            let now = input.now
            let timing = FeedTiming(feed, machineID: input.machineID?.usableValue)
            let feedState = input.state.feeds[feed.name].map { recorded in
                var state = recorded
                state.lastRelease = Planner.believed(recorded.lastRelease, now: now, else: now)
                state.lastReleaseFinished = Planner.believed(recorded.lastReleaseFinished, now: now, else: now)
                return state
            }
            let release = timing.currentRelease(at: now, state: feedState)
            let gate = timing.gate(for: release)
            let nextRelease = timing.nextReleases(after: now, count: 1, state: feedState).first
            let open = timing.openInterval(at: now)
            self.feed = feed
            self.input = input
            self.now = now
            self.timing = timing
            self.feedState = feedState
            self.release = release
            self.gate = gate
            nextGate = nextRelease.map { timing.gate(for: $0) ?? $0 }
            self.open = open
            blocked = Planner.conditionBlocks(feed, conditions: input.conditions, state: input.state, now: now, clock: timing.clock)
            // Per feed, not per resource: the next opportunity and why the window is shut.
            nextOpportunity = timing.opportunity(atOrAfter: max(now, gate ?? now))
            closedReason = open == nil ? (timing.inWindowJitter(at: now) ? Planner.jitterReason : "window closed") : ""
            // Due work's window end, and the opening after it: the feed's, the same for each row.
            let windowEnd = open.flatMap { $0.close == Int64.max ? nil : Instant(seconds: $0.close) }
            self.windowEnd = windowEnd
            openingAfter = windowEnd.flatMap { timing.opportunity(atOrAfter: $0) }
        }
    }

    /// One resource's row: expired, failed or backing off, or fresh, whichever applies
    /// first; else the work of this release (`planWork`), which a held origin may hold back.
    private static func planItem(_ resource: Resource, row: Int, in context: FeedContext) -> PlanItem {
        let feed = context.feed, input = context.input, now = context.now
        let key = ResourceKey(feed: feed.name, path: resource.path)
        // Nothing recorded or cached (a first plan): no key hashed twice per row.
        let state = input.state.resources.isEmpty ? nil : input.state.resources[key]
        var cached = !input.cached.isEmpty && input.cached.contains(feed: feed.name, position: row)
        // Hashing the URL and the entry is only needed to compare with what was recorded.
        // Its 32 bytes, compared with the record's; the hex only for a partial, a failure
        // record or a URL that does not match (an older schema's mark, a changed URL).
        let digest = state == nil ? nil : resource.url.identityDigest
        var identityText: String?
        func identity() -> String {
            if let identityText { return identityText }
            let text = digest?.hex ?? ""
            identityText = text
            return text
        }
        let sameURL = state.map { recorded in
            digest.map(recorded.recordsURL) == true || resource.url.matches(recorded: recorded.urlHash, identity: identity())
        } ?? false
        // Its partial as the run sees it (SPEC §7): only one it would resume counts.
        let resumePoint = state?.partial == nil ? nil
            : ResumePoint.of(resource, state: state, identity: identity(), file: input.partialFiles[key], bootID: input.bootID)
        let bytes = resource.size ?? resumePoint?.total ?? (cached ? state?.length : nil) ?? state?.lastResponseLength
            ?? state?.partial?.totalLength
        var item = PlanItem(feed: feed.name, resource: resource, row: row, status: .due, reason: "", bytes: bytes, remaining: bytes)
        if cached { item.server = state?.servedBy?.shown.map { $0.isEmpty ? .none : .other($0) } ?? .entry }

        // expired, or never fetchable (expires not after not_before: a manifest warning)
        if let expires = resource.expires, expires <= now || resource.notBefore.map({ expires <= $0 }) == true {
            item.status = .expired
            item.reason = "expired"
            item.remaining = 0
            return item
        }
        // failed / backoff: only failures of the release in force, and of this version of
        // the entry, count (a changed entry starts its attempts afresh)
        if let state, state.failures > 0 || state.permanentFailure, let failedIn = state.failureRelease,
           failedIn == (context.release ?? failedIn),
           state.failureEntry.map({ $0 == resource.fingerprint(identity: identity()) }) ?? sameURL {
            if markFailure(&item, state: state, in: context) { return item }
        }
        // changed: the copy no longer matches its entry (URL without its query, sha256,
        // size): due whatever refresh says; removing a sha256 or size changes nothing
        let changed = cached && (state.map { Self.copyIsOfAnotherEntry(resource, $0, sameURL: sameURL) } ?? false)
        // fresh
        let validated = (cached && sameURL && !changed) ? believed(state?.validatedAt, now: now, else: nil) : nil
        var pinBroken = false
        if let validated, let state, let sha256 = resource.sha256, isPinned(sha256, state) {
            // SPEC §9: a pinned copy is never requested; due for revalidation, its bytes are checked instead.
            let fresh = markFresh(&item, validated: validated, in: context) || input.pinnedCopyHolds?(key, sha256) ?? true
            if fresh {
                item.status = .fresh
                item.reason = pinnedReason
                item.next = nil
                item.remaining = 0
                return item
            }
            cached = false  // not the pin's bytes: due, as a missing file (and not a source of itself)
            pinBroken = true
        } else if let validated, markFresh(&item, validated: validated, in: context) {
            return item
        }
        // Work to do in this release: how much is left after the offset the run resumes from.
        if let resumePoint {
            item.resumeFrom = resumePoint.resumeFrom
            if let total = bytes, resumePoint.resumeFrom <= total { item.remaining = total - resumePoint.resumeFrom }
        }
        // SPEC §9: content a file in the cache already holds is taken from it, with no request.
        if !cached || changed, !pinBroken, let sha256 = resource.sha256,
           let source = cached && state?.sha256 == sha256 ? "\(feed.name)/\(resource.path)" : input.localSource?(sha256, resource.size) {
            // A copy of that content already at the path (its URL changed): its own source, found with no lookup.
            planFromCache(&item, resource, source: source, in: context)
            return item
        }
        var dueReason = !cached ? (resumePoint != nil ? "resume" : "not cached") : changed ? "changed" : "stale"
        var budgetNeed = resource.encoding == .decode ? nil : item.remaining  // decode: the bytes on the wire are not known (§7)
        if resource.triesDelta { planDelta(&item, resource, cached: cached, bytes: bytes, reason: &dueReason, budgetNeed: &budgetNeed, in: context) }
        planWork(&item, resource, state: state, resuming: resumePoint != nil, budgetNeed: budgetNeed, dueReason: dueReason, in: context)
        holdForOrigin(&item, resource, state: state, in: context)
        return item
    }

    /// failed (a permanent error, or no attempts left) or backoff (the retry not yet due),
    /// for a resource whose failures count; false when neither applies. The last error is
    /// shown either way.
    private static func markFailure(_ item: inout PlanItem, state: ResourceState, in context: FeedContext) -> Bool {
        let feed = context.feed, now = context.now
        item.error = state.lastError
        if state.permanentFailure || state.failures >= feed.retry.attempts {
            item.status = .failed
            item.reason = state.permanentFailure ? "permanent error" : "gave up after \(state.failures) attempts"
            item.next = context.nextGate
            return true
        }
        // A retry is never set more than max_backoff ahead: one further ahead is from a clock set back since.
        let latest = now + feed.retry.maxBackoff
        if let retry = state.nextRetry.map({ $0 > latest.advanced(bySeconds: clockSlack) ? latest : $0 }), retry > now {
            item.status = .backoff
            item.reason = "attempt \(state.failures) of \(feed.retry.attempts) failed"
            item.next = retry
            return true
        }
        return false
    }

    /// fresh: the copy, validated at `validated`, needs no work in this release; false when
    /// it does (validated before the release in force began, and `refresh` has passed).
    private static func markFresh(_ item: inout PlanItem, validated: Instant, in context: FeedContext) -> Bool {
        let feed = context.feed
        let beforeRelease = context.release.map { validated < $0 } ?? (context.timing.mode == .afterPrevious && context.feedState == nil)
        if beforeRelease && context.now.isAtLeast(feed.refresh, after: validated) { return false }
        item.status = .fresh
        item.reason = "fresh"
        item.remaining = 0
        let byAge = validated + feed.refresh
        item.next = beforeRelease ? byAge : max(context.nextGate ?? byAge, byAge)
        return true
    }

    /// Work to do in this release: deferred (embargo, window, jitter), waiting (a condition,
    /// the metered budget) or due, with the window it is due in.
    private static func planWork(_ item: inout PlanItem, _ resource: Resource, state: ResourceState?, resuming: Bool, budgetNeed: UInt64?,
                                 dueReason: String, in context: FeedContext) {
        let timing = context.timing
        if deferred(&item, resource, in: context) {
            return
        } else if let block = context.blocked.first(where: { !$0.ok }) {
            item.status = .waiting
            item.reason = block.reason
        } else if let budgetBlock = meteredBudgetBlock(context.feed, remaining: budgetNeed, input: context.input, clock: timing.clock) {
            item.status = .waiting
            item.reason = budgetBlock
        } else {
            item.status = .due
            item.reason = dueReason
            item.windowEnd = context.windowEnd
            item.nextOpening = context.openingAfter
            // §6's deadline rule: judged on the resource's last 2xx response (none recorded:
            // never fetched, it starts); a resumable partial can always go on.
            if !resuming, let last = state?.lastResponse,
               !ResumeRule.judge(last, sha256Given: resource.sha256 != nil, encoding: resource.encoding).isResumable {
                item.resumable = false
            }
        }
    }

    /// deferred by the embargo (`not_before`), the window or its jitter, with when it may be
    /// due; false when none holds it back (the rest of the work's rules then apply).
    static func deferred(_ item: inout PlanItem, _ resource: Resource, in context: FeedContext) -> Bool {
        let now = context.now, gate = context.gate
        if let notBefore = resource.notBefore, notBefore > now {
            item.status = .deferred
            item.reason = embargoReason
            item.next = context.timing.opportunity(atOrAfter: max(now, gate ?? now, notBefore))
        } else if context.open == nil {
            item.status = .deferred
            item.reason = context.closedReason
            item.next = context.nextOpportunity
        } else if let gate, gate > now {
            item.status = .deferred
            item.reason = jitterReason
            item.next = context.nextOpportunity
        } else {
            return false
        }
        return true
    }

    /// Whether the recorded copy is of another version of the entry: its URL changed in
    /// scheme, host, port or path, or the entry's `sha256` or `size` differs from what was
    /// recorded for the copy, or its effective `encoding` from the one the copy was stored
    /// under (SPEC §5, §7). Only a copy prefetch recorded counts: a cached file without a
    /// record (state.db rebuilt) is simply revalidated.
    static func copyIsOfAnotherEntry(_ resource: Resource, _ state: ResourceState, sameURL: Bool) -> Bool {
        guard state.placedAt != nil || state.validatedAt != nil else { return false }
        if !sameURL { return true }
        if let sha256 = resource.sha256, state.sha256 != sha256 { return true }
        if let size = resource.size, state.length != size { return true }
        if resource.encoding != state.copyEncoding { return true }
        return false
    }

    /// The feed-wide condition checks, each holding or not, with the waiting reason.
    static func conditionBlocks(_ feed: Feed, conditions c: ConditionSnapshot, state: StateSnapshot, now: Instant,
                                clock: ZoneClock) -> [(name: String, ok: Bool, reason: String)] {
        var checks: [(name: String, ok: Bool, reason: String)] = []
        if feed.conditions.network == .unmetered {
            checks.append(("network", !c.metered, "network metered"))
        }
        if feed.conditions.power == .ac {
            checks.append(("power", c.onAC, "on battery"))
        }
        if feed.conditions.minBattery > 0, !c.onAC, let level = c.batteryLevel {
            checks.append(("battery", level >= feed.conditions.minBattery, "battery \(level)% < \(feed.conditions.minBattery)%"))
        }
        return checks
    }

    /// `metered budget used` when a metered link's daily budget does not cover this transfer.
    static func meteredBudgetBlock(_ feed: Feed, remaining: UInt64?, input: PlanInput, clock: ZoneClock) -> String? {
        guard input.conditions.metered, let budget = feed.conditions.meteredBudget else { return nil }
        let used = input.state.meteredBytes[MeteredDay(feed: feed.name, day: LocalDay.label(input.now, clock: clock))] ?? 0
        if used >= budget.bytes { return "metered budget used" }
        if let remaining, used + remaining > budget.bytes { return "metered budget used" }
        return nil
    }

    // MARK: Across feeds

    /// Orders due work (priority, earliest window end, smallest size), holds back what would
    /// break `min_free_space`, and estimates finish times at the recorded throughput.
    static func orderDueWork(_ plan: inout Plan, input: PlanInput) {
        // Small sort keys, not the items themselves: ties go by feed order, then manifest order.
        // Narrow fields (32-bit indexes, an 8-bit priority) keep a slot small; as many slots
        // as there are due rows, counted first.
        struct Slot: Comparable {
            var windowEnd: Instant, size: UInt64, feed: UInt32, item: UInt32, priority: UInt8
            static func < (a: Slot, b: Slot) -> Bool {
                (a.priority, a.windowEnd, a.size, a.feed, a.item) < (b.priority, b.windowEnd, b.size, b.feed, b.item)
            }
        }
        var due: [Slot] = []
        due.reserveCapacity(plan.feeds.reduce(0) { count, feedPlan in count + feedPlan.items.allValues.count { $0.status == .due } })
        for (f, feedPlan) in plan.feeds.enumerated() {
            for i in feedPlan.items.indices where feedPlan.items[values: i].status == .due {
                let item = feedPlan.items[values: i]
                due.append(Slot(windowEnd: item.windowEnd ?? .distantFuture, size: item.remaining ?? UInt64.max, feed: UInt32(f),
                                item: UInt32(i), priority: item.priority == .high ? 0 : item.priority == .normal ? 1 : 2))
            }
        }
        due.sort()
        let byName = Dictionary(input.feeds.map { ($0.name, $0.conditions.minFreeSpace?.bytes ?? 0) }, uniquingKeysWith: { a, _ in a })
        // Each planned feed's min_free_space, found once, not once per due row.
        let minimums = plan.feeds.map { byName[$0.name] ?? 0 }
        var committed: UInt64 = 0
        var elapsed: Double = 0
        for place in due {
            let slot = (feed: Int(place.feed), item: Int(place.item))
            let known = plan.feeds[slot.feed].items[values: slot.item].remaining
            let remaining = known ?? 0
            let minimum = minimums[slot.feed]
            if let free = input.conditions.freeBytes {
                let have = free > committed ? free - committed : 0
                let need = minimum + remaining
                if have < need {
                    let (haveText, needText) = ByteSize.formatApart(have, need)
                    plan.feeds[slot.feed].items[values: slot.item].status = .waiting
                    plan.feeds[slot.feed].items.setReason("free space \(haveText) < \(needText)", at: slot.item)
                    plan.feeds[slot.feed].items[values: slot.item].windowEnd = nil
                    continue
                }
            }
            // Of unknown size: no estimate, and whether it fits is not known (the estimates of
            // the work after it are then lower bounds).
            if known != nil {
                let finish = plan.now.advanced(byNanoseconds: Int64(min(9e18, ((elapsed + Double(remaining) / plan.throughput) * 1e9).rounded(.up))))
                let windowEnd = plan.feeds[slot.feed].items[values: slot.item].windowEnd
                let fits = windowEnd.map { finish <= $0 } ?? true
                // Deadlines act (SPEC §6): a transfer that could not resume and would be cut by
                // the window's end is not started; it waits for the next window.
                if !fits, !plan.feeds[slot.feed].items[values: slot.item].resumable {
                    plan.feeds[slot.feed].items[values: slot.item].status = .deferred
                    plan.feeds[slot.feed].items.setReason("would not finish before the window closes", at: slot.item)
                    plan.feeds[slot.feed].items[values: slot.item].next = plan.feeds[slot.feed].items[values: slot.item].nextOpening
                    plan.feeds[slot.feed].items[values: slot.item].windowEnd = nil
                    continue
                }
                plan.feeds[slot.feed].items[values: slot.item].estimatedFinish = finish
                plan.feeds[slot.feed].items[values: slot.item].fits = fits
            }
            committed += remaining
            elapsed += Double(remaining) / plan.throughput
            plan.feeds[slot.feed].items[values: slot.item].startOrder = plan.positions.count
            plan.positions.append((slot.feed, slot.item))  // items are still in manifest order here
        }
    }
}
