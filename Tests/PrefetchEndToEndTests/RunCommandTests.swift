import Foundation
import Testing
import TestSupport
import PrefetchCore

/// `prefetch run`, `gc` and `status` through the real binary against a real nginx.
@Suite(.serialized) struct RunCommandTests {
    /// A folder with `www/` (served by nginx), `feeds/` and `cache/`.
    static func random(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
        var state = seed &* 0x9E3779B97F4A7C15
        return (0..<count).map { _ in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }

    static func sha(_ bytes: [UInt8]) -> String { SHA256.hex(SHA256.digest(bytes)) }

    /// Polls `condition` for up to 10 s.
    static func waitFor(_ condition: () -> Bool) -> Bool {
        for _ in 0..<100 { if condition() { return true }; Thread.sleep(forTimeInterval: 0.1) }
        return false
    }

    @Test func placesVerifiedFilesAtomicallyWithModes() throws {
        let big = Self.random(3_000_000)
        let setup = try NginxHarness(files: ["big.bin": big, "a/b/c.txt": Array("hello\n".utf8), "q.bin": Self.random(1000, seed: 2)])
        try setup.feed("""
        resources:
          - url: ORIGIN/big.bin
            sha256: \(Self.sha(big))
            size: 3000000
          - url: ORIGIN/a/b/c.txt
            path: deep/er/c.txt
          - url: ORIGIN/q.bin?sig=TOPSECRET
        """)
        let result = try setup.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(setup.cached("t/big.bin").map(Self.sha) == Self.sha(big))
        #expect(setup.cached("t/deep/er/c.txt").map(Self.sha) == Self.sha(Array("hello\n".utf8)))
        #expect(setup.cached("t/q.bin").map(Self.sha) == Self.sha(Self.random(1000, seed: 2)))
        #expect(setup.stat("t/big.bin").map { $0.st_mode & 0o777 } == 0o644)
        #expect(setup.stat("t/deep/er").map { $0.st_mode & 0o777 } == 0o755)
        #expect(setup.partials.isEmpty)
        #expect(!result.stdout.contains("TOPSECRET") && !result.stderr.contains("TOPSECRET"))
        #expect(result.stdout.contains("run: 3 placed, 0 fresh (304), 0 failed, 0 held, 0 pruned, 0 paused"))
        // Every request asked for the stored bytes, not a compressed form (FAULTS 15).
        #expect(setup.origin.log().allSatisfy { $0.contains("ae=[identity]") })
        // The plan now says fresh; state.db keeps no query value.
        let plan = try setup.run(["plan", "--json"])
        #expect(plan.stdout.components(separatedBy: "\"state\":\"fresh\"").count == 4)
        let db = try Data(contentsOf: setup.dir.url.appendingPathComponent("cache/.prefetch/state.db"))
        #expect(db.range(of: Data("TOPSECRET".utf8)) == nil)
    }

    @Test func revalidationKeepsTheFileUntouched() throws {
        let setup = try NginxHarness(files: ["a.bin": Self.random(50_000)])
        try setup.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n")
        #expect(try setup.run().status == 0)
        let before = try #require(setup.stat("t/a.bin"))
        // Two hours on, the copy is stale: revalidated with If-None-Match, 304, no body (FAULTS 10).
        let again = try setup.run(["run", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+2h"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains(#""type":"fresh","feed":"t","path":"a.bin""#))
        let after = try #require(setup.stat("t/a.bin"))
        #expect(after.st_ino == before.st_ino)
        #expect(after.st_mtim.tv_sec == before.st_mtim.tv_sec && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec)
        let last = try #require(setup.origin.log().last { $0.contains("/a.bin") })
        #expect(last.hasPrefix("304 GET /a.bin"), "\(setup.origin.log())")
        #expect(last.contains("inm=[\"") && last.hasSuffix("bytes=0"))
    }

    @Test func aChangedFileReplacesTheOldCopyOnlyWhenVerified() throws {
        let setup = try NginxHarness(files: ["a.bin": Self.random(10_000)])
        try setup.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n")
        #expect(try setup.run().status == 0)
        let newer = Self.random(12_000, seed: 9)
        try Data(newer).write(to: setup.www.appendingPathComponent("a.bin"))
        let result = try setup.run(environment: ["PREFETCH_CLOCK_OFFSET": "+2h"])
        #expect(result.status == 0)
        #expect(setup.cached("t/a.bin").map(Self.sha) == Self.sha(newer))
    }

    @Test func resumesAPartialWithRangeAndIfRange() throws {
        let body = Self.random(2_000_000, seed: 3)
        let setup = try NginxHarness(files: ["r.bin": body])
        try setup.feed("resources:\n  - url: ORIGIN/r.bin\n")
        // Learn nginx's ETag for the file, then plant a partial with 700,000 good bytes
        // (and 1,000 unsynced bytes past the recorded offset, as after a kill -9).
        let head = try BinaryRunner.run(["plan", "--json", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"], in: setup.dir.url)
        #expect(head.status == 0)
        let etag = try Self.etag(of: setup.origin.url("/r.bin"))
        try FileManager.default.createDirectory(at: setup.dir.url.appendingPathComponent("cache/.prefetch/partial"), withIntermediateDirectories: true)
        let store = try StateStore.openForWriting(setup.dir.url.path + "/cache/.prefetch/state.db")
        let url = try ResourceURL.parse(setup.origin.url("/r.bin"))
        try store.recordPartial(ResourceKey(feed: "t", path: "r.bin"), PartialState(
            urlHash: url.identityHash, validators: Validators(etag: etag), totalLength: 2_000_000, syncedOffset: 700_000, updatedAt: 0))
        let partial = setup.dir.url.appendingPathComponent("cache/.prefetch/partial/" + CacheFolder.partialName(feed: "t", path: "r.bin"))
        try Data(Array(body[0..<700_000]) + Self.random(1000, seed: 77)).write(to: partial)
        let result = try setup.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(setup.cached("t/r.bin").map(Self.sha) == Self.sha(body))
        let last = try #require(setup.origin.log().last)
        #expect(last.hasPrefix("206 GET /r.bin range=[bytes=700000-] if_range=[\(etag)]"))
        #expect(last.hasSuffix("bytes=1300000"))
    }

    @Test func aPartialOfAnOlderVersionRestartsCleanly() throws {
        let body = Self.random(300_000, seed: 4)
        let setup = try NginxHarness(files: ["r.bin": body])
        try setup.feed("resources:\n  - url: ORIGIN/r.bin\n")
        try FileManager.default.createDirectory(at: setup.dir.url.appendingPathComponent("cache/.prefetch/partial"), withIntermediateDirectories: true)
        let store = try StateStore.openForWriting(setup.dir.url.path + "/cache/.prefetch/state.db")
        let url = try ResourceURL.parse(setup.origin.url("/r.bin"))
        try store.recordPartial(ResourceKey(feed: "t", path: "r.bin"), PartialState(
            urlHash: url.identityHash, validators: Validators(etag: "\"old-version\""), totalLength: 300_000, syncedOffset: 1000, updatedAt: 0))
        try Data(Self.random(1000, seed: 99)).write(to: setup.dir.url.appendingPathComponent(
            "cache/.prefetch/partial/" + CacheFolder.partialName(feed: "t", path: "r.bin")))
        let result = try setup.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(setup.cached("t/r.bin").map(Self.sha) == Self.sha(body))  // If-Range did not match: a 200 restarted from zero (FAULTS 6)
        #expect(setup.origin.log().last?.hasPrefix("200 GET /r.bin range=[bytes=1000-] if_range=[\"old-version\"]") == true)
    }

    @Test func killNineMidTransferThenResume() throws {
        let body = Self.random(3_000_000, seed: 5)
        let setup = try NginxHarness(files: ["slow/k.bin": body])
        try setup.feed("resources:\n  - url: ORIGIN/slow/k.bin\n")
        let process = Process()
        process.executableURL = BinaryRunner.executable
        process.arguments = ["run", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
        process.currentDirectoryURL = setup.dir.url
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until an fsynced offset is recorded (every 2 s), then kill -9.
        var recorded: UInt64 = 0
        for _ in 0..<100 where recorded == 0 {
            Thread.sleep(forTimeInterval: 0.1)
            recorded = (try? StateStore.openReadOnly(setup.dir.url.path + "/cache/.prefetch/state.db")?.snapshot())?
                .flatMap { $0.resources[ResourceKey(feed: "t", path: "k.bin")]?.partial?.syncedOffset } ?? 0
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(recorded > 0)
        #expect(setup.cached("t/k.bin") == nil)  // never visible half-written
        // Only bytes already in the file are ever recorded (a large body is gathered in memory
        // before it is written): the partial holds at least the recorded offset, intact.
        let partial = setup.dir.url.appendingPathComponent("cache/.prefetch/partial/" + CacheFolder.partialName(feed: "t", path: "k.bin"))
        let onDisk = try [UInt8](Data(contentsOf: partial))
        #expect(UInt64(onDisk.count) >= recorded && onDisk.prefix(Int(recorded)) == body.prefix(Int(recorded)))
        let result = try setup.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(setup.cached("t/k.bin").map(Self.sha) == Self.sha(body))
        let resumed = try #require(setup.origin.log().last { $0.contains("/slow/k.bin") })
        #expect(resumed.hasPrefix("206 GET /slow/k.bin range=[bytes="))
    }

    @Test func sigtermPausesResumablyAndExitsZero() throws {
        let body = Self.random(3_000_000, seed: 6)
        let setup = try NginxHarness(files: ["slow/s.bin": body])
        try setup.feed("resources:\n  - url: ORIGIN/slow/s.bin\n")
        let (process, out) = try setup.startRun()
        // Stopped once body bytes are in the partial (a byte count, not a guess at timing).
        #expect(Self.waitFor { (setup.partialSize("s.bin") ?? 0) > 0 }, "no body bytes arrived")
        let stopAt = Date()
        process.terminate()  // SIGTERM
        process.waitUntilExit()
        #expect(Date().timeIntervalSince(stopAt) < 5)
        #expect(process.terminationStatus == 0)
        let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(lines.contains(#""type":"paused","feed":"t","path":"s.bin","reason":"stopped""#))
        #expect(setup.partials.count == 1)
        let result = try setup.run()
        #expect(result.status == 0)
        #expect(setup.cached("t/s.bin").map(Self.sha) == Self.sha(body))
        #expect(setup.origin.log().last { $0.contains("/slow/s.bin") }?.hasPrefix("206 GET /slow/s.bin range=[bytes=") == true)
    }

    /// With two transfer threads, SIGTERM pauses the transfers of both: each is recorded
    /// resumably, the run exits 0, and the next run resumes every one with a Range request.
    @Test func sigtermPausesTheTransfersOfEveryThread() throws {
        let bodies = (0..<4).map { Self.random(3_000_000, seed: 20 + UInt64($0)) }
        var files: [String: [UInt8]] = [:]
        var yaml = "limits: { concurrency: 4 }\nresources:\n"
        for (index, body) in bodies.enumerated() {
            files["slow/t\(index).bin"] = body
            yaml += "  - url: ORIGIN/slow/t\(index).bin\n"
        }
        let setup = try NginxHarness(files: files)
        try setup.feed(yaml)
        let (process, out) = try setup.startRun(environment: ["PREFETCH_TRANSFER_THREADS": "2"])
        #expect(Self.waitFor { (0..<4).allSatisfy { (setup.partialSize("t\($0).bin") ?? 0) > 0 } }, "not every transfer received bytes")
        process.terminate()  // SIGTERM
        let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(lines)")
        for index in 0..<4 {
            #expect(lines.contains(#""type":"paused","feed":"t","path":"t\#(index).bin","reason":"stopped""#), "\(lines)")
        }
        #expect(setup.partials.count == 4)
        let result = try setup.run(environment: ["PREFETCH_TRANSFER_THREADS": "2"])
        #expect(result.status == 0, "\(result.stderr)")
        for (index, body) in bodies.enumerated() {
            #expect(setup.cached("t/t\(index).bin").map(Self.sha) == Self.sha(body))
            #expect(setup.origin.log().last { $0.contains("/slow/t\(index).bin") }?.hasPrefix("206 GET /slow/t\(index).bin range=[bytes=") == true)
        }
        #expect(setup.partials.isEmpty)
    }

    @Test func aClosingWindowPausesTransfersResumably() throws {
        let body = Self.random(3_000_000, seed: 8)
        let setup = try NginxHarness(files: ["slow/w.bin": body])
        try setup.feed("timezone: UTC\nwindow: \"01:00-02:00\"\nresources:\n  - url: ORIGIN/slow/w.bin\n")
        // Rehearse tonight: the clock reads 01:59:57, so the window closes three seconds in.
        let target = Int64(4_102_451_997)  // 2100-01-01T01:59:57Z
        let offset = "+\(target - Int64(Date().timeIntervalSince1970))s"
        let result = try setup.run(["run", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": offset])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""type":"paused","feed":"t","path":"w.bin","reason":"window closed""#))
        #expect(setup.cached("t/w.bin") == nil)
        #expect(setup.partials.count == 1)
        // The next night the transfer resumes where it stopped.
        let next = "+\(Int64(4_102_534_810) - Int64(Date().timeIntervalSince1970))s"  // 2100-01-02T01:00:10Z
        let resumed = try setup.run(environment: ["PREFETCH_CLOCK_OFFSET": next])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(setup.cached("t/w.bin").map(Self.sha) == Self.sha(body))
        #expect(setup.origin.log().last { $0.contains("/slow/w.bin") }?.hasPrefix("206 GET /slow/w.bin range=[bytes=") == true)
    }

    @Test func theDaemonHoldsTheLockReloadsRunsNowAndStops() throws {
        let setup = try NginxHarness(files: ["one.bin": Self.random(100), "two.bin": Self.random(200, seed: 2)])
        try setup.feed("resources:\n  - url: ORIGIN/one.bin\n")
        let (process, log) = try setup.startDaemon()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(Self.waitFor { setup.cached("t/one.bin") != nil })
        // A run beside the daemon is refused with 75 and told about SIGUSR1.
        let beside = try setup.run()
        #expect(beside.status == 75 && beside.stderr.contains("SIGUSR1"))
        // SIGHUP reloads the feeds; SIGUSR1 runs now instead of at the next minute.
        try setup.feed("resources:\n  - url: ORIGIN/one.bin\n  - url: ORIGIN/two.bin\n")
        kill(process.processIdentifier, SIGHUP)
        #expect(Self.waitFor { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("prefetch daemon: reloaded 1 feed") })
        kill(process.processIdentifier, SIGUSR1)
        #expect(Self.waitFor { setup.cached("t/two.bin") != nil })
        let stopAt = Date()
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(Date().timeIntervalSince(stopAt) < 5)
        let text = try String(contentsOf: log, encoding: .utf8)
        #expect(text.contains("prefetch daemon: reloaded 1 feed") && text.contains("prefetch daemon: stopped (SIGTERM)"))
    }

    /// SPEC §2: the daemon sleeps until the next thing to do — no polling while idle (it
    /// woke 5 times a second before), and it wakes by itself when a release comes.
    @Test func theDaemonSleepsUntilTheNextReleaseWithoutPolling() throws {
        let setup = try NginxHarness(files: ["later.bin": Self.random(500, seed: 3)])
        let release = Date().addingTimeInterval(6)
        let stamp = ISO8601DateFormatter().string(from: release.addingTimeInterval(1))  // whole seconds, rounded up
        try setup.feed("resources:\n  - url: ORIGIN/later.bin\n    not_before: \"\(stamp)\"\n")
        let (process, log) = try setup.startDaemon()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(Self.waitFor { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("prefetch daemon: 1 feed") })
        // Past the first pass. A pass with nothing to do prints nothing, so no event marks its
        // end: this is the one wait left that is a time (the pass takes milliseconds).
        Thread.sleep(forTimeInterval: 1)
        // Under ThreadSanitizer its runtime's own background thread (started before main, so
        // the second task) wakes ten times a second: it is not the daemon's, and not counted.
        let sanitized = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil
        func switches() -> Int {
            var tasks = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/task")) ?? [])
                .sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }
            if sanitized, tasks.count > 1 { tasks.remove(at: 1) }
            return tasks.reduce(0) { sum, task in
                let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/task/\(task)/status", encoding: .utf8)) ?? ""
                let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
                return sum + (line.flatMap { Int($0.split(separator: "\t").last ?? "") } ?? 0)
            }
        }
        let before = switches()
        Thread.sleep(forTimeInterval: 3)  // the measurement window, not a wait for an event
        let woke = switches() - before
        #expect(woke <= 3, "the idle daemon woke \(woke) times in 3 s")
        #expect(setup.cached("t/later.bin") == nil, "fetched before its release")
        #expect(Self.waitFor { setup.cached("t/later.bin") != nil }, "the daemon did not wake for the release")
        #expect(Date() >= release)
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// SPEC §2: where `run` exits 75, the daemon waits for the lock, then works.
    @Test func theDaemonWaitsForTheLock() throws {
        let setup = try NginxHarness(files: ["one.bin": Self.random(100)])
        try setup.feed("resources:\n  - url: ORIGIN/one.bin\n")
        try FileManager.default.createDirectory(at: setup.dir.url.appendingPathComponent("cache/.prefetch"), withIntermediateDirectories: true)
        let lock = open(setup.dir.url.path + "/cache/.prefetch/lock", O_RDWR | O_CREAT, 0o644)
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        let (process, log) = try setup.startDaemon()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(Self.waitFor { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("waiting for the cache lock") })
        #expect(process.isRunning, "the daemon gave up on a held lock")
        #expect(setup.cached("t/one.bin") == nil)
        close(lock)  // the other writer is done
        #expect(Self.waitFor { setup.cached("t/one.bin") != nil }, "the daemon did not take the lock once it was free")
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    /// SPEC §2: SIGTERM to the daemon in the middle of a download pauses it resumably and
    /// exits 0 within a few seconds; the partial and its offset are kept.
    @Test func sigtermStopsTheDaemonMidDownload() throws {
        let setup = try NginxHarness(files: ["slow/big.bin": Self.random(4_000_000, seed: 900)])
        try setup.feed("resources:\n  - url: ORIGIN/slow/big.bin\n")
        let (process, log) = try setup.startDaemon()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(Self.waitFor { !setup.partials.isEmpty }, "no transfer started")
        Thread.sleep(forTimeInterval: 2.5)  // past the first 2-second sync, mid-download (4 MB at 512 KiB/s)
        let stopAt = Date()
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(Date().timeIntervalSince(stopAt) < 5)
        #expect(setup.cached("t/big.bin") == nil)
        let state = try #require(try StateStore.openReadOnly(setup.dir.url.path + "/cache/.prefetch/state.db")?.snapshot())
        let offset = state.resources[ResourceKey(feed: "t", path: "big.bin")]?.partial?.syncedOffset ?? 0
        #expect(offset > 0 && offset < 4_000_000, "recorded offset \(offset)")
        let text = try String(contentsOf: log, encoding: .utf8)
        #expect(text.contains("paused  t/big.bin  stopped") && text.contains("prefetch daemon: stopped (SIGTERM)"), "\(text)")
    }

    /// FAULTS 20 on a real full filesystem: a 2 MiB tmpfs mounted as the cache (needs root, as CI has).
    @Test(.enabled(if: getuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDiskPausesEverythingAndKeepsTheGoodCopy() throws {
        let small = Self.random(100_000, seed: 11)
        let setup = try NginxHarness(files: ["f.bin": small])
        try setup.feed("refresh: 1h\nresources:\n  - url: ORIGIN/f.bin\n")
        let cache = setup.dir.url.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        try NginxOrigin.shell(["-c", "mount -t tmpfs -o size=2m tmpfs '\(cache.path)'"])
        defer { try? NginxOrigin.shell(["-c", "umount '\(cache.path)'"]) }
        #expect(try setup.run().status == 0)
        try Data(Self.random(3_000_000, seed: 12)).write(to: setup.www.appendingPathComponent("f.bin"))
        let full = try setup.run(environment: ["PREFETCH_CLOCK_OFFSET": "+2h"])
        #expect(full.status == 1)
        #expect(full.stderr.contains("disk full"))
        #expect(full.stdout.contains("paused  t/f.bin  disk full"))
        #expect(setup.cached("t/f.bin").map(Self.sha) == Self.sha(small))  // the previous good file is intact
        let plan = try setup.run(["plan", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+2h"])
        // No attempt was counted (not backoff, not failed); the plan waits for space, since
        // the paused partial is kept for resume.
        #expect(plan.stdout.contains(#""path":"f.bin""#) && plan.stdout.contains(#""state":"waiting","reason":"free space "#), "\(plan.stdout)")
    }

    /// Transfers freed and allocated in turn once shared a byte counter (and crashed the run).
    @Test func manySmallFilesAreCountedExactly() throws {
        var files: [String: [UInt8]] = [:]
        var yaml = "limits: { concurrency: 16 }\nresources:\n"
        var total = 0
        for i in 0..<120 {
            let size = i % 2 == 0 ? 16_384 : 1000
            files["f\(i).bin"] = Self.random(size, seed: UInt64(i + 100))
            yaml += "  - url: ORIGIN/f\(i).bin\n"
            total += size
        }
        let setup = try NginxHarness(files: files)
        try setup.feed(yaml)
        let result = try setup.run(["run", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""type":"summary","placed":120,"fresh":0,"failed":0,"paused":0,"not_due":0,"bytes":\#(total),"#))
        for i in [0, 1, 57, 119] {
            #expect(setup.cached("t/f\(i).bin").map(Self.sha) == files["f\(i).bin"].map(Self.sha))
        }
    }

    /// `max_rate` caps the feed as a whole, however many transfers it runs: four files of
    /// 128 KiB at 4-way under 256KiB/s take about two seconds (a cap per transfer would
    /// take half a second; no cap, milliseconds on loopback). Only a lower bound is
    /// checked: a slow machine makes it longer, never shorter.
    @Test func maxRateCapsTheFeedAsAWhole() throws {
        var files: [String: [UInt8]] = [:]
        var yaml = "limits: { concurrency: 4, max_rate: 256KiB/s }\nresources:\n"
        for i in 0..<4 {
            files["r\(i).bin"] = Self.random(131_072, seed: UInt64(i + 300))
            yaml += "  - url: ORIGIN/r\(i).bin\n"
        }
        let setup = try NginxHarness(files: files)
        try setup.feed(yaml)
        let started = Date()
        let result = try setup.run()
        let seconds = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(seconds >= 1.4, "4 x 128 KiB under a 256KiB/s feed cap took only \(seconds) s")
        for i in 0..<4 { #expect(setup.cached("t/r\(i).bin").map(Self.sha) == files["r\(i).bin"].map(Self.sha)) }
    }

    /// HTTP/2 where the origin offers it: over TLS, nginx offers h2 by ALPN and every request
    /// arrives as HTTP/2.0 (one connection multiplexes them), verified against `ca_file`.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func http2IsUsedWhereTheOriginOffersIt() throws {
        let keys = try TemporaryFolder()
        chmod(keys.url.path, 0o755)
        let status = try FaultTests.tool("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                                              "-nodes", "-keyout", "h2.key", "-out", "h2.pem", "-days", "2",
                                                              "-subj", "/CN=prefetch-h2", "-addext", "subjectAltName=IP:127.0.0.1"], in: keys.url)
        #expect(status == 0)
        chmod(keys.url.path + "/h2.key", 0o644)  // read by nginx's master, which runs as this user; workers need nothing
        var files: [String: [UInt8]] = [:]
        var yaml = "limits: { concurrency: 4 }\nresources:\n"
        for i in 0..<6 {
            files["h\(i).bin"] = Self.random(40_000, seed: UInt64(400 + i))
            yaml += "  - url: ORIGIN/h\(i).bin\n"
        }
        let setup = try NginxHarness(files: files, tls: (keys.url.path + "/h2.pem", keys.url.path + "/h2.key"))
        try setup.dir.write("config.yaml", "ca_file: \(keys.url.path)/h2.pem\n")
        try setup.feed(yaml)
        let result = try setup.run(config: "config.yaml")
        #expect(result.status == 0, "\(result.stderr)")
        let requests = setup.origin.log().filter { $0.contains(" /h") }
        #expect(requests.count == 6)
        #expect(requests.allSatisfy { $0.contains("proto=HTTP/2.0") }, "\(requests)")
        for i in 0..<6 { #expect(setup.cached("t/h\(i).bin").map(Self.sha) == files["h\(i).bin"].map(Self.sha)) }
    }

    /// SPEC §7, the run summary: `run:`'s last line counts placed, fresh (304), failed, held
    /// (resources held with their origins), pruned (what the pass's clean-up removed) and
    /// paused; the `--json` summary carries the same figures (`held`, `pruned` added to the
    /// fields it always had). Before, it said nothing of pruned files and counted held
    /// resources as one failure.
    @Test(arguments: [false, true]) func theSummaryCountsEveryOutcome(json: Bool) throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.random(1000, seed: 90), etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(Self.random(1000, seed: 91), etag: "\"b1\""))
        let feed = "refresh: 1h\nprune: true\nretry: { attempts: 1, backoff: 1s }\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n"
        try s.feed(feed)
        #expect(try s.run().status == 0)
        // A release later: a answers 304, b changed, c is gone; two unlisted files are pruned;
        // three resources of another feed wait on an origin that refuses connections.
        s.origin.serve("/b.bin", OriginResource(Self.random(1000, seed: 92), etag: "\"b2\""))
        try s.feed(feed + "  - url: ORIGIN/c.bin\n")
        try s.dir.write("cache/t/old-1.bin", "x")
        try s.dir.write("cache/t/sub/old-2.bin", "y")
        try s.feed("retry: { attempts: 1, backoff: 1s }\nresources:\n" + (0..<3).map { "  - url: http://127.0.0.1:9/d\($0).bin\n" }.joined(),
                   name: "dead")
        let run = try s.run(json ? ["run", "--json"] : ["run"], environment: ["PREFETCH_CLOCK_OFFSET": "+2h"])
        #expect(run.status == 1, "\(run.diagnostics)")
        #expect(!s.exists("t/old-1.bin") && !s.exists("t/sub/old-2.bin"))
        if json {
            let summary = try #require(run.events.last, "\(run.diagnostics)")
            #expect(summary["type"] as? String == "summary" && summary["placed"] as? Int == 1 && summary["fresh"] as? Int == 1
                    && summary["failed"] as? Int == 1 && summary["held"] as? Int == 3 && summary["pruned"] as? Int == 2
                    && summary["paused"] as? Int == 0 && summary["exit"] as? Int == 1, "\(summary)")
        } else {
            let last = run.stdout.split(separator: "\n").last.map(String.init) ?? ""
            #expect(last.hasPrefix("run: 1 placed, 1 fresh (304), 1 failed, 3 held, 2 pruned, 0 paused; "), "\(run.diagnostics)")
        }
    }

    /// On a terminal (a pty from `script`): live bars with bytes, rate and ETA, redrawn in
    /// place; `--quiet` prints nothing but errors; piped, plain lines and no escape codes.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script")))
    func progressOnATerminalQuietAndPlainOutput() throws {
        let body = Self.random(800_000, seed: 500)
        let setup = try NginxHarness(files: ["slow/t.bin": body, "ok.bin": Self.random(100, seed: 501)])
        try setup.feed("resources:\n  - url: ORIGIN/slow/t.bin\n  - url: ORIGIN/ok.bin\n  - url: ORIGIN/missing.bin\n")
        let command = [BinaryRunner.executable.path, "run", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
            .map { "'" + $0 + "'" }.joined(separator: " ")
        let terminal = try BinaryRunner.run(["-qefc", command, "/dev/null"], in: setup.dir.url, environment: ["TERM": "xterm"],
                                            executable: URL(fileURLWithPath: "/usr/bin/script"))
        #expect(terminal.status == 1, "\(terminal.stdout)\(terminal.stderr)")  // missing.bin: 404
        #expect(terminal.stdout.contains("\u{1b}["), "no escape codes on a terminal")
        #expect(terminal.stdout.contains("all 1 active") || terminal.stdout.contains("all 2 active"), "\(terminal.stdout)")
        #expect(terminal.stdout.contains("/s  ETA "), "no rate and ETA in \(terminal.stdout)")
        #expect(terminal.stdout.contains("placed  t/t.bin"))

        try FileManager.default.removeItem(at: setup.dir.url.appendingPathComponent("cache"))
        let quiet = try setup.run(["run", "--quiet"])
        #expect(quiet.status == 1)
        #expect(quiet.stdout.split(separator: "\n").count == 1 && quiet.stdout.hasPrefix("run: 2 placed, 0 fresh (304), 1 failed"),
                "--quiet printed more than the summary of a failed run: \(quiet.stdout)")
        #expect(quiet.stderr.contains("failed  t/missing.bin  HTTP 404"))

        try FileManager.default.removeItem(at: setup.dir.url.appendingPathComponent("cache"))
        let plain = try setup.run()
        #expect(!plain.stdout.contains("\u{1b}") && !plain.stdout.contains("\r"))
        #expect(plain.stdout.contains("placed  t/ok.bin") && plain.stdout.contains("run: 2 placed, 0 fresh (304), 1 failed"))
        #expect(setup.cached("t/t.bin").map(Self.sha) == Self.sha(body))
    }

    /// `metered_budget` on a metered link (SPEC §5): two files that each fit but not
    /// together do not both start; one of unknown size pauses, resumably, when the budget
    /// runs out; the bytes are recorded, and the plan says why it waits.
    @Test func theMeteredBudgetHoldsWithinARun() throws {
        let a = Self.random(200_000, seed: 600), b = Self.random(200_000, seed: 601), u = Self.random(1_500_000, seed: 602)
        let setup = try NginxHarness(files: ["a.bin": a, "b.bin": b, "slow/u.bin": u])
        try setup.feed("conditions: { metered_budget: 300KiB/day }\nlimits: { concurrency: 4 }\nresources:\n"
                       + "  - { url: ORIGIN/a.bin, size: 200000 }\n  - { url: ORIGIN/b.bin, size: 200000 }\n")
        let known = try setup.run(["run", "--assume", "network=metered"])
        #expect(known.status == 0, "\(known.stderr)")
        #expect([setup.cached("t/a.bin") != nil, setup.cached("t/b.bin") != nil].filter { $0 }.count == 1, "\(known.stdout)")
        #expect(known.stdout.contains("metered budget used"), "\(known.stdout)")
        #expect(setup.origin.log().count == 1, "the second file was requested: \(setup.origin.log())")

        try FileManager.default.removeItem(at: setup.dir.url.appendingPathComponent("cache"))
        try setup.feed("conditions: { metered_budget: 300KiB/day }\nresources:\n  - url: ORIGIN/slow/u.bin\n")
        let unknown = try setup.run(["run", "--assume", "network=metered"])
        #expect(unknown.status == 0, "\(unknown.stderr)")
        #expect(unknown.stdout.contains("paused  t/u.bin  metered budget used"), "\(unknown.stdout)")
        #expect(setup.cached("t/u.bin") == nil)
        let kept = setup.partials.first.flatMap { try? FileManager.default.attributesOfItem(atPath: setup.dir.url.path + "/cache/.prefetch/partial/" + $0)[.size] as? Int }
        #expect((kept ?? 0) >= 300 * 1024 && (kept ?? 0) < u.count, "partial kept: \(String(describing: kept))")
        let state = try #require(try StateStore.openReadOnly(setup.dir.url.path + "/cache/.prefetch/state.db")?.snapshot())
        let used = state.meteredBytes.filter { $0.key.feed == "t" }.values.reduce(0, +)
        #expect(used >= 300 * 1024 && used < UInt64(u.count), "recorded \(used) metered bytes")
        let plan = try setup.run(["plan", "--assume", "network=metered"])
        #expect(plan.stdout.contains("metered budget used"), "\(plan.stdout)")
    }

    /// `run --feed a` cleans up like `gc` for feed a, and leaves feed b's partial alone:
    /// b's resource is still listed (in a manifest this run did not work on).
    @Test func runOneFeedKeepsTheOtherFeedsPartials() throws {
        let setup = try NginxHarness(files: ["a.bin": Self.random(1000, seed: 700), "b.bin": Self.random(300_000, seed: 701)])
        try setup.feed("resources:\n  - url: ORIGIN/a.bin\n", name: "a")
        try setup.feed("resources:\n  - url: ORIGIN/b.bin\n", name: "b")
        let partials = setup.dir.url.appendingPathComponent("cache/.prefetch/partial")
        try FileManager.default.createDirectory(at: partials, withIntermediateDirectories: true)
        let name = CacheFolder.partialName(feed: "b", path: "b.bin")
        try Data(Self.random(300_000, seed: 701).prefix(100_000)).write(to: partials.appendingPathComponent(name))
        let store = try StateStore.openForWriting(setup.dir.url.path + "/cache/.prefetch/state.db")
        try store.recordPartial(ResourceKey(feed: "b", path: "b.bin"), PartialState(
            urlHash: try ResourceURL.parse(setup.origin.url("/b.bin")).identityHash, validators: Validators(),
            totalLength: 300_000, syncedOffset: 100_000, updatedAt: 0))
        let result = try setup.run(["run", "--feed", "a"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(setup.cached("a/a.bin") != nil)
        #expect(FileManager.default.fileExists(atPath: partials.appendingPathComponent(name).path), "run --feed a deleted feed b's partial")
        let state = try #require(try StateStore.openReadOnly(setup.dir.url.path + "/cache/.prefetch/state.db")?.snapshot())
        #expect(state.resources[ResourceKey(feed: "b", path: "b.bin")]?.partial?.syncedOffset == 100_000)
    }

    @Test func aSecondWriterGetsExitSeventyFive() throws {
        let setup = try NginxHarness(files: ["a.bin": Self.random(100)])
        try setup.feed("resources:\n  - url: ORIGIN/a.bin\n")
        #expect(try setup.run().status == 0)
        let lock = open(setup.dir.url.path + "/cache/.prefetch/lock", O_RDWR)
        defer { close(lock) }
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        let run = try setup.run()
        #expect(run.status == 75)
        #expect(run.stderr.contains("another prefetch holds the cache lock") && run.stderr.contains("SIGUSR1"))
        #expect(try setup.run(["gc"]).status == 75)
        #expect(try setup.run(["plan"]).status == 0)    // readers need no lock
        #expect(try setup.run(["status"]).status == 0)
    }

    @Test func failuresExitOneAndAreRecordedForThePlan() throws {
        let setup = try NginxHarness(files: ["ok.bin": Self.random(10)])
        try setup.feed("resources:\n  - url: ORIGIN/ok.bin\n  - url: ORIGIN/missing.bin\n")
        let result = try setup.run()
        #expect(result.status == 1)
        #expect(result.stderr.contains("failed  t/missing.bin  HTTP 404"))
        #expect(setup.origin.log().filter { $0.contains("/missing.bin") }.count == 1)  // a 404 is not retried in the run
        #expect(setup.partials.isEmpty)
        let plan = try setup.run(["plan", "--json"])
        #expect(plan.stdout.contains(#""path":"missing.bin","url":""#) && plan.stdout.contains(#""state":"failed","reason":"permanent error""#))
    }

    /// A release is finished when nothing of it is left due, waiting or in backoff: at once
    /// when every transfer succeeded (the run's shortcut), also with a permanent failure (it
    /// waits for the next release), but not while a retry is pending.
    @Test func aReleaseIsFinishedOnlyWhenNothingIsLeftToDo() throws {
        func finished(_ setup: NginxHarness) throws -> Instant? {
            let state = try #require(try StateStore.openReadOnly(setup.dir.url.path + "/cache/.prefetch/state.db")?.snapshot())
            #expect(state.feeds["t"]?.lastRelease != nil)
            return state.feeds["t"]?.lastReleaseFinished
        }
        let allPlaced = try NginxHarness(files: ["ok.bin": Self.random(10)])
        try allPlaced.feed("resources:\n  - url: ORIGIN/ok.bin\n")
        #expect(try allPlaced.run().status == 0)
        #expect(try finished(allPlaced) != nil)

        let permanent = try NginxHarness(files: ["ok.bin": Self.random(10)])
        try permanent.feed("resources:\n  - url: ORIGIN/ok.bin\n  - url: ORIGIN/missing.bin\n")
        #expect(try permanent.run().status == 1)
        #expect(try finished(permanent) != nil)

        let retrying = try NginxHarness(files: ["ok.bin": Self.random(10)])
        try retrying.feed("resources:\n  - url: ORIGIN/ok.bin\n  - url: ORIGIN/ok.bin\n    path: short.bin\n    size: 5\n")
        #expect(try retrying.run().status == 1)
        #expect(try finished(retrying) == nil)
        #expect(try retrying.run(["plan", "--json"]).stdout.contains(#""state":"backoff""#))
    }

    @Test func aSymlinkInTheCacheIsNeverFollowed() throws {
        let setup = try NginxHarness(files: ["x.bin": Self.random(10)])
        try setup.feed("resources:\n  - url: ORIGIN/x.bin\n    path: sub/x.bin\n")
        let outside = setup.dir.url.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: setup.dir.url.appendingPathComponent("cache/t"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: setup.dir.url.appendingPathComponent("cache/t/sub"), withDestinationURL: outside)
        let result = try setup.run()
        #expect(result.status == 1)
        #expect(result.stderr.contains("is a symlink"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }

    @Test func headerVariablesComeFromTheEnvironmentAndNeverShow() throws {
        let setup = try NginxHarness(files: ["h.bin": Self.random(10)])
        try setup.feed("resources:\n  - url: ORIGIN/h.bin\n    headers: { X-Token: \"${LOBBY_TOKEN}\" }\n")
        let missing = try setup.run()
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("LOBBY_TOKEN"))
        let ok = try setup.run(["run", "--json"], environment: ["LOBBY_TOKEN": "s3cr3t-value"])
        #expect(ok.status == 0)
        #expect(!ok.stdout.contains("s3cr3t-value") && !ok.stderr.contains("s3cr3t-value"))
        let db = try Data(contentsOf: setup.dir.url.appendingPathComponent("cache/.prefetch/state.db"))
        #expect(db.range(of: Data("s3cr3t-value".utf8)) == nil)
    }

    @Test func badInputTouchesNothing() throws {
        let setup = try NginxHarness(files: [:])
        try setup.feed("resources:\n  - url: ftp://example.com/x\n")
        let result = try setup.run()
        #expect(result.status == 2)
        #expect(!FileManager.default.fileExists(atPath: setup.dir.url.appendingPathComponent("cache").path))
        try setup.feed("resources:\n  - url: ORIGIN/x\n")
        let unknown = try setup.run(["run", "--feed", "nope"])
        #expect(unknown.status == 2 && unknown.stderr.hasPrefix("prefetch: error: unknown feed 'nope'"))
        #expect(!FileManager.default.fileExists(atPath: setup.dir.url.appendingPathComponent("cache").path))
    }

    @Test func aBadThreadCountTouchesNothing() throws {
        let setup = try NginxHarness(files: [:])
        try setup.feed("resources:\n  - url: ORIGIN/x\n")
        for command in ["run", "daemon"] {
            let result = try setup.run([command], environment: ["PREFETCH_TRANSFER_THREADS": "lots"])
            #expect(result.status == 2, "\(result.stderr)")
            #expect(result.stderr.contains("PREFETCH_TRANSFER_THREADS: expected a whole number from 1 to 64, got 'lots'"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: setup.dir.url.appendingPathComponent("cache").path))
        }
    }

    @Test func anUnreadableStateIsMovedAsideAndRebuilt() throws {
        let setup = try NginxHarness(files: ["a.bin": Self.random(1000)])
        try setup.feed("resources:\n  - url: ORIGIN/a.bin\n")
        #expect(try setup.run().status == 0)
        try Data(repeating: 0x41, count: 5000).write(to: setup.dir.url.appendingPathComponent("cache/.prefetch/state.db"))
        let result = try setup.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("cannot be read") && result.stderr.contains("moved to"))
        #expect(setup.cached("t/a.bin").map(Self.sha) == Self.sha(Self.random(1000)))
        #expect(setup.origin.log().last?.hasPrefix("200 GET /a.bin") == true)  // no validators left: fetched again
    }

    @Test func gcRemovesExpiredAndUnlistedFilesOnly() throws {
        let setup = try NginxHarness(files: ["keep.bin": Self.random(10), "old.bin": Self.random(20)])
        try setup.feed("prune: true\nresources:\n  - url: ORIGIN/keep.bin\n  - url: ORIGIN/old.bin\n    expires: 2099-01-01T00:00:00Z\n")
        #expect(try setup.run().status == 0)
        try setup.dir.write("cache/t/stray/file.txt", "not listed")
        try setup.dir.write("cache/other-feed/file.txt", "not ours")
        let dry = try setup.run(["gc", "--dry-run"], environment: ["PREFETCH_CLOCK_OFFSET": "+30000d"])
        #expect(dry.stdout == "would remove  t/old.bin  (expired)\nwould remove  t/stray/file.txt  (no longer listed)\ngc: 2 files would be removed\n")
        #expect(setup.cached("t/old.bin") != nil)
        let gc = try setup.run(["gc"], environment: ["PREFETCH_CLOCK_OFFSET": "+30000d"])
        #expect(gc.status == 0)
        #expect(setup.cached("t/old.bin") == nil && setup.cached("t/stray/file.txt") == nil)
        #expect(setup.cached("t/keep.bin") != nil && setup.cached("other-feed/file.txt") != nil)
    }

    /// The end of every `run` cleans up as `gc` does: with `prune`, a resource taken out of
    /// the manifest leaves the cache at the next run, and so does an orphaned partial.
    @Test func runCleansUpAsGCDoes() throws {
        let setup = try NginxHarness(files: ["keep.bin": Self.random(10), "gone.bin": Self.random(20)])
        try setup.feed("prune: true\nresources:\n  - url: ORIGIN/keep.bin\n  - url: ORIGIN/gone.bin\n")
        #expect(try setup.run().status == 0)
        #expect(setup.cached("t/gone.bin") != nil)
        try setup.dir.write("cache/.prefetch/partial/" + CacheFolder.partialName(feed: "t", path: "old.bin"), "orphan")
        try setup.feed("prune: true\nresources:\n  - url: ORIGIN/keep.bin\n")
        #expect(try setup.run().status == 0)
        #expect(setup.cached("t/gone.bin") == nil && setup.cached("t/keep.bin") != nil)
        #expect(setup.partials.isEmpty, "\(setup.partials)")
    }

    /// SPEC §2: a cache that cannot be written is exit 1 with the reason, and nothing else.
    @Test func anUnwritableCacheIsExitOne() throws {
        let setup = try NginxHarness(files: ["a.bin": Self.random(10)])
        try setup.feed("resources:\n  - url: ORIGIN/a.bin\n")
        try setup.dir.write("cache", "a file where the cache folder should be")
        let result = try setup.run()
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot write") && result.stderr.contains("cache"), "\(result.stderr)")
        #expect(setup.origin.log().isEmpty)
    }

    /// SPEC §2 `status`: files, bytes, last success and error, partials and next wake-up per feed.
    @Test func statusReportsEachFeed() throws {
        let setup = try NginxHarness(files: ["a.bin": Self.random(1000), "b.bin": Self.random(2000)])
        try setup.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n  - url: ORIGIN/missing.bin\n")
        #expect(try setup.run().status == 1)
        let json = try setup.run(["status", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let line = try #require(json.stdout.split(separator: "\n").first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "feed" && object["feed"] as? String == "t")
        #expect(object["files"] as? Int == 2 && object["bytes"] as? Int == 3000 && object["partials"] as? Int == 0, "\(object)")
        #expect(object["last_success"] is String, "\(object)")
        #expect(object["last_error"] as? String == "missing.bin: HTTP 404", "\(object)")
        #expect(object["next_wakeup"] is String, "\(object)")
        let text = try setup.run(["status"])
        #expect(text.stdout.contains("t: 2 of 3 files cached"), "\(text.stdout)")
    }

    /// `run --json` reports progress lines while a transfer runs (at most once a second each),
    /// and `plan --at HH:MM` means that time today in the system's zone.
    @Test func progressLinesAndPlanAtAClockTime() throws {
        let setup = try NginxHarness(files: ["slow/p.bin": Self.random(1_200_000, seed: 800)])
        try setup.feed("window: \"02:00-04:00\"\nresources:\n  - url: ORIGIN/slow/p.bin\n")
        let inside = try setup.run(["plan", "--json", "--at", "03:00"])
        #expect(inside.stdout.contains(#""window_open":true"#), "\(inside.stdout)")
        let outside = try setup.run(["plan", "--json", "--at", "05:00"])
        #expect(outside.stdout.contains(#""window_open":false"#), "\(outside.stdout)")

        try setup.feed("resources:\n  - url: ORIGIN/slow/p.bin\n")
        let run = try setup.run(["run", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let progress = run.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["type"] as? String == "progress" }
        #expect(!progress.isEmpty, "\(run.stdout)")
        for line in progress {
            #expect(line["feed"] as? String == "t" && line["path"] as? String == "p.bin")
            #expect(line["bytes"] is Int && line["rate_bps"] is Double, "\(line)")
        }
    }

    /// SPEC §5: files 0644 and folders 0755, less what the umask removes (the cache folder too).
    @Test func modesFollowTheUmask() throws {
        let setup = try NginxHarness(files: ["a/b.bin": Self.random(10)])
        try setup.feed("resources:\n  - { url: ORIGIN/a/b.bin, path: x/b.bin }\n")
        let command = [BinaryRunner.executable.path, "run", "--feeds", "feeds", "--cache", "new/cache", "--config", "/dev/null"]
            .map { "'" + $0 + "'" }.joined(separator: " ")
        let result = try BinaryRunner.run(["-c", "umask 077; exec " + command], in: setup.dir.url, executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(result.status == 0, "\(result.stderr)")
        func mode(_ path: String) -> mode_t {
            var info = Glibc.stat()
            return lstat(setup.dir.url.path + "/" + path, &info) == 0 ? info.st_mode & 0o777 : 0
        }
        for folder in ["new", "new/cache", "new/cache/.prefetch", "new/cache/t", "new/cache/t/x"] { #expect(mode(folder) == 0o700, "\(folder)") }
        #expect(mode("new/cache/t/x/b.bin") == 0o600)
    }

    /// The shipped examples are valid: `feeds/` and `etc/config.example.yaml`.
    @Test func theShippedExamplesValidate() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
        let result = try BinaryRunner.run(["validate", "--feeds", "feeds", "--config", "etc/config.example.yaml"], in: root)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(!result.stderr.contains("error"), "\(result.stderr)")
    }

    /// nginx's ETag for a URL, from a HEAD request with the system curl.
    static func etag(of url: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sI", url]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let line = try #require(text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") })
        return String(line.dropFirst(5)).trimmingCharacters(in: .whitespaces)
    }
}
