import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6: `prefetch verify` finds a same-size corrupted file that every revalidation kept
/// (a 304 says nothing of the bytes on an SD card), removes it and forgets its state, so the
/// next run fetches it again.
@Suite(.serialized) struct VerifyTests {
    static let a = FaultTests.bytes(300_000, seed: 800), b = FaultTests.bytes(5000, seed: 801)

    static func scenario() throws -> FaultHarness {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(a, etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(b, etag: "\"b\""))
        try s.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n")
        let run = try s.runJSON()
        try #require(run.status == 0, "\(run.diagnostics)")
        return s
    }

    @Test func aCorruptedFileIsFoundRemovedAndFetchedAgain() throws {
        let s = try Self.scenario()
        #expect(try s.run(["verify"]).stdout.contains("verify: 2 verified, 0 mismatched (removed), 0 unverified"))
        // Bit rot: same size, one byte changed, mtime kept.
        let url = s.cache.appendingPathComponent("t/a.bin")
        var rotten = Self.a
        rotten[123_456] ^= 0x40
        let handle = try FileHandle(forWritingTo: url)
        try handle.seek(toOffset: 0)
        try handle.write(contentsOf: Data(rotten))
        try handle.close()
        // A revalidation keeps it: the origin says 304.
        #expect(try s.runJSON(offset: "+2h").status == 0)
        #expect(s.cached("t/a.bin") == rotten)
        let verify = try s.run(["verify"])
        #expect(verify.status == 1, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("mismatch  t/a.bin  expected \(FaultTests.sha(Self.a)) found \(FaultTests.sha(rotten))"), "\(verify.stdout)")
        #expect(!s.exists("t/a.bin") && s.resourceState("a.bin") == nil, "the file or its state was kept")
        let index = try ReaderIndexTests.index(s)
        #expect(index["complete"] as? Bool == false && ReaderIndexTests.missing(index)["a.bin"] != nil, "\(index)")
        let before = s.origin.requests(to: "/a.bin").count
        #expect(try s.runJSON(offset: "+2h").status == 0)
        #expect(s.cached("t/a.bin") == Self.a && s.origin.requests(to: "/a.bin").count == before + 1)
        let again = try s.run(["verify", "--json"])
        #expect(again.status == 0)
        #expect(again.events.filter { $0["type"] as? String == "verified" }.count == 2, "\(again.stdout)")
        #expect(again.events.last?["type"] as? String == "summary" && again.events.last?["mismatched"] as? Int == 0)
    }

    /// The daemon verifies by itself in its idle time, every `verify_every`: a file corrupted
    /// while it sleeps is found, removed, and fetched again by the next pass.
    @Test func theDaemonVerifiesInItsIdleTime() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        try s.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n")
        let config = try s.dir.write("config.yaml", "verify_every: 1s\n")
        let (process, log) = try s.startDaemon(config: config)
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        func logText() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        #expect(RunCommandTests.waitFor { logText().contains("verify: 1 verified") }, "\(logText())")
        var rotten = Self.a
        rotten[7] ^= 1
        try Data(rotten).write(to: s.cache.appendingPathComponent("t/a.bin.tmp"))
        #expect(rename(s.cache.appendingPathComponent("t/a.bin.tmp").path, s.cache.appendingPathComponent("t/a.bin").path) == 0)
        // The next idle look (at most clockLook, 15 s, away) verifies again: 1 s has passed.
        var found = false
        for _ in 0..<250 where !found { usleep(100_000); found = logText().contains("mismatch  t/a.bin") }
        #expect(found, "\(logText())")
        kill(process.processIdentifier, SIGUSR1)  // run now rather than at the next minute
        #expect(RunCommandTests.waitFor { s.cached("t/a.bin") == Self.a }, "\(logText())")
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// A file with no recorded hash (state.db rebuilt) is `unverified` and left alone; a
    /// feed that does not exist is a usage error; a held lock is 75 with the daemon hint.
    @Test func unverifiedFilesUnknownFeedsAndTheLock() throws {
        let s = try Self.scenario()
        for name in ["state.db", "state.db-wal", "state.db-shm"] { unlink(s.cache.appendingPathComponent(".prefetch/" + name).path) }
        let verify = try s.run(["verify", "--json"])
        #expect(verify.status == 0 && verify.events.filter { $0["type"] as? String == "unverified" }.count == 2, "\(verify.stdout)")
        #expect(s.cached("t/a.bin") == Self.a)
        let unknown = try s.run(["verify", "--feed", "nope"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown feed 'nope'"))
        let lock = open(s.cache.appendingPathComponent(".prefetch/lock").path, O_RDWR | O_CREAT, 0o644)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        let locked = try s.run(["verify"])
        #expect(locked.status == 75 && locked.stderr.contains("it verifies by itself"), "\(locked.stderr)")
    }
}
