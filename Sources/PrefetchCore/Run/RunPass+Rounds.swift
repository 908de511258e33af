import Foundation

/// A pass's transfers in rounds (SPEC §9): local sources first, then the engine's whole
/// transfers, then the deltas (which the whole transfers never wait on), then what a delta
/// handed back to be fetched whole; and again for resources waiting on another's content.
extension RunPass {
    /// Jobs a local source can give are placed from it; of those sharing a SHA-256 no file
    /// holds, the first transfers and the others wait; after each round of transfers the
    /// waiting ones take the content placed, and those whose leader failed or paused send
    /// the next of them to the engine, until none waits. In each round, jobs that try a
    /// delta run theirs after the engine's whole transfers.
    func transferInRounds(_ jobs: consuming [TransferJob], content: Set<Int>, plan: Plan, snapshot: StateSnapshot,
                          cacheAllowance: CacheAllowance?, timings: [String: FeedTiming], held: HeldConditions,
                          _ pass: PassContext, stopRequested: @escaping () -> Bool) -> EngineSummary {
        var local = LocalPlacement(cache: cache, state: state, clock: clock, report: pass.reporter.handle)
        local.faults = settings.faults
        local.cacheAllowance = cacheAllowance
        var leading = Set<String>()
        var next: [TransferJob], waiting: [TransferJob]
        if content.isEmpty { (next, waiting) = (jobs, []) } else { (next, waiting) = local.split(jobs, content: content, leading: &leading) }
        var deltas = DeltaRound(cache: cache, state: state, config: config, environment: settings.environment, clock: clock,
                                report: pass.reporter.handle)
        deltas.metered = pass.lastProbe.metered
        deltas.faults = settings.faults
        let pauseReason = pauseReason(timings: timings, held: held, pass)
        var summary = EngineSummary()
        var used: [String: UInt64] = [:]  // body bytes of the rounds before, for the metered budget
        func runEngine(_ jobs: [TransferJob]) {
            guard !jobs.isEmpty else { return }
            let round = transfer(jobs, plan: plan, snapshot: snapshot, cacheAllowance: cacheAllowance, pauseReason: pauseReason, pass,
                                 stopRequested: stopRequested, usedBefore: used)
            for (feed, tally) in round.byFeed { used[feed, default: 0] += tally.bodyBytes }
            summary.merge(round)
        }
        while true {
            let tries = { (job: TransferJob) in DeltaRound.tries(job, in: cache, state: state) }
            if next.contains(where: tries) {  // else the round's jobs go to the engine as they are (no copy of a long list)
                let deltaJobs = next.filter(tries)
                runEngine(next.filter { !tries($0) })
                let before = deltas.summary.byFeed
                // The metered budget (SPEC §9, in two steps): what is left today when the deltas begin.
                let usedNow = used
                deltas.budgetLeft = { feed in
                    guard pass.lastProbe.metered, let budget = feed.conditions.meteredBudget else { return nil }
                    let day = LocalDay.label(plan.now, clock: ZoneClock(feed.timeZone))
                    let usedToday = (snapshot.meteredBytes[MeteredDay(feed: feed.name, day: day)] ?? 0) + (usedNow[feed.name] ?? 0)
                    return budget.bytes - min(budget.bytes, usedToday)
                }
                deltas.recordedHolds = (try? state.originHolds()) ?? snapshot.originHolds  // the engine's round may have held some
                deltas.run(deltaJobs, pauseReason: pauseReason, stopRequested: stopRequested)
                for (feed, tally) in deltas.summary.byFeed { used[feed, default: 0] += tally.bodyBytes - (before[feed]?.bodyBytes ?? 0) }
                let wholeFetches = deltas.takeWholeFetches()
                if !deltas.summary.diskFull { runEngine(wholeFetches) }
            } else {
                runEngine(next)
            }
            if waiting.isEmpty || stopRequested() || summary.diskFull || deltas.summary.diskFull { break }
            leading = []
            (next, waiting) = local.split(waiting, content: Set(waiting.indices), leading: &leading)
            if next.isEmpty { break }
        }
        summary.merge(deltas.summary)
        summary.merge(local.summary)
        return summary
    }

    /// Why a running feed must pause now: its window closed, or a condition it needs is lost.
    private func pauseReason(timings: [String: FeedTiming], held: HeldConditions, _ pass: PassContext) -> (Feed) -> String? {
        let clock = self.clock
        return { feed in
            let now = clock()
            if let timing = timings[feed.name], timing.openInterval(at: now) == nil { return "window closed" }
            return Self.conditionLost(feed.conditions, held.update(with: pass.conditions()))
        }
    }

    /// Runs `jobs` (the caller hands them over, so nothing else holds them through the run).
    /// A feed pauses when `pauseReason` says; a metered feed spends what is left of today's budget.
    private func transfer(_ jobs: [TransferJob], plan: Plan, snapshot: StateSnapshot, cacheAllowance: CacheAllowance?,
                          pauseReason: @escaping (Feed) -> String?, _ pass: PassContext,
                          stopRequested: @escaping () -> Bool, usedBefore: [String: UInt64] = [:]) -> EngineSummary {
        var meteredUsedToday: [String: UInt64] = [:]
        for feed in feeds where feed.conditions.meteredBudget != nil {
            let day = LocalDay.label(plan.now, clock: ZoneClock(feed.timeZone))
            meteredUsedToday[feed.name] = (snapshot.meteredBytes[MeteredDay(feed: feed.name, day: day)] ?? 0)
                + (pass.lastProbe.metered ? usedBefore[feed.name] ?? 0 : 0)
        }
        let engine = TransferEngine(cache: cache, state: state, config: config, environment: settings.environment,
                                    threads: settings.transferThreads, bootID: settings.bootID, faults: settings.faults,
                                    metered: pass.lastProbe.metered, meteredUsedToday: meteredUsedToday, cacheAllowance: cacheAllowance,
                                    clock: clock, onEvent: pass.reporter.handle)
        return engine.run(jobs, holds: snapshot.originHolds, pauseReason: pauseReason, stopRequested: stopRequested)
    }
}
