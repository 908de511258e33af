import Foundation
import Testing
@testable import PrefetchCore

/// The daemon's life, event by event, with time given, not waited for.
@Suite struct DaemonStateMachineTests {
    static let t0: Instant = 1_800_000_000

    @Test func itRunsAPassThenSleepsUntilTheNextWakeup() {
        var machine = DaemonStateMachine()
        #expect(machine.handle(.started(at: Self.t0)) == .runPass)
        #expect(machine.handle(.passEnded(nextWakeup: Self.t0.advanced(bySeconds: 30), at: Self.t0.advanced(bySeconds: 2)))
            == .sleep(until: Self.t0.advanced(bySeconds: 30)))
        // Woken early (the driver looks at the clock at least once a minute): back to sleep.
        #expect(machine.handle(.timerFired(at: Self.t0.advanced(bySeconds: 10))) == .sleep(until: Self.t0.advanced(bySeconds: 30)))
        #expect(machine.handle(.timerFired(at: Self.t0.advanced(bySeconds: 30))) == .runPass)
    }

    /// However far the next release, the daemon plans again within a minute (conditions are
    /// probed again, a set clock is noticed); with nothing scheduled, the same.
    @Test func aSleepLastsAtMostAMinute() {
        var machine = DaemonStateMachine()
        _ = machine.handle(.started(at: Self.t0))
        #expect(machine.handle(.passEnded(nextWakeup: Self.t0.advanced(bySeconds: 86_400), at: Self.t0))
            == .sleep(until: Self.t0.advanced(bySeconds: 60)))
        _ = machine.handle(.timerFired(at: Self.t0.advanced(bySeconds: 60)))
        #expect(machine.handle(.passEnded(nextWakeup: nil, at: Self.t0.advanced(bySeconds: 61)))
            == .sleep(until: Self.t0.advanced(bySeconds: 121)))
    }

    /// A plan that says "now" again, or a wake-up in the past (the clock was set forward
    /// during the pass), still sleeps a second: no busy loop.
    @Test func aWakeupInThePastStillSleepsASecond() {
        var machine = DaemonStateMachine()
        _ = machine.handle(.started(at: Self.t0))
        #expect(machine.handle(.passEnded(nextWakeup: Self.t0.advanced(bySeconds: -100), at: Self.t0.advanced(bySeconds: 5)))
            == .sleep(until: Self.t0.advanced(bySeconds: 6)))
    }

    @Test func aSignalDuringAPassIsActedOnWhenItEnds() {
        var machine = DaemonStateMachine()
        _ = machine.handle(.started(at: Self.t0))
        #expect(machine.handle(.signal(.hangup, at: Self.t0.advanced(bySeconds: 1))) == .none)
        #expect(machine.handle(.signal(.runNow, at: Self.t0.advanced(bySeconds: 1))) == .none)
        #expect(machine.handle(.passEnded(nextWakeup: nil, at: Self.t0.advanced(bySeconds: 2))) == .reloadFeeds)
        #expect(machine.handle(.reloaded(at: Self.t0.advanced(bySeconds: 2))) == .runPass)
        #expect(machine.handle(.signal(.terminate, at: Self.t0.advanced(bySeconds: 3))) == .none)
        #expect(machine.handle(.signal(.interrupt, at: Self.t0.advanced(bySeconds: 3))) == .none)
        #expect(machine.handle(.passEnded(nextWakeup: nil, at: Self.t0.advanced(bySeconds: 4))) == .stop(.terminate))
        #expect(machine.isStopped)
        #expect(machine.handle(.signal(.runNow, at: Self.t0.advanced(bySeconds: 5))) == .stop(.terminate))
    }

    /// A reading that unblocks waiting work ends a sleep at once (SPEC §7: within 5 s, not
    /// at the next minute's re-check); during a pass or a reload it changes nothing (the
    /// pass's end looks again).
    @Test func aConditionChangeEndsASleepAtOnce() {
        var machine = DaemonStateMachine()
        _ = machine.handle(.started(at: Self.t0))
        #expect(machine.handle(.conditionsChanged(at: Self.t0)) == .none)
        #expect(machine.handle(.passEnded(nextWakeup: nil, at: Self.t0)) == .sleep(until: Self.t0.advanced(bySeconds: 60)))
        #expect(machine.handle(.conditionsChanged(at: Self.t0.advanced(bySeconds: 3))) == .runPass)
        _ = machine.handle(.signal(.hangup, at: Self.t0.advanced(bySeconds: 4)))
        #expect(machine.handle(.passEnded(nextWakeup: nil, at: Self.t0.advanced(bySeconds: 5))) == .reloadFeeds)
        #expect(machine.handle(.conditionsChanged(at: Self.t0.advanced(bySeconds: 5))) == .none)
        #expect(machine.handle(.reloaded(at: Self.t0.advanced(bySeconds: 5))) == .runPass)
    }

    @Test func aSignalWhileAsleepIsActedOnAtOnce() {
        for (signal, expected) in [(DaemonStateMachine.Signal.terminate, DaemonStateMachine.Action.stop(.terminate)),
                                   (.interrupt, .stop(.interrupt)), (.hangup, .reloadFeeds), (.runNow, .runPass)] {
            var machine = DaemonStateMachine()
            _ = machine.handle(.started(at: Self.t0))
            _ = machine.handle(.passEnded(nextWakeup: nil, at: Self.t0))
            #expect(machine.handle(.signal(signal, at: Self.t0.advanced(bySeconds: 1))) == expected, "\(signal)")
        }
    }

    /// Seeded random lives: the driver does what each action says (a pass ends some time
    /// after it began, a reload ends, a sleep is woken by its timer, early or on time) while
    /// signals arrive at any moment. Checked against what SPEC §2 promises, not against a
    /// second copy of the machine.
    @Test func randomLivesKeepThePromises() {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_DAEMON_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        var random = SplitMix64(seed: seed)
        print("randomLivesKeepThePromises: PREFETCH_DAEMON_SEED=\(seed)")
        for life in 0..<2_000 {
            var machine = DaemonStateMachine()
            var now = Self.t0
            var doing = Doing.nothing
            var passes: [Instant] = []
            var stopAsked: DaemonStateMachine.Signal?
            var reloadAsked = false, runAsked = false
            let context = "seed \(seed) life \(life)"

            func apply(_ event: DaemonStateMachine.Event) {
                let action = machine.handle(event)
                let was = doing
                if case .passEnded = event { doing = .nothing }
                if let stop = stopAsked {
                    // A stop asked for is carried out when no pass runs: at once, or when the pass ends.
                    switch (was, event) {
                    case (.pass, .passEnded), (.sleeping, _), (.reloading, _), (.stopped, _):
                        #expect(action == .stop(stop), "\(context): \(event) → \(action)")
                    default:
                        #expect(action == .none, "\(context): \(event) → \(action)")
                    }
                }
                switch action {
                case .runPass:
                    #expect(doing != .pass, "\(context): a second pass while one runs")
                    if case .sleeping(let until) = was, case .timerFired = event {
                        #expect(now >= until, "\(context): ran before its wake-up")
                    }
                    if let last = passes.last, case .timerFired = event {
                        #expect(now >= last.advanced(bySeconds: DaemonStateMachine.minimumSleep), "\(context): busy loop")
                    }
                    if reloadAsked, case .passEnded = event { Issue.record("\(context): reload asked for and not done") }
                    passes.append(now)
                    runAsked = false
                    doing = .pass
                case .reloadFeeds:
                    #expect(doing != .pass, "\(context): reload during a pass")
                    reloadAsked = false
                    runAsked = false  // the reload is followed by a pass
                    doing = .reloading
                case .sleep(let until):
                    #expect(!reloadAsked && !runAsked, "\(context): slept with work asked for")
                    #expect(until >= now.advanced(bySeconds: DaemonStateMachine.minimumSleep) || {
                        if case .sleeping(let before) = was { return until == before } else { return false }
                    }(), "\(context): slept too short")
                    #expect(until <= now.advanced(bySeconds: DaemonStateMachine.idleWakeup), "\(context): slept too long")
                    doing = .sleeping(until)
                case .stop(let signal):
                    #expect(signal == stopAsked, "\(context): stopped by \(signal), asked \(String(describing: stopAsked))")
                    doing = .stopped
                case .none:
                    if case .sleeping = was, stopAsked == nil { Issue.record("\(context): a sleeping daemon did nothing") }
                }
            }

            apply(.started(at: now))
            for _ in 0..<40 {
                if doing == .stopped { break }
                now = now.advanced(byNanoseconds: Int64(random.next(below: 90_000_000_000)))
                if random.next(below: 4) == 0 {
                    let signal = [DaemonStateMachine.Signal.terminate, .interrupt, .hangup, .runNow][Int(random.next(below: 4))]
                    switch signal {
                    case .terminate, .interrupt: stopAsked = stopAsked ?? signal
                    case .hangup: if doing == .pass { reloadAsked = true }
                    case .runNow: if doing == .pass { runAsked = true }
                    }
                    apply(.signal(signal, at: now))
                    continue
                }
                switch doing {
                case .pass:
                    let next: Instant? = random.next(below: 5) == 0 ? nil
                        : now.advanced(bySeconds: Int64(random.next(below: 200)) - 50)
                    apply(.passEnded(nextWakeup: next, at: now))
                case .reloading:
                    apply(.reloaded(at: now))
                case .sleeping:
                    apply(.timerFired(at: now))
                case .nothing, .stopped:
                    break
                }
            }
            if stopAsked != nil, doing != .pass { #expect(doing == .stopped, "\(context): asked to stop, still \(doing)") }
        }
    }

    enum Doing: Equatable {
        case nothing, pass, reloading, sleeping(Instant), stopped
    }
}

extension SplitMix64 {
    /// A number in 0..<bound (bound > 0).
    mutating func next(below bound: UInt64) -> UInt64 { UInt64.random(in: 0..<bound, using: &self) }
}
