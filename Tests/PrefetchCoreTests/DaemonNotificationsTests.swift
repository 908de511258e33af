import Foundation
import Testing
@testable import PrefetchCore

/// What the daemon tells systemd, event by event, with the monotonic clock given (SPEC §6):
/// READY first, STATUS lines that say what runs and when it next wakes, STOPPING once, and
/// WATCHDOG at half the timeout — no sooner, and whenever something alive calls in.
@Suite struct DaemonNotificationsTests {
    static let berlin = ZoneClock(TimeZone(identifier: "Europe/Berlin")!)
    static let second: UInt64 = 1_000_000_000
    static let big = ResourceKey(feed: "lobby", path: "loop/intro.mp4")
    static let poster = ResourceKey(feed: "lobby", path: "poster.png")
    static let mib: UInt64 = 1 << 20

    /// Feeds `events` at the given seconds; the datagrams, each with its second.
    static func play(_ events: [(Double, DaemonNotifications.Event)], watchdog: UInt64? = nil) -> [(Double, String)] {
        var notifications = DaemonNotifications(watchdogMicroseconds: watchdog, clock: berlin)
        return events.compactMap { at, event in
            notifications.handle(event, monotonic: UInt64(at * 1e9) + 1_000 * second).map { (at, $0) }
        }
    }

    static func progress(_ key: ResourceKey, _ bytes: UInt64, of total: UInt64?, receiving: Bool = true) -> TransferProgress {
        TransferProgress(key: key, bytes: bytes, total: total, rate: receiving ? Double(4 * mib) : 0, receiving: receiving)
    }

