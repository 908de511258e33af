import Foundation

/// `prefetch daemon`: holds the cache lock for its lifetime and does what `run` does at
/// every wake-up — the next release, window opening, backoff end or embargo, and at least
/// once a minute to re-check conditions (when, and why: `DaemonWakeup`, the one rule).
/// SIGTERM/SIGINT: pause transfers resumably, exit 0. SIGHUP: reload the feeds (a broken
/// reload keeps the previous ones). SIGUSR1: run now.
/// What to do when is `DaemonStateMachine`'s; this file does it. Under systemd
/// (`NOTIFY_SOCKET`) it tells what it does through `SystemdNotifier` (SPEC §6). One
/// `ConditionMonitor` keeps the readings for the daemon's life; a change that unblocks
/// work the last pass left waiting (`ConditionWake`) wakes a pass at once (SPEC §7).
enum DaemonCommand {
    /// A sleep looks at the wall clock at least this often, so a clock set forward is noticed.
    static let clockLook: Double = 15

    static func run(_ context: CommandContext) -> ExitCode {
        let settings: Settings
        switch Settings.load(context, command: "daemon") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let config = settings.config
        let console = context.console
        guard let local = context.loadLocalFeeds(config) else { return .usage }
        let feeds = FeedSet.assemble(local: local, config: config).all
        let signals = StopSignal(signals: [SIGTERM, SIGINT], also: [SIGHUP, SIGUSR1])
        let notifier = SystemdNotifier(environment: context.environment, console: console)
        notifier.tell(.loaded(feeds: feeds.count))
        // Said by whatever is running — the transfer loop, the lock wait, the verification — as
        // it goes: the watchdog's pings come from work that moves, and a stop is told at once.
        let alive = { notifier.tell(signals.received != nil ? .stopping : .alive) }
        let stopRequested = { alive(); return signals.received != nil }
        // Another writer (a `run`, a `gc`) is waited for, not refused.
        let session: CacheSession
        switch CacheSession.open(config, feeds: feeds, console: console,
                                 whenLocked: .wait(waiting: { notifier.tell(.waitingForLock) }, giveUp: stopRequested)) {
        case .success(let opened?): session = opened
        case .success(nil): return .success
        case .failure(let code): return code
        }
        let reporter = RunReporter(mode: console.colorOut ? .terminal : .plain, quiet: false, console: console, silentWhenIdle: true,
                                   observe: { notifier.tell(.transfer($0)) })
        let monitor = ConditionMonitor(probes: ConditionProbes(environment: settings.environment), cache: config.cache,
                                       meteredDefault: config.meteredDefault)
        monitor.onChange = { [signals] in signals.nudge() }
        monitor.start()
        defer { monitor.stop() }
        console.out("prefetch daemon: \(feeds.count) feed\(feeds.count == 1 ? "" : "s") from \(config.feeds), cache \(config.cache)\n")

        var loop = DaemonLoop(context: context, settings: settings, signals: signals, notifier: notifier, session: session, reporter: reporter,
                              monitor: monitor, alive: alive, stopRequested: stopRequested, local: local, feeds: feeds)
        var action = loop.machine.handle(.started(at: settings.now()))
        while true {
            switch action {
            case .runPass: action = loop.runPass()
            case .reloadFeeds: action = loop.reload()
            case .sleep(let until): action = loop.sleep(until: until)
            case .stop(let signal): return loop.stop(signal)
            case .none:
                // Not an answer to any event this loop gives; looking at the clock again is safe.
                action = loop.machine.handle(.timerFired(at: settings.now()))
            }
        }
    }
}

