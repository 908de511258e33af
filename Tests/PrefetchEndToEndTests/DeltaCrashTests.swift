import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §9 "Resume", attacked: `kill -9` at seeded random moments of deltas (their control
/// files, their scans, their ranges), 30 times on a 2 MiB file that keeps changing: each
/// version placed is the one published, nothing else is ever seen at its path, and the
/// resumes fetch again at most what arrived after the partial's last fsync. The seed is
/// printed (`PREFETCH_TEST_SEED` replays it).
@Suite(.serialized) struct DeltaCrashTests {
    /// Ranged answers are sent at this rate, so that kills land inside them too.
    static let rate = 300_000

    @Test func killedDeltasResumeAndPlaceEachVersion() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_TEST_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        var random = Zsyncmake.SplitMix(seed)
        var current = FaultTests.bytes(2 << 20, seed: seed)
        var target = Zsyncmake.edited(current, seed: seed, edits: 40, editLength: 8_000, insertion: 100)
        let s = try DeltaTests.changed(current, target)
        // The cost of each delta, measured by the real zsync client at an origin of its own.
        let mirror = try TestOrigin()
        var needed = 0, version = 2
        func publish() throws {
            let control = try Zsyncmake.control(target, name: "img.bin")
            for origin in [s.origin, mirror] {
                origin.serve("/img.bin", OriginResource(target, etag: "\"v\(version)\""))
                origin.serve("/img.bin.zsync", OriginResource(control, etag: "\"z\(version)\""))
            }
            try s.feed(DeltaTests.entry(target))
            needed += try Self.zsyncFetches(mirror, old: current)
        }
        try publish()
        s.origin.inject("/img.bin", Array(repeating: .trickle(bytesPerSecond: Self.rate), count: 10_000))
        let sentBefore = s.origin.bytesSent(to: "/img.bin")
        var kills = 0, round = 0, placed = 0
        while kills < 30 {
            round += 1
            let asked = s.origin.requests(to: "/img.bin").count
            let (process, _) = try s.startRun()
            // Half the kills at any moment of the run (its control file, its scan), half inside its ranges.
            var delay = Double(random.next() % 1_500) / 1_000
            if round % 2 == 0 {
                let deadline = Date().addingTimeInterval(20)
                while s.origin.requests(to: "/img.bin").count == asked, process.isRunning, Date() < deadline { usleep(10_000) }
                delay = Double(random.next() % 800) / 1_000
            }
            Thread.sleep(forTimeInterval: delay)
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                kills += 1
            }
            process.waitUntilExit()
            // At the path: the version before or the one published, never anything else (SPEC §3).
            let now = s.cached("t/img.bin")
            #expect(now == current || now == target, "seed \(seed), round \(round) (\(delay) s): the file at its path is neither version")
            if now == target {  // placed: the next version is published
                placed += 1
                version += 1
                current = target
                target = Zsyncmake.edited(current, seed: seed &+ UInt64(version), edits: 40, editLength: 8_000, insertion: 100)
                try publish()
            }
        }
        let last = try s.runJSON()
        #expect(last.status == 0, "seed \(seed): \(last.diagnostics)")
        #expect(s.cached("t/img.bin") == target, "seed \(seed): the last version is placed")
        #expect(!last.events.contains { $0["type"] as? String == "delta" }, "seed \(seed): no fallback: \(last.stdout)")
        // What the resumes cost: the ranges each delta needed (as the zsync client fetched them),
        // plus for each kill at most what arrived after the last fsync (2 s at the ranges' rate)
        // and its requests' heads.
        let sent = s.origin.bytesSent(to: "/img.bin") - sentBefore
        let bound = needed + kills * (2 * Self.rate + 64 * 1024)
        #expect(sent <= bound, "seed \(seed): \(sent) bytes sent for the ranges over \(kills) kills; the bound is \(bound) (\(needed) needed)")
        #expect(s.partials.isEmpty, "seed \(seed): partials left: \(s.partials)")
        print("DeltaCrashTests: seed \(seed), \(kills) kills in \(round) runs, \(placed + 1) versions placed, \(sent) range bytes sent, "
              + "\(needed) fetched by the zsync client, bound \(bound)")
    }

    /// The bytes the real `zsync` client fetches to build `origin`'s file from `old` (its
    /// `fetched N` line): a delta's cost, measured by an independent client.
    static func zsyncFetches(_ origin: TestOrigin, old: [UInt8]) throws -> Int {
        let client = try TemporaryFolder()
        let seed = try client.write("seed.bin", Data(old))
        let said = try Zsyncmake.run(Zsyncmake.client, ["-i", seed, "-o", client.file("out.bin"), origin.url("/img.bin.zsync")],
                                     in: client.url, output: true)
        let match = try #require(said.firstMatch(of: /fetched (\d+)/), "zsync said: \(said)")
        return Int(match.1) ?? 0
    }
}
