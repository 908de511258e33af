import Foundation

/// What the daemon tells systemd (SPEC §6, sd_notify(3)), decided without a socket or a
/// clock: events in, the datagram to send out (nil: nothing). `SystemdNotifier` feeds it and
/// sends what it returns.
///
/// - `READY=1` once the config and feeds are loaded — before the cache lock, which another
///   writer may hold for an hour: the daemon is up, and says `STATUS=waiting for the cache
///   lock` meanwhile.
/// - `STATUS=` one line: what the pass is transferring (at most every `statusInterval` while
///   the figures change, at once when the set of files does), and between passes the next
///   wake-up and why (`DaemonWakeup`) and what the last pass did. The same line is never sent
///   twice in a row.
/// - `STOPPING=1` once, when a stop signal was seen.
/// - `WATCHDOG=1` every half of the watchdog's timeout, on any event that comes when one is
///   due. Liveness is what calls in: the transfer loop, the lock wait, the sleep and the
///   verification each say `alive` as they go, so a stuck one is not vouched for.
struct DaemonNotifications: Sendable {
    enum Event: Sendable {
        /// Config and feeds loaded.
        case loaded(feeds: Int)
        /// Another writer holds the cache lock.
        case waitingForLock
        case passStarted
        /// A transfer event of the running pass.
        case transfer(RunEvent)
        /// The pass ended; the next wake-up and why (`DaemonWakeup.Why.text`), and an error of
        /// the pass that the status keeps saying until a pass without it (the metrics file
        /// could not be written).
        case passEnded(nextWakeup: Instant?, why: String? = nil, error: String? = nil)
        /// Idle again after verifying: the last pass's line once more.
        case idleAgain
        case reloading
        case verifying
        case stopping
        /// Nothing new; the caller is alive (a watchdog ping when one is due).
        case alive
    }

    /// While transfers run, the figures are sent again at most this often.
    static let statusInterval: UInt64 = 5_000_000_000

    /// Half the watchdog's timeout, in nanoseconds; nil without a watchdog.
    let pingInterval: UInt64?
    private let clock: ZoneClock
    private var lastPing: UInt64?
    private var lastStatus: String?
    private var lastStatusAt: UInt64?
    private var stopping = false
    private var pass = PassFigures()
    private var nextWakeup: Instant?
    private var nextWhy: String?
    private var passError: String?
    /// The files of the last transfer line sent, to tell a new set from new figures.
    private var lastTransferring: [ResourceKey] = []

    private struct PassFigures: Sendable {
        var placed = 0, fresh = 0, failed = 0, paused = 0, held = 0
        var transferring: [TransferProgress] = []
    }

    /// `watchdogMicroseconds`: `WATCHDOG_USEC` as it applies to this process; `clock`: the
    /// zone wake-up times are shown in.
    init(watchdogMicroseconds: UInt64?, clock: ZoneClock) {
        pingInterval = watchdogMicroseconds.map { max(1, $0 * 1000 / 2) }
        self.clock = clock
    }

    /// The datagram for `event`, at `monotonic` nanoseconds (a clock no one sets: intervals only).
    mutating func handle(_ event: Event, monotonic: UInt64) -> String? {
        var lines: [String] = []
        switch event {
        case .loaded(let feeds):
            lines.append("READY=1")
            lines += status("loaded \(feeds) feed\(feeds == 1 ? "" : "s")", at: monotonic)
        case .waitingForLock:
            lines += status("waiting for the cache lock", at: monotonic)
        case .passStarted:
            pass = PassFigures()
            lastTransferring = []
            lines += status("running a pass", at: monotonic)
        case .transfer(let runEvent):
            lines += transfer(runEvent, at: monotonic)
        case .passEnded(let next, let why, let error):
            nextWakeup = next
            nextWhy = why
            passError = error
            lines += status(idleLine, at: monotonic)
        case .idleAgain:
            lines += status(idleLine, at: monotonic)
        case .reloading:
            lines += status("reloading the feeds", at: monotonic)
        case .verifying:
            lines += status("verifying the cache", at: monotonic)
        case .stopping:
            if !stopping {
                stopping = true
                lines.append("STOPPING=1")
                lines += status("stopping: pausing transfers resumably", at: monotonic)
            }
        case .alive:
            break
        }
        if let pingInterval, lastPing.map({ monotonic &- $0 >= pingInterval }) ?? true {
            lastPing = monotonic
            lines.append("WATCHDOG=1")
        }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }

