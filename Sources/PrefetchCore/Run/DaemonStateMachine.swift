/// The daemon's life (SPEC §2), in the shape of swift-service-lifecycle's `ServiceGroup`: a
/// private state, events in, one action out, and nothing else — no clock, no signals, no
/// I/O — so it is tested event by event (`DaemonStateMachineTests`). `DaemonCommand` feeds it:
/// a pass's end with the next wake-up (`DaemonWakeup`), a timer that fired, a signal.
///
///     idle ─started→ running ─passEnded→ sleeping(until) ─timer at until→ running …
///                    running ─SIGTERM/SIGINT→ stopping ─passEnded→ stopped
///     sleeping ─SIGUSR1→ running      sleeping ─SIGHUP→ reloading ─reloaded→ running
///     sleeping ─conditionsChanged→ running
///
/// A pass (planning and transferring) runs to its end; signals that arrive meanwhile are told
/// to the machine as they are, and it acts on them when the pass ends: SIGTERM stops (the
/// pass itself pauses its transfers resumably), SIGHUP reloads, SIGUSR1 runs again at once.
/// When the next wake-up is, and why, is `DaemonWakeup`'s to decide; this machine only clamps
/// it: a sleep lasts at most `idleWakeup`, never less than `minimumSleep` (none given: the
/// longest). The driver may wake it early to look at the clock again (a clock set
/// forward), which runs a pass only once the moment has come. A probe's change that
/// unblocks waiting work (`ConditionWake`, decided by the driver) ends a sleep at once.
struct DaemonStateMachine: Sendable {
    enum Signal: Sendable, Equatable {
        case terminate, interrupt, hangup, runNow
    }

    enum Event: Sendable, Equatable {
        case started(at: Instant)
        /// A pass ended; `nextWakeup`: `DaemonWakeup.next`'s instant (nil: nothing scheduled).
        case passEnded(nextWakeup: Instant?, at: Instant)
        /// The feeds were read again (a broken reload keeps the previous ones).
        case reloaded(at: Instant)
        /// The timer fired (at the sleep's end, or early, to look at the clock again).
        case timerFired(at: Instant)
        case signal(Signal, at: Instant)
        /// A reading changed so that work the last pass left waiting may start (SPEC §7).
        case conditionsChanged(at: Instant)
    }

    enum Action: Sendable, Equatable {
        case runPass
        case reloadFeeds
        case sleep(until: Instant)
        /// Exit 0: the signal that stopped it.
        case stop(Signal)
        /// Nothing to do now (the event is remembered).
        case none
    }

    private enum State: Sendable, Equatable {
        case idle
        /// A pass is running; what to do when it ends.
        case running(then: Then)
        case reloading
        case sleeping(until: Instant)
        case stopped(Signal)
    }

    private struct Then: Sendable, Equatable {
        var stop: Signal?
        var reload = false
        var again = false
    }

    private var state = State.idle

    /// The daemon plans at least this often, whatever the plan says: conditions (network,
    /// power, free space) are probed again, and a clock that was set is noticed.
    static let idleWakeup: Int64 = 60
    /// At least this long between passes: a plan that says "now" again (work left that the
    /// pass could not do, such as a full disk) does not make a busy loop.
    static let minimumSleep: Int64 = 1

    var isStopped: Bool { if case .stopped = state { true } else { false } }

    mutating func handle(_ event: Event) -> Action {
        switch (state, event) {
        case (.stopped(let signal), _):
            return .stop(signal)

        case (.idle, .started):
            state = .running(then: Then())
            return .runPass
        case (.idle, .signal(let signal, _)) where signal == .terminate || signal == .interrupt:
            state = .stopped(signal)
            return .stop(signal)
        case (.idle, _):
            return .none

        case (.running(var then), .signal(let signal, _)):
            switch signal {
            case .terminate, .interrupt: then.stop = then.stop ?? signal
            case .hangup: then.reload = true
            case .runNow: then.again = true
            }
            state = .running(then: then)
            return .none
        case (.running(let then), .passEnded(let next, let now)):
            if let signal = then.stop {
                state = .stopped(signal)
                return .stop(signal)
            }
            if then.reload {
                state = .reloading
                return .reloadFeeds
            }
            if then.again {
                state = .running(then: Then())
                return .runPass
            }
            // The clamp: the wake-up itself is decided before (`DaemonWakeup`).
            let earliest = now.advanced(bySeconds: Self.minimumSleep)
            let latest = now.advanced(bySeconds: Self.idleWakeup)
            let until = min(max(next ?? latest, earliest), latest)
            state = .sleeping(until: until)
            return .sleep(until: until)
        case (.running, _):
            return .none

        case (.reloading, .reloaded):
            state = .running(then: Then())
            return .runPass
        case (.reloading, .signal(let signal, _)) where signal == .terminate || signal == .interrupt:
            state = .stopped(signal)
            return .stop(signal)
        case (.reloading, _):
            return .none

        case (.sleeping(let until), .timerFired(let now)):
            if now >= until {
                state = .running(then: Then())
                return .runPass
            }
            return .sleep(until: until)
        case (.sleeping, .conditionsChanged):
            state = .running(then: Then())
            return .runPass
        case (.sleeping, .signal(let signal, _)):
            switch signal {
            case .terminate, .interrupt:
                state = .stopped(signal)
                return .stop(signal)
            case .hangup:
                state = .reloading
                return .reloadFeeds
            case .runNow:
                state = .running(then: Then())
                return .runPass
            }
        case (.sleeping(let until), _):
            return .sleep(until: until)
        }
    }
}
