import Foundation
import Glibc
import Testing
@testable import PrefetchCore

/// SPEC §5's partial-trust rule and FAULTS 2 through the real binary: within one boot the
/// bytes on disk are trusted whole, after a reboot (`PREFETCH_BOOT_ID` changed) only the
/// fsynced offset; the record is committed before the partial holds 1 MiB; the writer only
/// appends in order. Real `kill -9`s against the fault-injecting origin.
@Suite struct PartialTrustTests {
    static let boot = ["PREFETCH_BOOT_ID": "boot-1"]
    static let rebooted = ["PREFETCH_BOOT_ID": "boot-2"]

    /// A partial recorded in this boot with no fsynced offset yet (killed in its first
    /// seconds) resumes at the file's length: nothing the kernel accepted is thrown away.
    @Test func inTheSameBootThePartialIsTrustedWhole() throws {
        let s = try FaultHarness()
        let body = FaultTests.bytes(2_000_000, seed: 600)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"v1\""))
        try s.plant("a.bin", bytes: Array(body[0..<1_500_000]), synced: 0, validators: Validators(etag: "\"v1\""), bootID: "boot-1")
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let result = try s.runJSON(environment: Self.boot)
        #expect(result.status == 0, "\(result.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").map { $0.header("range") } == ["bytes=1500000-"])
        #expect(s.digest("t/a.bin") == FaultTests.sha(body))
    }

    /// After a reboot the bytes past the fsynced offset may be garbage (never written back):
    /// the partial is cut back to that offset and resumed from there.
    @Test func afterARebootOnlyTheFsyncedOffsetIsTrusted() throws {
        let s = try FaultHarness()
        let body = FaultTests.bytes(2_000_000, seed: 601)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"v1\""))
        try s.plant("a.bin", bytes: Array(body[0..<800_000]) + FaultTests.bytes(400_000, seed: 602), synced: 800_000,
                    validators: Validators(etag: "\"v1\""), bootID: "boot-1")
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let result = try s.runJSON(environment: Self.rebooted)
        #expect(result.status == 0, "\(result.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").map { $0.header("range") } == ["bytes=800000-"])
        #expect(s.digest("t/a.bin") == FaultTests.sha(body))
    }

    /// Another file under the partial's name (another inode) is not that partial.
    @Test func anotherInodeIsDiscarded() throws {
        let s = try FaultHarness()
        let body = FaultTests.bytes(600_000, seed: 603)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"v1\""))
        try s.plant("a.bin", bytes: FaultTests.bytes(300_000, seed: 604), synced: 300_000, validators: Validators(etag: "\"v1\""),
                    bootID: "boot-1", inode: 1)
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let result = try s.runJSON(environment: Self.boot)
        #expect(result.status == 0, "\(result.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").map { $0.header("range") } == [nil])
        #expect(s.digest("t/a.bin") == FaultTests.sha(body))
    }

    // MARK: Real kills

    /// `prefetch run --json` started in the background.
    static func start(_ s: FaultHarness, environment: [String: String]) throws -> Process {
        let process = Process()
        process.executableURL = BinaryRunner.executable
        process.arguments = ["run", "--json", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
        process.currentDirectoryURL = s.dir.url
        process.environment = ["PATH": "/usr/bin:/bin", "TZ": "UTC", "HOME": s.dir.url.path]
            .merging(BinaryRunner.inherited) { $1 }.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Waits until the partial holds at least `bytes` (or `seconds` pass); its size then.
    static func waitForPartial(_ s: FaultHarness, _ path: String, atLeast bytes: Int, seconds: Double = 20) -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let size = s.partialSize(path), size >= bytes { return size }
            usleep(5_000)
        }
        return s.partialSize(path) ?? 0
    }

    /// Whether the partial on disk is a prefix of `body` (the writer appends in order, so a
    /// kill at any moment leaves one).
    static func partialIsAPrefix(_ s: FaultHarness, _ path: String, of body: [UInt8]) -> (Bool, Int) {
        guard let data = try? Data(contentsOf: s.partialURL(path)) else { return (true, 0) }
        guard data.count <= body.count else { return (false, data.count) }
        let same = data.withUnsafeBytes { file in body.withUnsafeBytes { memcmp(file.baseAddress!, $0.baseAddress!, data.count) == 0 } }
        return (data.isEmpty || same, data.count)
    }

    /// FAULTS 2: `kill -9` in the first seconds of a transfer — before any periodic fsync —
    /// loses nothing: the next run in the same boot resumes at the partial's length. After a
    /// reboot (another boot id) the same partial is trusted only to its fsynced offset.
    @Test(arguments: [false, true]) func aKillInTheFirstSecondsKeepsTheBytes(rebootBetween: Bool) throws {
        let s = try FaultHarness()
        let body = FaultTests.bytes(12 << 20, seed: 605)
        s.origin.serve("/big.bin", OriginResource(body, etag: "\"big\""))
        s.origin.inject("/big.bin", [.trickle(bytesPerSecond: 4 << 20)])
        try s.feed("resources:\n  - url: ORIGIN/big.bin\n")
        let run = try Self.start(s, environment: Self.boot)
        let size = Self.waitForPartial(s, "big.bin", atLeast: 3 << 20 / 2)
        kill(run.processIdentifier, SIGKILL)
        run.waitUntilExit()
        let (prefix, length) = Self.partialIsAPrefix(s, "big.bin", of: body)
        #expect(prefix && length >= size, "the partial after kill -9 is not a prefix of the body (\(length) bytes)")
        let record = try #require(s.state()?.resources[ResourceKey(feed: "t", path: "big.bin")]?.partial,
                                  "no record was committed although the partial held \(length) bytes")
        #expect(record.bootID == "boot-1" && record.inode != nil)
        let again = try s.runJSON(environment: rebootBetween ? Self.rebooted : Self.boot)
        #expect(again.status == 0, "\(again.diagnostics)")
        let resumedAt = rebootBetween ? Int(record.syncedOffset) : length
        #expect(s.origin.requests(to: "/big.bin").last?.header("range") == (resumedAt > 0 ? "bytes=\(resumedAt)-" : nil),
                "resumed at \(s.origin.requests(to: "/big.bin").last?.header("range") ?? "0"), on disk \(length), fsynced \(record.syncedOffset)")
        #expect(s.digest("t/big.bin") == FaultTests.sha(body))
    }

    /// Seeded kills at random moments of one transfer: after each, the partial is a prefix of
    /// the body, and the next run resumes exactly at its length; in all, the origin sends the
    /// file once plus what was in flight at each kill (libcurl's and prefetch's buffers, at
    /// most 1 MiB each, and the socket's).
    @Test func killsAtRandomMomentsLoseOnlyWhatWasInFlight() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_KILL_SEED"] ?? "") ?? 61
        var random = SplitMix64(seed: seed)
        let s = try FaultHarness()
        let body = FaultTests.bytes(24 << 20, seed: 606)
        let kills = 8
        s.origin.serve("/big.bin", OriginResource(body, etag: "\"big\""))
        s.origin.inject("/big.bin", Array(repeating: .trickle(bytesPerSecond: 16 << 20), count: kills))
        try s.feed("resources:\n  - url: ORIGIN/big.bin\n")
        var onDisk = 0
        var recorded = false
        for kill in 0..<kills {
            let run = try Self.start(s, environment: Self.boot)
            let step = 256 * 1024 + Int(random.next() % UInt64(2 << 20))
            _ = Self.waitForPartial(s, "big.bin", atLeast: onDisk + step)
            Glibc.kill(run.processIdentifier, SIGKILL)
            run.waitUntilExit()
            let (prefix, length) = Self.partialIsAPrefix(s, "big.bin", of: body)
            #expect(prefix, "seed \(seed), kill \(kill + 1): the partial (\(length) bytes) is not a prefix of the body")
            #expect(length >= onDisk, "seed \(seed), kill \(kill + 1): the partial shrank from \(onDisk) to \(length)")
            if kill > 0 {
                // A partial state.db knows of resumes at its whole length (same boot); one it does
                // not know of (killed before its record's commit) is started again from zero.
                let range = s.origin.requests(to: "/big.bin").last?.header("range")
                let expected = onDisk > 0 && recorded ? "bytes=\(onDisk)-" : nil
                #expect(range == expected, "seed \(seed), kill \(kill + 1): resumed with \(range ?? "no range"), \(onDisk) on disk, recorded: \(recorded)")
            }
            onDisk = length
            // SPEC §5: the record is committed before the partial holds more than 1 MiB.
            recorded = FaultTests.snapshot(s.cache)?.resources[ResourceKey(feed: "t", path: "big.bin")]?.partial != nil
            #expect(recorded || length <= 1 << 20, "seed \(seed), kill \(kill + 1): \(length) bytes on disk and no record")
        }
        let last = try s.runJSON(environment: Self.boot)
        #expect(last.status == 0, "\(last.diagnostics)")
        #expect(s.origin.requests(to: "/big.bin").last?.header("range") == "bytes=\(onDisk)-")
        #expect(s.digest("t/big.bin") == FaultTests.sha(body))
        let sent = s.origin.bytesSent(to: "/big.bin")
        let inFlight = sent - body.count
        #expect(inFlight <= kills * (3 << 20), "seed \(seed): the origin sent \(sent) bytes for \(body.count) over \(kills) kills")
        print("killsAtRandomMoments: seed \(seed), \(kills) kills, origin sent \(sent) bytes for \(body.count) (\(String(format: "%.3f", Double(sent) / Double(body.count)))×)")
    }
}