/// The daemon between its start and its stop: what it keeps from one action to the next,
/// and one method for each action of `DaemonStateMachine` that carries it out and returns
/// the machine's next action.
private struct DaemonLoop {
    let context: CommandContext
    let settings: Settings
    let signals: StopSignal
    let notifier: SystemdNotifier
    let session: CacheSession
    let reporter: RunReporter
    let monitor: ConditionMonitor
    /// Tells systemd the daemon is alive (or stopping): said by whatever is running.
    let alive: () -> Void
    /// `alive`, then whether SIGTERM or SIGINT arrived.
    let stopRequested: () -> Bool
    /// The local feeds as last loaded (a broken reload keeps them).
    var local: [Feed]
    /// The feeds the passes run: the local ones and those of the feed sources.
    var feeds: [Feed]
    /// Every source is checked at the next pass (the first, and after SIGHUP); else the due ones.
    var checkAllSources = true
    /// What the last pass left waiting on a condition, and which changes unblock it.
    var wake: ConditionWake?
    /// Left by the last pass when it changed nothing and nothing was due or waiting: while it
    /// holds, a pass only probes (`RestingPass`). SIGUSR1, SIGHUP and feed sources plan in full.
    var rest: RestCheck?
    /// The zone the journal's wake-up times are said in (as STATUS= says them).
    let localClock = ZoneClock(TimeZone.current)
    var machine = DaemonStateMachine()

    var config: Config { settings.config }
    var console: Console { context.console }

    /// Tells the machine every signal that arrived; the last action that is not `.none` wins
    /// (a SIGTERM after a SIGHUP stops rather than reloads).
    mutating func deliverSignals() -> DaemonStateMachine.Action? {
        var latest: DaemonStateMachine.Action?
        for number in signals.drain() {
            if number == SIGUSR1 || number == SIGHUP { rest = nil }  // "plan and run now": in full
            let next = machine.handle(.signal(DaemonStateMachine.Signal(number), at: settings.now()))
            if next != .none { latest = next }
        }
        return latest
    }

    /// One pass: the due sources first (SPEC §8), then the pass over every feed that runs;
    /// then, when the machine sleeps next, when and why it wakes.
    mutating func runPass() -> DaemonStateMachine.Action {
        notifier.tell(.passStarted)
        let sources = SourcePass.run(settings: settings, local: local, cache: session.cache, state: session.state, console: console,
                                     all: checkAllSources, stopRequested: stopRequested)
        checkAllSources = false
        feeds = sources.feeds.all
        let problems = sources.problems
        for problem in problems { console.err("prefetch daemon: \(problem)\n") }  // said each pass, as the status
        let outcome = passOutcome(sources: sources.statuses)
        rest = config.feedSources.isEmpty ? outcome.rest : nil
        wake = outcome.wake
        // The daemon wakes for the next source that comes due, too.
        let checker = SourceCheck(config: config, environment: settings.environment, console: console, machineID: settings.machineID?.usableValue)
        let wakeup = DaemonWakeup.next(outcome.wakeup, sources: checker.dues(config.feedSources, state: session.state, now: settings.now()))
        _ = deliverSignals()  // remembered by the machine until the pass's end, just told
        let action = machine.handle(.passEnded(nextWakeup: wakeup?.at, at: settings.now()))
        let errors = ([outcome.metricsError] + problems.map(Optional.some)).compactMap { $0 }
        if case .sleep = action {
            notifier.tell(.passEnded(nextWakeup: wakeup?.at, why: wakeup?.why.text, error: errors.isEmpty ? nil : errors.joined(separator: "; ")))
            // After the pass's `run:` line, when and why the next comes (a pass that did nothing prints nothing).
            if outcome.reported {
                console.out("prefetch daemon: " + DaemonWakeup.line(at: wakeup?.at, why: wakeup?.why.text, clock: localClock) + "\n")
            }
        }
        return action
    }

    /// The pass over `feeds`: only probes while the last pass's rest holds (`RestingPass`),
    /// else `run`'s pass in full.
    private func passOutcome(sources: [SourceStatus]) -> RunPass.Outcome {
        if let resting = rest, config.feedSources.isEmpty,
           resting.holds(now: settings.now(), realNow: Clock.realNow(), state: session.state, cache: session.cache) {
            return RestingPass.run(resting, feeds: feeds, settings: settings, cache: session.cache, state: session.state,
                                   console: console, monitor: monitor, sources: sources)
        }
        var pass = RunPass(feeds: feeds, allFeeds: feeds, settings: settings, cache: session.cache, state: session.state,
                           console: console, wantsNextWakeup: true, monitor: monitor)
        pass.sources = sources
        let outcome = pass.execute(reporter: reporter, stopRequested: stopRequested)
        // At rest the snapshot is not read again until something changes: not kept meanwhile.
        if outcome.rest != nil {
            session.state.forgetSnapshot()
            MemoryTuning.releaseFreePages()
        }
        return outcome
    }

