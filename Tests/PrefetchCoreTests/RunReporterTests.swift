import Foundation
import Testing
@testable import PrefetchCore

/// What `run` prints: plain log lines, JSON lines, and the periodic progress lines of a log.
@Suite struct RunReporterTests {
    /// stdout and stderr as written, and a clock the test moves.
    final class Capture: @unchecked Sendable {
        private let lock = NSLock()
        private var outText = "", errText = ""
        var seconds: Double = 0

        var console: Console {
            Console(out: { [self] text in lock.withLock { outText += text } },
                    err: { [self] text in lock.withLock { errText += text } })
        }
        var out: String { lock.withLock { outText } }
        var err: String { lock.withLock { errText } }
        var lines: [String] { out.split(separator: "\n").map(String.init) }
        func now() -> Date { Date(timeIntervalSince1970: 1_800_000_000 + seconds) }
    }

    static let big = ResourceKey(feed: "big", path: "media/big.bin")
    static let small = ResourceKey(feed: "big", path: "small.bin")
    static let mib: UInt64 = 1 << 20

    func reporter(_ mode: RunReporter.Mode, quiet: Bool = false, _ capture: Capture) -> RunReporter {
        RunReporter(mode: mode, quiet: quiet, console: capture.console, progressInterval: 60, now: capture.now)
    }

