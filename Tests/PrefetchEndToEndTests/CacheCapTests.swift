import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §8, "A cache size cap": `max_cache_size` through the real binary against the test
/// origin — admission in the plan (table and JSON), room made from unlisted files and old
/// generations oldest first (never a listed file, never a removed feed within its grace),
/// transfers paused with `cache full` when their body passes the cap, and the cap and the
/// use in `status`, `status --json` and the metrics.
@Suite(.serialized) struct CacheCapTests {
    static func bytes(_ count: Int, _ seed: UInt64) -> [UInt8] { FaultTests.bytes(count, seed: seed) }

    /// A config with `max_cache_size` (and whatever else), its path.
    static func config(_ s: FaultHarness, _ text: String) throws -> String {
        try s.dir.write("config.yaml", text)
    }

    /// Sets a file's (or, not followed, a symlink's) times to `ago` seconds before now.
    static func age(_ s: FaultHarness, _ path: String, by ago: Int) {
        let then = time(nil) - ago
        var times = [timespec(tv_sec: then, tv_nsec: 0), timespec(tv_sec: then, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, s.cache.appendingPathComponent(path).path, &times, AT_SYMLINK_NOFOLLOW) == 0, "\(path)")
    }

    static func planJSON(_ s: FaultHarness, config: String, offset: String? = nil) throws -> RunResult {
        try s.run(["plan", "--json"], environment: offset.map { ["PREFETCH_CLOCK_OFFSET": $0] } ?? [:], config: config)
    }

    static func resource(_ plan: RunResult, _ path: String) -> [String: Any]? {
        plan.events.first { $0["type"] as? String == "resource" && $0["path"] as? String == path }
    }

    static func cacheLine(_ result: RunResult) -> [String: Any]? {
        result.events.first { $0["type"] as? String == "cache" }
    }

    /// Admission in the plan's order (priority, then feed name, then manifest order): what
    /// would pass the cap is `deferred … cache full` with `next` null and a smaller one after
    /// it still fits; one larger than the cap alone says so; `run` fetches only what was
    /// admitted; `status`, `status --json` and the metrics show the cap and the use.
    @Test func thePlanAdmitsUnderTheCapAndTheRestWaits() throws {
        let s = try FaultHarness()
        for (name, size, seed) in [("a.bin", 2000, 1), ("b.bin", 2000, 2), ("c.bin", 500, 3), ("d.bin", 5000, 4), ("e.bin", 400, 5)] {
            s.origin.serve("/\(name)", OriginResource(Self.bytes(size, UInt64(seed)), etag: "\"\(name)\""))
        }
        // b.bin comes first in the manifest, but a.bin is high priority: a is admitted, b is not.
        try s.feed("resources:\n  - url: ORIGIN/b.bin\n    size: 2000\n  - url: ORIGIN/a.bin\n    size: 2000\n    priority: high\n"
                   + "  - url: ORIGIN/c.bin\n    size: 500\n  - url: ORIGIN/d.bin\n    size: 5000\n", name: "t")
        // Feed "s" sorts before "t": at the same (normal) priority its e.bin is admitted before t's b and c.
        try s.feed("resources:\n  - url: ORIGIN/e.bin\n    size: 400\n", name: "s")
        let metrics = s.dir.url.appendingPathComponent("metrics.prom").path
        let config = try Self.config(s, "max_cache_size: 3000\nmetrics_file: \(metrics)\n")

        let plan = try Self.planJSON(s, config: config)
        #expect(plan.status == 0, "\(plan.stderr)")
        let a = Self.resource(plan, "a.bin"), b = Self.resource(plan, "b.bin"), c = Self.resource(plan, "c.bin")
        let d = Self.resource(plan, "d.bin"), e = Self.resource(plan, "e.bin")
        #expect(a?["state"] as? String == "due" && e?["state"] as? String == "due", "\(plan.stdout)")
        #expect(b?["state"] as? String == "deferred" && b?["reason"] as? String == "cache full (max_cache_size)", "\(b ?? [:])")
        #expect(b?["next"] is NSNull, "next is null for a deferred … cache full: \(b ?? [:])")
        #expect(c?["state"] as? String == "due", "a smaller one after the skipped one fits: \(c ?? [:])")
        #expect(d?["state"] as? String == "deferred" && d?["reason"] as? String == "larger than max_cache_size" && d?["next"] is NSNull,
                "\(d ?? [:])")
        let line = try #require(Self.cacheLine(plan), "plan --json has a cache line: \(plan.stdout)")
        #expect(line["max_cache_size"] as? Int == 3000 && line["used"] as? Int == 0 && line["used_after"] as? Int == 2900, "\(line)")
        #expect(plan.events.last?["type"] as? String == "total", "the total stays last")
        let table = try s.run(["plan"], config: config)
        #expect(table.stdout.contains("cache full (max_cache_size)") && table.stdout.contains("larger than max_cache_size"), "\(table.stdout)")
        #expect(table.stdout.contains("cache: 0B used of max_cache_size 2.9KiB, 2.8KiB once the due work is placed"), "\(table.stdout)")