    /// Seconds until the next watchdog ping is due (0 when it is); nil without a watchdog.
    func untilPing(monotonic: UInt64) -> Double? {
        guard let pingInterval else { return nil }
        guard let lastPing else { return 0 }
        let due = lastPing &+ pingInterval
        return due <= monotonic ? 0 : Double(due - monotonic) / 1e9
    }

    /// `STATUS=text`, unless that is what systemd shows already; after a stop, only the stop's.
    private mutating func status(_ text: String, at monotonic: UInt64) -> [String] {
        guard text != lastStatus else { return [] }
        if stopping && !text.hasPrefix("stopping") { return [] }
        lastStatus = text
        lastStatusAt = monotonic
        return ["STATUS=" + text]
    }

    private mutating func transfer(_ event: RunEvent, at monotonic: UInt64) -> [String] {
        switch event {
        case .placed, .placedFromCache, .placedByDelta: pass.placed += 1
        case .fresh: pass.fresh += 1
        case .paused: pass.paused += 1
        case .failed(_, _, _, let origin): if origin == nil { pass.failed += 1 }
        case .held(_, _, _, let resources): pass.held += resources
        case .progress(let transfers): pass.transferring = transfers
        case .started, .retrying, .heldWithOrigin, .stateError, .nextURL, .removedForRoom, .sourceMismatch, .deltaNotUsed: return []
        }
        switch event {  // one that ended leaves the line at once, not at the next progress
        case .placed(let key, _, _, _, _, _), .fresh(let key), .paused(let key, _, _, _), .failed(let key, _, _, _):
            pass.transferring.removeAll { $0.key == key }
        default: break
        }
        let keys = pass.transferring.map(\.key)
        let newSet = keys != lastTransferring
        let due = lastStatusAt.map { monotonic &- $0 >= Self.statusInterval } ?? true
        guard newSet || due else { return [] }
        lastTransferring = keys
        return status(Self.passLine(pass.transferring, placed: pass.placed, fresh: pass.fresh, failed: pass.failed), at: monotonic)
    }

    private var idleLine: String {
        Self.idleLine(next: nextWakeup, why: nextWhy, placed: pass.placed, fresh: pass.fresh, failed: pass.failed, paused: pass.paused,
                      held: pass.held, clock: clock) + (passError.map { " · error: " + $0 } ?? "")
    }

    /// `transferring 3: lobby/intro.mp4 225MiB of 700MiB (32%), 4MiB/s, ETA 2m; lobby/a.png connecting; 1 more · 2 placed, 0 fresh, 0 failed`
    static func passLine(_ transferring: [TransferProgress], placed: Int, fresh: Int, failed: Int) -> String {
        let tally = "\(placed) placed, \(fresh) fresh, \(failed) failed"
        guard !transferring.isEmpty else { return "running a pass: " + tally }
        var files = transferring.prefix(2).map { "\($0.key.feed)/\($0.key.path) " + RunReporter.figures($0) }
        if transferring.count > 2 { files.append("\(transferring.count - 2) more") }
        return "transferring \(transferring.count): " + files.joined(separator: "; ") + " · " + tally
    }

    /// `idle, next wake-up Mon 2026-11-30 02:40:04 +01:00 (release of lobby) · last pass: 2 placed, 1 fresh, 0 failed, 0 paused`:
    /// the why right after the time (the line's end is the last pass's, and an error's).
    static func idleLine(next: Instant?, why: String? = nil, placed: Int, fresh: Int, failed: Int, paused: Int, held: Int,
                         clock: ZoneClock) -> String {
        let wake = DaemonWakeup.line(at: next, why: why, clock: clock)
        var tally = "\(placed) placed, \(fresh) fresh, \(failed) failed, \(paused) paused"
        if held > 0 { tally += ", \(held) held" }
        return "idle, \(wake) · last pass: \(tally)"
    }
}
