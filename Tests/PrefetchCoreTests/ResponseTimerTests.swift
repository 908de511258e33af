import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §5, §7: the head must be whole within `response_timeout` of the request's send, and
/// `stall_timeout` counts only from the head's end — without a network or a clock: the
/// timer is told the time, as the engine's loop would, in steps of 50 ms to 1 s.
@Suite struct ResponseTimerTests {
    /// Drives a timer from 0 to `until` seconds in `step`s; `state(t)` says what the loop
    /// sees at t. Returns the first verdict other than `.goOn`, with its time.
    static func drive(_ timer: inout ResponseTimer, until: Double, step: Double = 0.05,
                      _ state: (Double) -> (sent: Bool, head: Bool, bytes: UInt64, held: Bool)) -> (ResponseTimer.Verdict, Double)? {
        var t = 0.0
        while t <= until {
            let s = state(t)
            let verdict = timer.check(now: 1000 + t, sent: s.sent, headComplete: s.head, bytes: s.bytes, held: s.held)
            if verdict != .goOn { return (verdict, t) }
            t += step
        }
        return nil
    }

    @Test(arguments: [0.05, 0.2, 1.0])
    func theHeadTimesOutFromTheSendNotBefore(step: Double) {
        // Sent at 5 s (the connect took that long: connect_timeout's business), no head: times out at 5 + 3 s.
        var timer = ResponseTimer(responseTimeout: 3, stallTimeout: 60)
        let end = Self.drive(&timer, until: 30, step: step) { t in (t >= 5, false, 0, false) }
        #expect(end?.0 == .headTimedOut)
        #expect(end.map { $0.1 >= 8 - 1e-9 && $0.1 < 8 + step + 1e-9 } == true, "\(String(describing: end))")
    }

    @Test func aRequestNeverSentNeverTimesOut() {
        var timer = ResponseTimer(responseTimeout: 1, stallTimeout: 1)
        #expect(Self.drive(&timer, until: 20) { _ in (false, false, 0, false) } == nil)
        #expect(timer.awaitsSend)
    }

    /// A head that takes longer than `stall_timeout` but less than `response_timeout` is
    /// waited for; the stall clock starts at its end.
    @Test func aSlowHeadIsNoStall() {
        var timer = ResponseTimer(responseTimeout: 120, stallTimeout: 2)
        // The head takes 60 s, then 2 KiB/s: fine for as long as it lasts.
        let end = Self.drive(&timer, until: 100, step: 0.25) { t in (true, t >= 60, t < 60 ? 0 : UInt64((t - 60) * 2048), false) }
        #expect(end == nil, "\(String(describing: end))")
    }

    @Test(arguments: [0, 1, 300, 1000])
    func aSlowBodyStallsAfterStallTimeout(rate: Int) {
        var timer = ResponseTimer(responseTimeout: 3, stallTimeout: 2)
        // Head whole at 1 s, then `rate` bytes a second (under 1 KiB/s).
        let end = Self.drive(&timer, until: 30) { t in (true, t >= 1, t < 1 ? 0 : UInt64((t - 1) * Double(rate)), false) }
        #expect(end?.0 == .stalled)
        #expect(end.map { $0.1 >= 3 - 1e-9 && $0.1 <= 3.6 } == true, "\(String(describing: end))")
    }

    /// A body that goes quiet after a fast start stalls within `stall_timeout` and a quarter
    /// of it after its last byte (the window's granularity).
    @Test func aBodyThatGoesQuietStallsSoonAfter() {
        var timer = ResponseTimer(responseTimeout: 3, stallTimeout: 4)
        let end = Self.drive(&timer, until: 60) { t in (true, true, UInt64(min(t, 10) * 1_000_000), false) }
        #expect(end?.0 == .stalled)
        #expect(end.map { $0.1 >= 14 - 1e-9 && $0.1 <= 15.1 } == true, "\(String(describing: end))")
    }

    @Test func aFastBodyNeverStalls() {
        var timer = ResponseTimer(responseTimeout: 3, stallTimeout: 2)
        #expect(Self.drive(&timer, until: 60) { t in (true, true, UInt64(t * 1100), false) } == nil)
    }

    /// prefetch's own holds (its rate, its budget, its record) are not the server's stall:
    /// the window starts again after each.
    @Test func aHoldOfItsOwnIsNoStall() {
        var timer = ResponseTimer(responseTimeout: 3, stallTimeout: 2)
        // Held 1.5 s of every 2 s, 3 KiB in the half second between: 750 B/s on average.
        let end = Self.drive(&timer, until: 60) { t in
            let phase = t.truncatingRemainder(dividingBy: 2)
            return (true, true, UInt64(t / 2) * 3072 + (phase >= 1.5 ? UInt64((phase - 1.5) * 6144) : 0), phase < 1.5)
        }
        #expect(end == nil, "\(String(describing: end))")
    }

    /// The next request of a redirect chain starts both clocks again.
    @Test func aRestartStartsTheClocksAgain() {
        var timer = ResponseTimer(responseTimeout: 3, stallTimeout: 2)
        #expect(timer.check(now: 0, sent: true, headComplete: false, bytes: 0, held: false) == .goOn)
        #expect(timer.check(now: 2.9, sent: true, headComplete: false, bytes: 0, held: false) == .goOn)
        timer.restart()
        #expect(timer.awaitsSend)
        #expect(timer.check(now: 3.5, sent: true, headComplete: false, bytes: 0, held: false) == .goOn)
        #expect(timer.check(now: 6.4, sent: true, headComplete: false, bytes: 0, held: false) == .goOn)
        #expect(timer.check(now: 6.5, sent: true, headComplete: false, bytes: 0, held: false) == .headTimedOut)
    }

    /// Seeded random lives (`PREFETCH_TIMER_SEED`): whatever the steps, a verdict is never
    /// early — a head timeout only `responseTimeout` after the send was seen, a stall only
    /// when the body's own rate over the last `stallTimeout` (or a little more) was under the
    /// minimum — and a body at 2 KiB/s or more never stalls.
    @Test func randomLivesNeverEndEarly() {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_TIMER_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        print("randomLivesNeverEndEarly: PREFETCH_TIMER_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        for life in 0..<2_000 {
            let response = Double(1 + random.next(below: 10)), stall = Double(1 + random.next(below: 10))
            var timer = ResponseTimer(responseTimeout: response, stallTimeout: stall)
            let sendAt = Double(random.next(below: 5)), headAt = sendAt + Double(random.next(below: 15))
            let fast = random.next(below: 2) == 0
            var t = 0.0, bytes: UInt64 = 0
            var history: [(Double, UInt64)] = []
            while t < 60 {
                t += Double(1 + random.next(below: 20)) / 20
                if t > headAt { bytes += fast ? 2150 + random.next(below: 4096) : random.next(below: 1500) }
                history.append((t, bytes))
                let verdict = timer.check(now: t, sent: t >= sendAt, headComplete: t >= headAt, bytes: bytes, held: false)
                if verdict == .headTimedOut {
                    #expect(t >= sendAt + response - 1e-9 && t < headAt, "life \(life): head timed out at \(t), sent \(sendAt), head \(headAt)")
                    break
                }
                if verdict == .stalled {
                    #expect(!fast, "life \(life): a fast body stalled at \(t)")
                    #expect(t >= headAt + stall - 1e-9, "life \(life): stalled at \(t), \(stall) s after a head at \(headAt)")
                    break
                }
            }
        }
    }
}
