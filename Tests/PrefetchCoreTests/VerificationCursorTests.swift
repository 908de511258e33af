import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// The daemon's verification yields to work that comes due and goes on, next idle time, from
/// where it stopped (a position over the feeds' resources): a large cache is verified in
/// pieces, each file once per round, never starting over.
@Suite struct VerificationCursorTests {
    @Test func aStoppedVerificationGoesOnFromWhereItStopped() throws {
        let folder = try TemporaryFolder()
        let cache = try CacheFolder.open(folder.path + "/cache").get()
        let state = try StateStore.openForWriting(cache.statePath)
        let names = (0..<5).map { "f\($0).bin" }
        var yaml = "resources:\n"
        for name in names { yaml += "  - url: https://e.com/\(name)\n" }
        let feed = PlannerTests.feed(yaml)
        for (index, name) in names.enumerated() {
            let bytes = Array("content \(index)".utf8)
            _ = try folder.write("cache/f/\(name)", Data(bytes))
            try state.recordValidated(ResourceKey(feed: "f", path: name), urlHash: feed.resources[index].url.identityHash,
                                      validators: Validators(etag: "\"\(index)\""), length: UInt64(bytes.count),
                                      sha256: bytes.withUnsafeBytes { SHA256.hexDigest($0) }, placed: true, at: Instant(seconds: 1))
        }
        let settings = Settings(config: Config(), clockOffset: .zero, at: nil, transferThreads: nil, machineID: nil, bootID: "test",
                                assumptions: Assumptions(), faults: .none, environment: [:])
        let console = Console(out: { _ in }, err: { _ in })
        // The first piece: work comes due after two files.
        var asked = 0
        let first = Verification.run([feed], cache: cache, state: state, now: Instant(seconds: 2), settings: settings, console: console,
                                     json: false, stopRequested: { asked += 1; return asked > 2 })
        #expect(first.verified == 2 && first.stoppedAt == 2, "\(first)")
        try state.recordVerificationCursor(first.stoppedAt)
        // The next idle time goes on from there and finishes the round.
        let cursor = try #require(try state.verificationCursor())
        let second = Verification.run([feed], cache: cache, state: state, now: Instant(seconds: 3), settings: settings, console: console,
                                      json: false, from: cursor)
        #expect(second.verified == 3 && !second.stopped, "\(second)")
        try state.recordVerificationCursor(second.stoppedAt)
        #expect(try state.verificationCursor() == nil, "a finished round leaves no cursor")
    }
}