    /// SIGHUP: the local feeds are read again (a broken reload keeps the previous ones), and
    /// every feed source is checked at the next pass, due or not (SPEC §8).
    mutating func reload() -> DaemonStateMachine.Action {
        notifier.tell(.reloading)
        checkAllSources = true
        rest = nil
        if let reloaded = context.loadLocalFeeds(config) {
            local = reloaded
            feeds = FeedSet.assemble(local: local, config: config).all
            console.out("prefetch daemon: reloaded \(local.count) feed\(local.count == 1 ? "" : "s")\n")
        } else {
            console.err("prefetch daemon: reload failed; keeping the previous feeds\n")
        }
        let action = machine.handle(.reloaded(at: settings.now()))
        if let signalled = deliverSignals() { return signalled }
        return action
    }

    /// Idle until `until`, verifying the cache first when that is due. The sleep ends at a
    /// signal, at a change of the readings that unblocks what the last pass left waiting, or
    /// when the timer fires.
    mutating func sleep(until: Instant) -> DaemonStateMachine.Action {
        // Idle time: the cache is re-hashed every verify_every (SPEC §6), never instead of due work.
        if until.nanoseconds(since: settings.now()) >= 30_000_000_000, signals.received == nil,
           verificationIsDue(session.state, every: config.verifyEvery, now: settings.now()) {
            notifier.tell(.verifying)
            verify(until: until)
            if let signalled = deliverSignals() { return signalled }
            notifier.tell(.idleAgain)
        }
        // The watchdog, when there is one, is pinged from here while idle: the sleep
        // ends when a ping is due (and only then; without one, nothing wakes it).
        let left = Double(until.nanoseconds(since: settings.now())) / 1e9
        let wait = min(left, DaemonCommand.clockLook, notifier.untilPing ?? .infinity)
        let signalled = signals.wait(seconds: wait) ? deliverSignals() : nil
        alive()
        if let signalled { return signalled }
        if signals.takeNudge(), let wake = self.wake, wake.unblocks(settings.assumptions.applied(to: monitor.snapshot())) {
            return machine.handle(.conditionsChanged(at: settings.now()))
        }
        return machine.handle(.timerFired(at: settings.now()))
    }

    /// The daemon's own verification in idle time. It yields to work that comes due (at
    /// `until`), and the next idle time goes on from where it stopped: a large cache is
    /// verified in pieces.
    private func verify(until: Instant) {
        let cursor = (try? session.state.verificationCursor()) ?? 0
        let outcome = Verification.run(feeds, cache: session.cache, state: session.state, now: settings.now(), settings: settings,
                                       console: console, json: false, from: cursor,
                                       stopRequested: { stopRequested() || settings.now() >= until }, alive: alive)
        do {
            try session.state.recordVerificationCursor(outcome.stoppedAt)
            if !outcome.stopped { try session.state.recordVerification(at: settings.now()) }
        } catch {
            console.err("prefetch: error: cannot record state: \(error)\n")
        }
    }

    /// SIGTERM or SIGINT: the pass paused its transfers resumably; says so and exits 0.
    func stop(_ signal: DaemonStateMachine.Signal) -> ExitCode {
        notifier.tell(.stopping)
        // Partial data is said to be kept only when a resumable partial was (SPEC §7).
        let kept = PartialSweep.kept(feeds, state: session.state, cache: session.cache, bootID: settings.bootID)
        console.out("prefetch daemon: stopped (\(signal == .interrupt ? "SIGINT" : "SIGTERM"))\(PartialSweep.keptNote(kept))\n")
        return .success
    }
}

/// Whether the daemon's own verification is due: never done, or `every` ago.
private func verificationIsDue(_ state: StateStore, every: TimeSpan, now: Instant) -> Bool {
    guard let last = try? state.lastVerification() else { return true }  // never verified (or unreadable: try)
    return now >= last + every
}

extension DaemonStateMachine.Signal {
    init(_ number: Int32) {
        switch number {
        case SIGINT: self = .interrupt
        case SIGHUP: self = .hangup
        case SIGUSR1: self = .runNow
        default: self = .terminate
        }
    }
}