    @Test func readyComesFirstThenWhatThePassDoesThenWhenItWakes() {
        let next = Instant(seconds: 1_796_002_804)  // Mon 2026-11-30 02:40:04 +01:00
        let sent = Self.play([
            (0, .loaded(feeds: 3)),
            (0.1, .passStarted),
            (0.2, .transfer(.started(Self.big, url: "https://cdn/intro.mp4", total: 700 * Self.mib, resumeAt: 0))),
            (0.3, .transfer(.progress([Self.progress(Self.big, 0, of: 700 * Self.mib, receiving: false)]))),
            (0.6, .transfer(.progress([Self.progress(Self.big, 225 * Self.mib, of: 700 * Self.mib)]))),  // same file, too soon
            (6.0, .transfer(.progress([Self.progress(Self.big, 300 * Self.mib, of: 700 * Self.mib),
                                       Self.progress(Self.poster, 1 * Self.mib, of: 2 * Self.mib)]))),
            (7.0, .transfer(.placed(Self.poster, bytes: 2 * Self.mib, received: 2 * Self.mib, resumedAt: 0, seconds: 1))),
            (9.0, .transfer(.failed(Self.big, message: "HTTP 404", retryAt: nil))),
            (9.5, .passEnded(nextWakeup: next)),
        ]).map(\.1)
        #expect(sent == [
            "READY=1\nSTATUS=loaded 3 feeds",
            "STATUS=running a pass",
            "STATUS=transferring 1: lobby/loop/intro.mp4 connecting · 0 placed, 0 fresh, 0 failed",
            "STATUS=transferring 2: lobby/loop/intro.mp4 300MiB of 700MiB (42%), 4MiB/s, ETA 1m40s; lobby/poster.png 1MiB of 2MiB (50%), 4MiB/s, ETA 0s · 0 placed, 0 fresh, 0 failed",
            "STATUS=transferring 1: lobby/loop/intro.mp4 300MiB of 700MiB (42%), 4MiB/s, ETA 1m40s · 1 placed, 0 fresh, 0 failed",
            "STATUS=running a pass: 1 placed, 0 fresh, 1 failed",
            "STATUS=idle, next wake-up Mon 2026-11-30 02:40:04 +01:00 · last pass: 1 placed, 0 fresh, 1 failed, 0 paused",
        ])
    }

    /// Figures that change are sent again every 5 s, not at every quarter-second tick.
    @Test func progressOfTheSameFilesIsSentEveryFiveSeconds() {
        var events: [(Double, DaemonNotifications.Event)] = [(0, .passStarted)]
        for tick in 1...80 {  // 20 s of progress ticks
            events.append((Double(tick) * 0.25, .transfer(.progress([Self.progress(Self.big, UInt64(tick) * Self.mib, of: 700 * Self.mib)]))))
        }
        let times = Self.play(events).map(\.0)
        #expect(times == [0, 0.25, 5.25, 10.25, 15.25])
    }

    @Test func theLockWaitIsSaidAndTheSameLineIsNotSentTwice() {
        let sent = Self.play([
            (0, .loaded(feeds: 1)), (0.01, .waitingForLock), (0.5, .alive), (1, .waitingForLock),
            (30, .passStarted), (30.1, .passEnded(nextWakeup: nil)), (40, .verifying), (45, .idleAgain),
            (90, .passStarted), (90.1, .passEnded(nextWakeup: nil)),
        ]).map(\.1)
        let idle = "STATUS=idle, nothing scheduled, conditions re-checked every minute · last pass: 0 placed, 0 fresh, 0 failed, 0 paused"
        #expect(sent == ["READY=1\nSTATUS=loaded 1 feed", "STATUS=waiting for the cache lock", "STATUS=running a pass", idle,
                         "STATUS=verifying the cache", idle, "STATUS=running a pass", idle])
    }

    /// SPEC §6: a metrics file that cannot be written is an error of the pass, which the
    /// status says after every pass that had it (and after a verification in between), and
    /// no longer once a pass wrote the file.
    @Test func aPassErrorStaysInTheStatusUntilAPassWithoutIt() {
        let error = "cannot write the metrics file /var/lib/prometheus/node-exporter/prefetch.prom: Permission denied"
        let sent = Self.play([
            (0, .passStarted), (0.1, .passEnded(nextWakeup: nil, error: error)), (10, .verifying), (15, .idleAgain),
            (60, .passStarted), (60.1, .passEnded(nextWakeup: nil, error: error)),
            (120, .passStarted), (120.1, .passEnded(nextWakeup: nil)),
        ]).map(\.1)
        let idle = "STATUS=idle, nothing scheduled, conditions re-checked every minute · last pass: 0 placed, 0 fresh, 0 failed, 0 paused"
        #expect(sent == ["STATUS=running a pass", idle + " · error: " + error, "STATUS=verifying the cache", idle + " · error: " + error,
                         "STATUS=running a pass", idle + " · error: " + error, "STATUS=running a pass", idle])
    }

    /// STOPPING=1 once, however often a stop is seen; after it, nothing but the stop's line.
    @Test func stoppingIsSaidOnceAndHasTheLastWord() {
        let sent = Self.play([
            (0, .passStarted), (1, .stopping), (1.1, .stopping),
            (1.2, .transfer(.paused(Self.big, reason: "stopped", partial: .kept(Self.mib)))), (1.3, .stopping),
        ]).map(\.1)
        #expect(sent == ["STATUS=running a pass", "STOPPING=1\nSTATUS=stopping: pausing transfers resumably"])
    }

    /// WATCHDOG_USEC=2 s: a ping at the first event, then one whenever an event comes a second
    /// or more after the last ping — never sooner, whatever the event.
    @Test func theWatchdogIsPingedAtHalfItsTimeout() {
        var events: [(Double, DaemonNotifications.Event)] = [(0, .loaded(feeds: 1))]
        for tick in 1...40 { events.append((Double(tick) * 0.1, .alive)) }  // the transfer loop, every 100 ms
        events.append((4.05, .passStarted))
        events.append((7.5, .alive))  // a long gap: pinged at once when it ends
        events.append((7.9, .alive))
        let pings = Self.play(events, watchdog: 2_000_000).filter { $0.1.contains("WATCHDOG=1") }.map(\.0)
        #expect(pings.map { ($0 * 10).rounded() / 10 } == [0, 1, 2, 3, 4, 7.5])
        // The first datagram carries READY and the ping together.
        #expect(Self.play([(0, .loaded(feeds: 1))], watchdog: 2_000_000).map(\.1) == ["READY=1\nSTATUS=loaded 1 feed\nWATCHDOG=1"])
    }

    @Test func withoutAWatchdogAliveSendsNothing() {
        let sent = Self.play((0..<100).map { (Double($0) * 0.5, .alive) })
        #expect(sent.isEmpty)
    }

    /// How long an idle sleep may last before the next ping is due.
    @Test func theSleepEndsWhenAPingIsDue() {
        var notifications = DaemonNotifications(watchdogMicroseconds: 3_000_000, clock: Self.berlin)
        #expect(notifications.untilPing(monotonic: 10 * Self.second) == 0)  // none sent yet
        _ = notifications.handle(.alive, monotonic: 10 * Self.second)
        #expect(notifications.untilPing(monotonic: 10 * Self.second) == 1.5)
        #expect(notifications.untilPing(monotonic: 11 * Self.second) == 0.5)
        #expect(notifications.untilPing(monotonic: 12 * Self.second) == 0)
        #expect(DaemonNotifications(watchdogMicroseconds: nil, clock: Self.berlin).untilPing(monotonic: 0) == nil)
    }

    @Test func aHeldOriginAndMoreThanTwoTransfersInOneLine() {
        let transfers = (1...5).map { Self.progress(ResourceKey(feed: "f", path: "\($0).bin"), 0, of: nil, receiving: false) }
        #expect(DaemonNotifications.passLine(transfers, placed: 0, fresh: 2, failed: 0)
            == "transferring 5: f/1.bin connecting; f/2.bin connecting; 3 more · 0 placed, 2 fresh, 0 failed")
        #expect(DaemonNotifications.idleLine(next: Instant(seconds: 1_796_002_804), placed: 0, fresh: 0, failed: 1, paused: 0, held: 40, clock: Self.berlin)
            == "idle, next wake-up Mon 2026-11-30 02:40:04 +01:00 · last pass: 0 placed, 0 fresh, 1 failed, 0 paused, 40 held")
    }

    /// The why goes right after the time (issue 36), before the last pass and an error; with
    /// nothing scheduled the line is as it was; the same time and why is not sent again.
    @Test func theIdleLineSaysWhy() {
        let next = Instant(seconds: 1_796_002_804)  // Mon 2026-11-30 02:40:04 +01:00
        #expect(DaemonNotifications.idleLine(next: next, why: "release of lobby", placed: 1, fresh: 0, failed: 1, paused: 0, held: 0, clock: Self.berlin)
            == "idle, next wake-up Mon 2026-11-30 02:40:04 +01:00 (release of lobby) · last pass: 1 placed, 0 fresh, 1 failed, 0 paused")
        #expect(DaemonNotifications.idleLine(next: nil, why: "release of lobby", placed: 0, fresh: 0, failed: 0, paused: 0, held: 0, clock: Self.berlin)
            == "idle, nothing scheduled, conditions re-checked every minute · last pass: 0 placed, 0 fresh, 0 failed, 0 paused")
        let sent = Self.play([
            (0, .passStarted), (0.1, .passEnded(nextWakeup: next, why: "release of lobby", error: "cannot write the metrics file x: EACCES")),
            (60, .passEnded(nextWakeup: next, why: "release of lobby", error: "cannot write the metrics file x: EACCES")),
            (120, .passEnded(nextWakeup: next, why: "window of lobby opens")),
        ]).map(\.1)
        let idle = "STATUS=idle, next wake-up Mon 2026-11-30 02:40:04 +01:00"
        #expect(sent == ["STATUS=running a pass",
                         idle + " (release of lobby) · last pass: 0 placed, 0 fresh, 0 failed, 0 paused · error: cannot write the metrics file x: EACCES",
                         idle + " (window of lobby opens) · last pass: 0 placed, 0 fresh, 0 failed, 0 paused"])
    }
}