        let run = try s.runJSON(config: config)
        #expect(run.status == 0, "deferred work is not a failure: \(run.diagnostics)")
        #expect(run.placed("a.bin") && run.placed("c.bin") && run.placed("e.bin"), "\(run.stdout)")
        #expect(s.origin.requests(to: "/b.bin").isEmpty && s.origin.requests(to: "/d.bin").isEmpty, "only what was admitted is fetched")
        #expect(!s.exists("t/b.bin") && !s.exists("t/d.bin"))

        let status = try s.run(["status", "--json"], config: config)
        let cache = try #require(Self.cacheLine(status), "\(status.stdout)")
        #expect(cache["max_cache_size"] as? Int == 3000 && cache["used"] as? Int == 2900, "\(cache)")
        #expect(status.events.filter { $0["type"] as? String == "cache" }.count == 1)
        let text = try s.run(["status"], config: config)
        #expect(text.stdout.contains("cache: 2.8KiB used of max_cache_size 2.9KiB"), "\(text.stdout)")
        let prom = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(prom.contains("\nprefetch_cache_bytes 2900\n") && prom.contains("\nprefetch_cache_max_bytes 3000\n"), "\(prom)")
        #expect(prom.contains("# TYPE prefetch_cache_bytes gauge"))
        // Still pending: the release stays open, and the plan says why.
        let again = try Self.planJSON(s, config: config)
        #expect(Self.resource(again, "b.bin")?["reason"] as? String == "cache full (max_cache_size)")
        // Without a cap, status --json still says what the cache takes.
        let uncapped = try s.run(["status", "--json"])
        #expect(Self.cacheLine(uncapped)?["used"] as? Int == 2900 && Self.cacheLine(uncapped)?["max_cache_size"] is NSNull,
                "\(uncapped.stdout)")
    }

    /// Room is made from unlisted files of a `prune: false` feed, oldest placement first and
    /// no more than needed; a listed file is never removed (even the oldest), nor a removed
    /// feed's within its grace; when all the room there is would not do, nothing goes.
    @Test func roomIsMadeFromUnlistedFilesOldestFirst() throws {
        let s = try FaultHarness()
        for (n, name) in ["a.bin", "b.bin", "x.bin", "c.bin", "u.bin"].enumerated() {
            s.origin.serve("/\(name)", OriginResource(Self.bytes(1000, UInt64(10 + n)), etag: "\"\(name)\""))
        }
        s.origin.serve("/d.bin", OriginResource(Self.bytes(3000, 20), etag: "\"d\""))
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n  - url: ORIGIN/x.bin\n", name: "t")
        try s.feed("resources:\n  - url: ORIGIN/u.bin\n", name: "u")
        let config = try Self.config(s, "max_cache_size: 4000\n")
        let first = try s.runJSON(config: config)
        #expect(first.status == 0 && ["a.bin", "b.bin", "x.bin", "u.bin"].allSatisfy(first.placed), "\(first.diagnostics)")
        // Placement times: u's oldest, then the listed x, then a, then b.
        Self.age(s, "u/u.bin", by: 400)
        Self.age(s, "t/x.bin", by: 300)
        Self.age(s, "t/a.bin", by: 200)
        Self.age(s, "t/b.bin", by: 100)
        unlink(s.dir.url.appendingPathComponent("feeds/u.yaml").path)  // u is a removed feed, within its grace
        try s.feed("resources:\n  - url: ORIGIN/x.bin\n  - url: ORIGIN/c.bin\n    size: 1000\n", name: "t")

        let plan = try Self.planJSON(s, config: config)
        #expect(Self.resource(plan, "c.bin")?["state"] as? String == "due", "\(plan.stdout)")
        let room = (Self.cacheLine(plan)?["making_room"] as? [[String: Any]]) ?? []
        #expect(room.count == 1 && room.first?["feed"] as? String == "t" && room.first?["path"] as? String == "a.bin"
                && room.first?["bytes"] as? Int == 1000, "only the oldest unlisted file: \(room)")
        let table = try s.run(["plan"], config: config)
        #expect(table.stdout.contains("to make room: removes t/a.bin (1000B)"), "\(table.stdout)")

        let run = try s.runJSON(config: config)
        #expect(run.status == 0 && run.placed("c.bin"), "\(run.diagnostics)")
        let removed = run.events.filter { $0["type"] as? String == "removed" }
        #expect(removed.count == 1 && removed.first?["feed"] as? String == "t" && removed.first?["path"] as? String == "a.bin"
                && removed.first?["bytes"] as? Int == 1000 && removed.first?["reason"] as? String == "room for max_cache_size", "\(run.stdout)")
        #expect(!s.exists("t/a.bin"), "the oldest unlisted file went")
        #expect(s.cached("t/b.bin") != nil, "no more than needed went")
        #expect(s.cached("t/x.bin") != nil, "a listed file is never removed to make room")
        #expect(s.cached("u/u.bin") != nil, "a removed feed within its grace is never removed to make room")

        // 3000 more would need 2000 freed; only b (1000) may go: d waits, and b stays.
        try s.feed("resources:\n  - url: ORIGIN/x.bin\n  - url: ORIGIN/c.bin\n    size: 1000\n  - url: ORIGIN/d.bin\n    size: 3000\n", name: "t")
        let full = try Self.planJSON(s, config: config)
        #expect(Self.resource(full, "d.bin")?["reason"] as? String == "cache full (max_cache_size)", "\(full.stdout)")
        #expect((Self.cacheLine(full)?["making_room"] as? [Any])?.isEmpty == true, "\(full.stdout)")
        let waited = try s.runJSON(config: config)
        #expect(waited.status == 0 && s.origin.requests(to: "/d.bin").isEmpty && s.cached("t/b.bin") != nil, "\(waited.diagnostics)")
        let status = try s.run(["status", "--json"], config: config)
        #expect(Self.cacheLine(status)?["used"] as? Int == 4000, "b, x, c and the removed feed's u: \(status.stdout)")
    }

    /// A `release` feed: a hard-linked file counts once; the previous generation makes room
    /// only once the generation after it has been live for 60 s, and then goes whole.
    @Test func aPreviousGenerationMakesRoomAfterSixtySecondsLive() throws {
        let s = try FaultHarness()
        for name in ["a.bin", "b.bin", "c.bin"] { s.origin.serve("/\(name)", OriginResource(ReleaseConsistencyTests.version(name, 1), etag: "\"\(name)-1\"")) }
        s.origin.serve("/d.bin", OriginResource(Self.bytes(2000, 30), etag: "\"d\""))
        try s.feed(ReleaseConsistencyTests.feed)
        let config = try Self.config(s, "max_cache_size: 13000\n")
        #expect(try s.runJSON(config: config).status == 0)
        s.origin.serve("/b.bin", OriginResource(ReleaseConsistencyTests.version("b.bin", 2), etag: "\"b.bin-2\""))
        let second = try s.runJSON(offset: "+2h", config: config)
        #expect(second.status == 0, "\(second.diagnostics)")
        let previous = try #require(ReleaseConsistencyTests.generations(s).first, "\(ReleaseConsistencyTests.generations(s))")
        #expect(ReleaseConsistencyTests.generations(s).count == 2)
        // a and c are hard links in both generations: counted once. 3000 each: a, c, b's two versions.
        let status = try s.run(["status", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+2h"], config: config)
        #expect(Self.cacheLine(status)?["used"] as? Int == 12000, "\(status.stdout)")

        // d (2000) would pass the cap; the previous generation has been live for seconds only.
        try s.feed(ReleaseConsistencyTests.feed + "  - url: ORIGIN/d.bin\n    size: 2000\n")
        let early = try Self.planJSON(s, config: config, offset: "+4h")
        #expect(Self.resource(early, "d.bin")?["reason"] as? String == "cache full (max_cache_size)", "\(early.stdout)")
        #expect((Self.cacheLine(early)?["making_room"] as? [Any])?.isEmpty == true, "\(early.stdout)")
        // Live for two minutes: the previous generation (b's first version alone, 3000) makes room.
        Self.age(s, "t", by: 120)
        let later = try Self.planJSON(s, config: config, offset: "+4h")
        #expect(Self.resource(later, "d.bin")?["state"] as? String == "due", "\(later.stdout)")
        let room = (Self.cacheLine(later)?["making_room"] as? [[String: Any]]) ?? []
        #expect(room.count == 1 && room.first?["generation"] as? Int == Int(previous) && room.first?["bytes"] as? Int == 3000, "\(room)")
        let run = try s.runJSON(offset: "+4h", config: config)
        #expect(run.status == 0 && run.placed("d.bin"), "\(run.diagnostics)")
        #expect(!ReleaseConsistencyTests.generations(s).contains(previous), "\(ReleaseConsistencyTests.generations(s))")
        #expect(s.digest("t/b.bin") == ReleaseConsistencyTests.digest("b.bin", 2) && s.cached("t/d.bin") != nil)
        let after = try s.run(["status", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+4h"], config: config)
        #expect(Self.cacheLine(after)?["used"] as? Int == 11000, "\(after.stdout)")
    }

    /// The daemon wakes when a previous generation becomes room (60 s after the switch) for
    /// work the cap holds back, not at the next release: here 10 s after it starts.
    @Test func theDaemonWakesWhenAGenerationBecomesRoom() throws {
        let s = try FaultHarness()
        for name in ["a.bin", "b.bin", "c.bin"] { s.origin.serve("/\(name)", OriginResource(ReleaseConsistencyTests.version(name, 1), etag: "\"\(name)-1\"")) }
        s.origin.serve("/d.bin", OriginResource(Self.bytes(2000, 50), etag: "\"d\""))
        // refresh 0s, neither schedule nor window: every pass is a release.
        let feed = ReleaseConsistencyTests.feed.replacingOccurrences(of: "refresh: 1h", with: "refresh: 0s")
        try s.feed(feed)
        let config = try Self.config(s, "max_cache_size: 13000\n")
        #expect(try s.runJSON(config: config).status == 0)
        s.origin.serve("/b.bin", OriginResource(ReleaseConsistencyTests.version("b.bin", 2), etag: "\"b.bin-2\""))
        #expect(try s.runJSON(config: config).status == 0)
        try s.feed(feed + "  - url: ORIGIN/d.bin\n    size: 2000\n")
        Self.age(s, "t", by: 50)  // the live generation went live 50 s ago: its predecessor is room in 10 s
        let started = Date()
        let (daemon, log) = try s.startDaemon(config: config)
        defer { if daemon.isRunning { daemon.terminate(); daemon.waitUntilExit() } }
        while s.cached("t/d.bin") == nil, Date().timeIntervalSince(started) < 40 { Thread.sleep(forTimeInterval: 0.2) }
        let waited = Date().timeIntervalSince(started)
        #expect(s.cached("t/d.bin") != nil, "d never placed: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        #expect(waited >= 7, "placed after \(waited) s: the previous generation went before its 60 s")
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(text.contains("\nremoved  t (generation ") && text.contains(" (room for max_cache_size)\n"), "\(text)")
    }

    /// SPEC §8: a `prune: true` feed's unlisted files are room too. A manifest that drops a
    /// file frees its room for the same pass (not a pass later, when the prune would come),
    /// said on a line of its own and not counted as pruned.
    @Test func aFileDroppedFromAPruneFeedIsRoomInTheSamePass() throws {
        let s = try FaultHarness()
        for (n, name) in ["a.bin", "b.bin", "c.bin"].enumerated() {
            s.origin.serve("/\(name)", OriginResource(Self.bytes(1000, UInt64(60 + n)), etag: "\"\(name)\""))
        }
        try s.feed("prune: true\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n", name: "t")
        let config = try Self.config(s, "max_cache_size: 2500\n")
        let first = try s.run(["run"], config: config)
        #expect(first.status == 0 && s.cached("t/a.bin") != nil && s.cached("t/b.bin") != nil, "\(first.diagnostics)")
        try s.feed("prune: true\nresources:\n  - url: ORIGIN/b.bin\n  - url: ORIGIN/c.bin\n    size: 1000\n", name: "t")

        let run = try s.run(["run"], config: config)
        #expect(run.status == 0 && s.cached("t/c.bin") != nil, "c waited a pass for the room a.bin held: \(run.diagnostics)")
        #expect(!s.exists("t/a.bin") && s.cached("t/b.bin") != nil)
        #expect(run.stdout.contains("removed  t/a.bin  1000B (room for max_cache_size)\n"), "\(run.stdout)")
        #expect(run.stdout.contains("0 pruned"), "a removal for room is not a prune: \(run.stdout)")
    }

    /// Without `size` or a recorded length, the `Content-Length` decides when it arrives:
    /// past the cap, the transfer pauses with `cache full` before writing, and the next plan
    /// knows the length. A body without a length pauses where it passes the cap, its
    /// resumable partial kept.
    @Test func aBodyThatPassesTheCapPausesWithCacheFull() throws {
        let s = try FaultHarness()
        let big = Self.bytes(200 * 1024, 40), stream = Self.bytes(200 * 1024, 41)
        s.origin.serve("/big.bin", OriginResource(big, etag: "\"big\""))
        try s.feed("resources:\n  - url: ORIGIN/big.bin\n")
        let config = try Self.config(s, "max_cache_size: 100KiB\n")
        let announced = try s.runJSON(config: config)
        #expect(announced.status == 0, "a pause is not a failure: \(announced.diagnostics)")
        let paused = announced.events("paused", "big.bin")
        #expect(paused.first?["reason"] as? String == "cache full", "\(announced.stdout)")
        #expect(!s.exists("t/big.bin"))
        #expect(s.bytesOnDisk() <= 100 * 1024, "the cap held")
        let next = try Self.planJSON(s, config: config)
        #expect(Self.resource(next, "big.bin")?["reason"] as? String == "larger than max_cache_size", "\(next.stdout)")

        s.origin.serve("/stream.bin", OriginResource(stream, etag: "\"stream\""))
        s.origin.inject("/stream.bin", [.chunkedNoLength])
        try s.feed("resources:\n  - url: ORIGIN/stream.bin\n")
        let chunked = try s.runJSON(config: config)
        #expect(chunked.status == 0, "\(chunked.diagnostics)")
        #expect(chunked.events("paused", "stream.bin").first?["reason"] as? String == "cache full", "\(chunked.stdout)")
        let kept = try #require(s.partialSize("stream.bin"), "a resumable partial is kept")
        #expect(kept > 0 && kept <= 100 * 1024, "\(kept)")
        #expect(!s.exists("t/stream.bin"))
        let partials = try s.status(environment: [:]).first?["partials"] as? [[String: Any]]
        #expect(partials?.first?["path"] as? String == "stream.bin", "\(partials ?? [])")
    }
}

extension Harness {
    /// The bytes of every regular file below the cache, but `.prefetch/`'s own (state.db,
    /// sources) and the reader indexes; partials counted.
    func bytesOnDisk() -> Int {
        var total = 0
        let root = cache.path
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        while let relative = walker.nextObject() as? String {
            if relative.hasPrefix(".prefetch/") && !relative.hasPrefix(".prefetch/partial/") { continue }
            if relative.hasSuffix(".prefetch-index.json") { continue }
            var info = Glibc.stat()
            if lstat(root + "/" + relative, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { total += Int(info.st_size) }
        }
        return total
    }
}