    /// After a resume the rate is of the bytes that moved, not of the whole file, and the line says
    /// where the transfer continued.
    @Test func aPlacedLineGivesTheRateOfTheBytesThatMovedAndWhereAResumeBegan() {
        let capture = Capture()
        let reporter = reporter(.plain, capture)
        reporter.handle(.placed(Self.big, bytes: 512 * Self.mib, received: 287 * Self.mib, resumedAt: 225 * Self.mib, seconds: 2.8))
        reporter.handle(.placed(Self.small, bytes: 68, received: 68, resumedAt: 0, seconds: 0.01))
        reporter.flush()
        #expect(capture.lines == [
            "placed  big/media/big.bin  512MiB in 2.8s (102.5MiB/s, resumed at 225MiB)",
            "placed  big/small.bin  68B in 0.0s",
        ])
    }

    @Test func aPlacedEventInJSONCarriesTheBytesTransferredAndTheResumeOffset() throws {
        let capture = Capture()
        let reporter = reporter(.json, capture)
        reporter.handle(.placed(Self.big, bytes: 1000, received: 600, resumedAt: 400, seconds: 0.5))
        reporter.flush()
        let line = try #require(capture.lines.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "placed" && object["bytes"] as? Int == 1000)
        #expect(object["transferred"] as? Int == 600 && object["resumed_at"] as? Int == 400)
    }

    /// A log (the journal, a file) hears about running transfers once a minute, not only when
    /// they end: one line per transfer and one for all of them.
    @Test func plainOutputGetsTheRunningTransfersOncePerInterval() {
        let capture = Capture()
        let reporter = reporter(.plain, capture)
        let running = [
            TransferProgress(key: Self.big, bytes: 128 * Self.mib, total: 512 * Self.mib, rate: Double(64 * Self.mib)),
            TransferProgress(key: Self.small, bytes: 3 * Self.mib, total: nil, rate: Double(Self.mib)),
        ]
        for second in [0.25, 30, 59.75] {
            capture.seconds = second
            reporter.handle(.progress(running))
        }
        #expect(capture.out.isEmpty)
        capture.seconds = 60
        reporter.handle(.progress(running))
        reporter.flush()
        #expect(capture.lines == [
            "running big/media/big.bin  128MiB of 512MiB (25%), 64MiB/s, ETA 6s",
            "running big/small.bin  3MiB, 1MiB/s",
            "running all 2 active  131MiB, 65MiB/s",
        ])
        capture.seconds = 119
        reporter.handle(.progress(running))
        reporter.flush()
        #expect(capture.lines.count == 3)
        capture.seconds = 120.5
        reporter.handle(.progress(Array(running.prefix(1))))
        reporter.flush()
        #expect(capture.lines.count == 4)
        #expect(capture.lines.last == "running big/media/big.bin  128MiB of 512MiB (25%), 64MiB/s, ETA 6s")
    }

    /// `--quiet`, JSON (which has its own progress objects) and a terminal (which has bars) get
    /// no such lines.
    @Test func runningLinesAreForPlainOutputOnly() {
        let running = [TransferProgress(key: Self.big, bytes: 1, total: 2, rate: 1)]
        for (mode, quiet) in [(RunReporter.Mode.plain, true), (.json, false), (.terminal, false)] {
            let capture = Capture()
            let reporter = reporter(mode, quiet: quiet, capture)
            capture.seconds = 600
            reporter.handle(.progress(running))
            reporter.flush()
            #expect(!capture.out.contains("running"), "\(mode) quiet \(quiet): \(capture.out)")
        }
    }

    /// A transfer that has no answer yet (connecting, or a retry waiting for the server) says
    /// so instead of "0B"; "active" counts only those receiving.
    @Test func aTransferWaitingForItsAnswerIsNotShownMovingNothing() {
        let capture = Capture()
        let reporter = reporter(.plain, capture)
        let running = [
            TransferProgress(key: Self.big, bytes: 128 * Self.mib, total: 512 * Self.mib, rate: Double(64 * Self.mib)),
            TransferProgress(key: Self.small, bytes: 0, total: nil, rate: 0, receiving: false),
            TransferProgress(key: ResourceKey(feed: "big", path: "resumed.bin"), bytes: 5 * Self.mib, total: nil, rate: 0, receiving: false),
        ]
        capture.seconds = 60
        reporter.handle(.progress(running))
        reporter.flush()
        #expect(capture.lines == [
            "running big/media/big.bin  128MiB of 512MiB (25%), 64MiB/s, ETA 6s",
            "running big/small.bin  connecting",
            "running big/resumed.bin  connecting (resuming at 5MiB)",
            "running all 1 active, 2 connecting  128MiB of 512MiB (25%), 64MiB/s, ETA 6s",
        ])
    }
    /// SPEC §7: a held origin's request says `held` (not "again in"), the summary counts
    /// held resources apart from failed ones and says what was pruned; a failure whose
    /// origin's hold an answer ended before the run did is not left unsaid (no `held` line
    /// speaks for it), it comes before the summary.
    @Test func heldLinesAndTheSummary() {
        let capture = Capture()
        let reporter = reporter(.plain, capture)
        let until = Instant(seconds: 1_800_000_061)
        reporter.handle(.heldWithOrigin(Self.small, message: "HTTP 503", origin: "https://e.com:443", until: until, after: 61))
        reporter.handle(.failed(Self.big, message: "HTTP 503", retryAt: until, origin: "https://e.com:443"))
        reporter.handle(.failed(ResourceKey(feed: "big", path: "other.bin"), message: "HTTP 503", retryAt: until, origin: "https://f.com:443"))
        reporter.handle(.held(origin: "https://f.com:443", reason: "HTTP 503", until: until, resources: 4))
        var summary = EngineSummary()
        summary.placed = 2; summary.fresh = 1; summary.failed = 2; summary.failedHeld = 1; summary.held = 4; summary.pruned = 3
        reporter.summary(summary, seconds: 1.2, exit: .failure, notDue: 0)
        let line = capture.lines.first ?? ""
        #expect(line.hasPrefix("held    big/small.bin  HTTP 503; https://e.com:443 held until ") && !line.contains("again in"), "\(line)")
        #expect(capture.lines.last == "run: 2 placed, 1 fresh (304), 1 failed, 4 held, 3 pruned, 0 paused; 0B in 1.2s", "\(capture.out)")
        let errors = capture.err.split(separator: "\n").map(String.init)
        #expect(errors.count == 2 && errors[0].hasPrefix("failed  https://f.com:443  HTTP 503; 4 resources held until "), "\(capture.err)")
        #expect(errors[1].hasPrefix("failed  big/media/big.bin  HTTP 503; retry after "), "the cleared hold's failure: \(capture.err)")

        let json = Capture()
        let jsonReporter = self.reporter(.json, json)
        jsonReporter.handle(.heldWithOrigin(Self.small, message: "HTTP 503", origin: "https://e.com:443", until: until, after: 61))
        jsonReporter.summary(summary, seconds: 1, exit: .failure, notDue: 0)
        let objects = json.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.first?["type"] as? String == "failed" && objects.first?["held"] as? Bool == true
                && objects.first?["until"] as? String == "2027-01-15T08:01:01+00:00" && objects.first?["held_s"] as? Int == 61
                && objects.first?["retry_in_s"] == nil && objects.first?["final"] as? Bool == false, "\(json.out)")
        #expect(objects.last?["failed"] as? Int == 1 && objects.last?["held"] as? Int == 4 && objects.last?["pruned"] as? Int == 3, "\(json.out)")
    }
}
