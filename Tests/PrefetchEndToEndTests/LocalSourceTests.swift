import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §9, "Content already in the cache" and "Pinned copies", through the real binary
/// against the test origin: what the cache holds is never fetched again (two feeds and one
/// URL, versioned URLs, resources sharing a SHA-256 in one pass), a damaged source is not
/// used, a source on another filesystem or of another owner or mode is copied, a crash
/// between the link and the rename leaves nothing a reader sees, `verify`, the cap and
/// `release` generations with links, and a pinned copy is not requested.
@Suite(.serialized) struct LocalSourceTests {
    static func bytes(_ count: Int, _ seed: UInt64) -> [UInt8] { FaultTests.bytes(count, seed: seed) }

    static func entry(_ path: String, url: String, sha256: String, more: String = "") -> String {
        "  - url: ORIGIN\(url)\n    path: \(path)\n    sha256: \(sha256)\n" + more
    }

    static func inode(_ s: FaultHarness, _ path: String) -> UInt64? { s.stat(path).map { UInt64($0.st_ino) } }

    static func placed(_ run: RunResult, _ feed: String, _ path: String) -> [String: Any]? {
        run.events.first { $0["type"] as? String == "placed" && $0["feed"] as? String == feed && $0["path"] as? String == path }
    }

    /// The same URL in two feeds: one GET, one inode; the second copy's line, JSON and
    /// metrics say where it came from; a text run says `(from …)` and `N from the cache`.
    @Test func twoFeedsListingOneURLFetchItOnce() throws {
        let s = try FaultHarness()
        let body = Self.bytes(300_000, 1), sha = FaultTests.sha(body)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a\""))
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha), name: "one")
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha), name: "two")
        let metrics = s.dir.file("metrics.prom")
        let run = try s.run(["run", "--json", "--metrics-file", metrics])
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").count == 1, "one GET for both feeds")
        #expect(Self.inode(s, "one/a.bin") != nil && Self.inode(s, "one/a.bin") == Self.inode(s, "two/a.bin"), "one inode")
        let first = try #require(Self.placed(run, "one", "a.bin")), second = try #require(Self.placed(run, "two", "a.bin"))
        #expect(first["from"] is NSNull && first["fetched"] as? Int == 300_000 && first["reused"] as? Int == 0, "\(first)")
        #expect(second["from"] as? String == "one/a.bin" && second["fetched"] as? Int == 0 && second["reused"] as? Int == 300_000, "\(second)")
        #expect(run.events.last?["from_cache"] as? Int == 1, "\(run.stdout)")
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains("prefetch_reused_bytes_total{feed=\"two\",how=\"cache\"} 300000\n"), "\(text)")
        #expect(text.contains("prefetch_reused_bytes_total{feed=\"one\",how=\"cache\"} 0\n"), "\(text)")
        #expect(text.contains("prefetch_transfers_total{feed=\"two\",result=\"placed\"} 1\n"), "a local copy counts as placed: \(text)")
        // The same URL: the copy takes its validators, and a revalidation sends them.
        #expect(s.state()?.resources[ResourceKey(feed: "two", path: "a.bin")]?.validators.etag == "\"a\"")

        try s.feed("resources:\n" + Self.entry("c.bin", url: "/c.bin", sha256: sha), name: "three")
        let textRun = try s.run(["run", "--feed", "three"])
        #expect(textRun.status == 0, "\(textRun.diagnostics)")
        #expect(textRun.stdout.contains("placed  three/c.bin  293KiB (from one/a.bin)"), "\(textRun.stdout)")
        #expect(textRun.stdout.contains(", 1 from the cache;"), "\(textRun.stdout)")
        #expect(s.origin.requests(to: "/c.bin").isEmpty)
    }

    /// A CMS's versioned URLs (`/v42/…` → `/v43/…`, same content): the plan says `in cache`,
    /// with 0 bytes; the run asks nothing and only the record changes (same inode); the
    /// reader index says no URL served it.
    @Test func versionedURLsWithTheSameContentCostNothing() throws {
        let s = try FaultHarness()
        let body = Self.bytes(200_000, 2), sha = FaultTests.sha(body)
        for version in ["v42", "v43"] { s.origin.serve("/\(version)/intro.mp4", OriginResource(body, etag: "\"\(version)\"")) }
        try s.feed("resources:\n" + Self.entry("intro.mp4", url: "/v42/intro.mp4", sha256: sha))
        #expect(try s.run().status == 0)
        let before = Self.inode(s, "t/intro.mp4")
        try s.feed("resources:\n" + Self.entry("intro.mp4", url: "/v43/intro.mp4", sha256: sha))
        let plan = try s.plan()
        let row = try #require(plan.first { $0["path"] as? String == "intro.mp4" })
        #expect(row["state"] as? String == "due" && row["reason"] as? String == "in cache (t/intro.mp4)", "\(row)")
        #expect(row["from"] as? String == "t/intro.mp4" && row["remaining"] as? Int == 0, "\(row)")
        let table = try s.run(["plan"])
        #expect(table.stdout.contains("in cache (t/intro.mp4)"), "\(table.stdout)")
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.origin.requests(to: "/v43/intro.mp4").isEmpty, "no request for the new URL")
        #expect(Self.placed(run, "t", "intro.mp4")?["from"] as? String == "t/intro.mp4", "\(run.stdout)")
        #expect(Self.inode(s, "t/intro.mp4") == before, "the same file: only its record changed")
        let index = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: s.cache.appendingPathComponent("t/.prefetch-index.json"))) as? [String: Any])
        let file = try #require((index["files"] as? [[String: Any]])?.first)
        #expect(file["url"] as? String == s.origin.url("/v43/intro.mp4") && file["served_by"] is NSNull, "\(file)")
        // Another URL's validators never go to this one: the copy has none (it is pinned now).
        #expect(s.state()?.resources[ResourceKey(feed: "t", path: "intro.mp4")]?.validators == Validators())
    }

    /// Three resources sharing a SHA-256 in one pass make one transfer; when the first one's
    /// URL fails, the next transfers and the last waits for it, counting no attempt.
    @Test func resourcesSharingContentInAPassMakeOneTransfer() throws {
        let s = try FaultHarness()
        let body = Self.bytes(100_000, 3), sha = FaultTests.sha(body)
        for n in 1...3 { s.origin.serve("/x\(n).bin", OriginResource(body, etag: "\"x\(n)\"")) }
        try s.feed("resources:\n" + (1...3).map { Self.entry("x\($0).bin", url: "/x\($0).bin", sha256: sha) }.joined())
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect((1...3).map { s.origin.requests(to: "/x\($0).bin").count } == [1, 0, 0], "\(s.origin.requests.map(\.path))")
        #expect(Self.placed(run, "t", "x2.bin")?["from"] as? String == "t/x1.bin" && Self.placed(run, "t", "x3.bin")?["from"] as? String == "t/x1.bin")

        let u = try FaultHarness()
        u.origin.serve("/x2.bin", OriginResource(body, etag: "\"x2\""))
        u.origin.serve("/x3.bin", OriginResource(body, etag: "\"x3\""))  // x1.bin: 404
        try u.feed("resources:\n" + (1...3).map { Self.entry("x\($0).bin", url: "/x\($0).bin", sha256: sha) }.joined())
        let second = try u.runJSON()
        #expect(second.status == 1, "x1.bin failed: \(second.diagnostics)")
        #expect((1...3).map { u.origin.requests(to: "/x\($0).bin").count } == [1, 1, 0], "\(u.origin.requests.map(\.path))")
        #expect(second.placed("x2.bin") && Self.placed(second, "t", "x3.bin")?["from"] as? String == "t/x2.bin", "\(second.stdout)")
        #expect(u.state()?.resources[ResourceKey(feed: "t", path: "x3.bin")]?.failures == 0, "the waiting one counts no attempt")
        #expect(u.digest("t/x3.bin") == sha)
    }

    /// A source whose bytes changed behind prefetch's back (a byte flipped, size and mtime
    /// kept; or cut short) is not used: it is removed as `verify` removes one, said, and the
    /// resource is fetched from its URL. The next pass takes the removed one from the good copy.
    @Test(arguments: ["flipped", "truncated"]) func aDamagedSourceIsRemovedAndNotUsed(damage: String) throws {
        let s = try FaultHarness()
        let body = Self.bytes(150_000, 4), sha = FaultTests.sha(body)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(body, etag: "\"b\""))
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha), name: "one")
        #expect(try s.run().status == 0)
        let file = s.cache.appendingPathComponent("one/a.bin").path
        let info = try #require(s.stat("one/a.bin"))
        if damage == "flipped" {
            var damaged = body
            damaged[70_000] ^= 0xFF
            try Data(damaged).write(to: URL(fileURLWithPath: file))  // a rewrite in place: the same inode
            var times = [info.st_atim, info.st_mtim]
            #expect(utimensat(AT_FDCWD, file, &times, 0) == 0)
        } else {
            #expect(truncate(file, 50_000) == 0)
        }
        try s.feed("resources:\n" + Self.entry("b.bin", url: "/b.bin", sha256: sha), name: "two")
        let run = try s.run(["run", "--feed", "two"])
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(run.stderr.contains("mismatch  one/a.bin  expected \(sha) found "), "\(run.diagnostics)")
        #expect(!s.exists("one/a.bin"), "the damaged source is removed")
        #expect(s.origin.requests(to: "/b.bin").count == 1 && s.digest("two/b.bin") == sha)
        let again = try s.run()
        #expect(again.stdout.contains("placed  one/a.bin  146.5KiB (from two/b.bin)"), "\(again.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").count == 1, "the removed one comes from the good copy")
    }

    /// A source prefetch may not link — another owner, another mode, another filesystem —
    /// is copied: a new inode with the new file's mode, and still no request.
    @Test(arguments: ["mode", "owner", "filesystem"]) func aSourceThatCannotBeLinkedIsCopied(why: String) throws {
        let s = try FaultHarness()
        let body = Self.bytes(120_000, 5), sha = FaultTests.sha(body)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a\""))
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha), name: "one")
        #expect(try s.run().status == 0)
        let folder = s.cache.appendingPathComponent("one").path, file = folder + "/a.bin"
        var mounted = false
        defer { if mounted { _ = try? Self.privileged(["umount", folder]) } }
        switch why {
        case "mode": #expect(chmod(file, 0o600) == 0)
        case "owner": #expect(try Self.privileged(["chown", "65534", file]) == 0)
        default:
            // The feed's folder on a small tmpfs of its own: the same bytes, another filesystem.
            let kept = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(try Self.privileged(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", folder]) == 0, "mount needs root")
            mounted = true
            try kept.write(to: URL(fileURLWithPath: file))
            #expect(try Self.privileged(["chown", "\(geteuid()):\(getegid())", file]) == 0)
        }
        try s.feed("resources:\n" + Self.entry("b.bin", url: "/b.bin", sha256: sha), name: "two")
        let run = try s.run(["run", "--feed", "two"])
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(run.stdout.contains("placed  two/b.bin  117.2KiB (from one/a.bin)"), "\(run.stdout)")
        let source = try #require(s.stat("one/a.bin")), copy = try #require(s.stat("two/b.bin"))
        #expect(source.st_ino != copy.st_ino || source.st_dev != copy.st_dev, "a copy, not a link")
        #expect(copy.st_nlink == 1 && copy.st_mode & 0o7777 == 0o644 && copy.st_uid == geteuid(), "a new file as prefetch makes one")
        #expect(s.digest("two/b.bin") == sha && s.origin.requests(to: "/b.bin").isEmpty)
        #expect(!(try FileManager.default.contentsOfDirectory(atPath: s.cache.path + "/.prefetch/partial")).contains { $0.hasSuffix(".link") })
    }

    /// `sudo` when not root (the CI's user), for mount, umount and chown.
    static func privileged(_ command: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = (geteuid() == 0 ? [] : ["sudo", "-n"]) + command
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// `kill -9` between the link and the rename: nothing in the feed's folder, the link
    /// left in the partial folder only; `gc` removes it, and the next run places the file.
    @Test func aKillBetweenTheLinkAndTheRenameLeavesNothingBehind() throws {
        let s = try FaultHarness()
        let body = Self.bytes(80_000, 6), sha = FaultTests.sha(body)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a\""))
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha), name: "one")
        #expect(try s.run().status == 0)
        try s.feed("resources:\n" + Self.entry("b.bin", url: "/b.bin", sha256: sha), name: "two")
        let killed = try s.run(["run"], environment: ["PREFETCH_FAULT": "source-link:kill"])
        #expect(killed.status != 0, "\(killed.diagnostics)")
        #expect(!s.exists("two/b.bin"), "nothing visible in the feed's folder")
        let partials = s.cache.path + "/.prefetch/partial"
        #expect(try FileManager.default.contentsOfDirectory(atPath: partials).contains { $0.hasSuffix(".link") }, "the link was made")
        let dry = try s.run(["gc", "--dry-run"])
        #expect(dry.status == 0 && dry.stdout.contains("copy of a local source a run left"), "gc names it: \(dry.diagnostics)")
        // The next run places the file and leaves nothing behind.
        let run = try s.run()
        #expect(run.status == 0 && run.stdout.contains("(from one/a.bin)"), "\(run.diagnostics)")
        #expect(s.origin.requests(to: "/b.bin").isEmpty && s.digest("two/b.bin") == sha)
        #expect(try FileManager.default.contentsOfDirectory(atPath: partials).isEmpty, "the run's clean-up removed the link")
        // gc removes one just the same.
        try s.feed("resources:\n" + Self.entry("c.bin", url: "/c.bin", sha256: sha), name: "three")
        #expect(try s.run(["run"], environment: ["PREFETCH_FAULT": "source-link:kill"]).status != 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: partials).contains { $0.hasSuffix(".link") })
        let gc = try s.run(["gc"])
        #expect(gc.status == 0 && gc.stdout.contains("copy of a local source a run left"), "\(gc.diagnostics)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: partials).isEmpty)
    }

    /// `verify` over linked files: every path is reported; a damaged inode fails every path
    /// that links it.
    @Test func verifyReportsEveryPathOfALinkedFile() throws {
        let s = try FaultHarness()
        let body = Self.bytes(90_000, 7), sha = FaultTests.sha(body)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a\""))
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha), name: "one")
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha), name: "two")
        #expect(try s.run().status == 0)
        let verified = try s.run(["verify", "--json"])
        #expect(verified.status == 0 && verified.events.filter { $0["type"] as? String == "verified" }.count == 2, "\(verified.diagnostics)")
        var damaged = body
        damaged[10] ^= 1
        try Data(damaged).write(to: s.cache.appendingPathComponent("one/a.bin"))  // in place: both paths see it
        let mismatched = try s.run(["verify", "--json"])
        #expect(mismatched.events.filter { $0["type"] as? String == "mismatch" }.count == 2, "\(mismatched.stdout)")
        #expect(!s.exists("one/a.bin") && !s.exists("two/a.bin"))
    }

    /// `max_cache_size` counts a linked file once: two feeds holding one 300 kB file fit a
    /// 400 kB cap (the second is admitted at 0 bytes).
    @Test func theCapCountsALinkedFileOnce() throws {
        let s = try FaultHarness()
        let body = Self.bytes(300_000, 8), sha = FaultTests.sha(body)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a\""))
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha, more: "    size: 300000\n"), name: "one")
        let config = try s.dir.write("config.yaml", "max_cache_size: 400000\n")
        #expect(try s.run(config: config).status == 0)
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha, more: "    size: 300000\n"), name: "two")
        let plan = try s.run(["plan", "--json"], config: config)
        let row = try #require(plan.events.first { $0["feed"] as? String == "two" && $0["path"] as? String == "a.bin" })
        #expect(row["state"] as? String == "due" && row["reason"] as? String == "in cache (one/a.bin)", "\(row)")
        let run = try s.run(config: config)
        #expect(run.status == 0 && s.exists("two/a.bin"), "\(run.diagnostics)")
        let status = try s.run(["status", "--json"], config: config)
        let cache = try #require(status.events.first { $0["type"] as? String == "cache" })
        #expect(cache["used"] as? Int == 300_000, "one inode, counted once: \(cache)")
    }

    /// Replacing a copy another path links frees nothing: the new version is admitted at its
    /// whole size, and waits when the cap cannot hold it beside the linked file.
    @Test func replacingALinkedCopyFreesNothing() throws {
        let s = try FaultHarness()
        let a = Self.bytes(300_000, 14), b = Self.bytes(300_000, 15), sha = FaultTests.sha(a)
        s.origin.serve("/a.bin", OriginResource(a, etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(b, etag: "\"b\""))
        let config = try s.dir.write("config.yaml", "max_cache_size: 500000\n")
        for feed in ["one", "two"] {
            try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha, more: "    size: 300000\n"), name: feed)
        }
        #expect(try s.run(config: config).status == 0)
        #expect(Self.inode(s, "one/a.bin") == Self.inode(s, "two/a.bin"))
        // two's a.bin becomes b's content: one still links the old file, so nothing is freed.
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/b.bin", sha256: FaultTests.sha(b), more: "    size: 300000\n"), name: "two")
        let plan = try s.run(["plan", "--json"], config: config)
        let row = try #require(plan.events.first { $0["feed"] as? String == "two" && $0["path"] as? String == "a.bin" })
        #expect(row["state"] as? String == "deferred" && row["reason"] as? String == "cache full (max_cache_size)", "\(row)")
        #expect(try s.run(config: config).status == 0)
        #expect(s.origin.requests(to: "/b.bin").isEmpty && s.digest("two/a.bin") == sha, "it waits: the cap holds")
    }

    /// A file chosen as a local source is not removed to make room in that pass, though a
    /// manifest dropped it; the work the cap then cannot admit waits.
    @Test func aSourceIsNotRemovedToMakeRoom() throws {
        let s = try FaultHarness()
        let a = Self.bytes(300_000, 12), b = Self.bytes(300_000, 13), sha = FaultTests.sha(a)
        s.origin.serve("/a.bin", OriginResource(a, etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(b, etag: "\"b\""))
        s.origin.serve("/c.bin", OriginResource(a, etag: "\"c\""))
        let config = try s.dir.write("config.yaml", "max_cache_size: 500000\n")
        try s.feed("resources:\n" + Self.entry("a.bin", url: "/a.bin", sha256: sha, more: "    size: 300000\n"), name: "one")
        #expect(try s.run(config: config).status == 0)
        // one drops a.bin (unlisted now: room for the cap) for b.bin; two lists a.bin's content.
        try s.feed("resources:\n" + Self.entry("b.bin", url: "/b.bin", sha256: FaultTests.sha(b), more: "    size: 300000\n"), name: "one")
        try s.feed("resources:\n" + Self.entry("c.bin", url: "/c.bin", sha256: sha, more: "    size: 300000\n"), name: "two")
        let run = try s.runJSON(config: config)
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(Self.placed(run, "two", "c.bin")?["from"] as? String == "one/a.bin", "\(run.stdout)")
        #expect(!run.events.contains { $0["type"] as? String == "removed" }, "the source is not room: \(run.stdout)")
        #expect(s.origin.requests(to: "/c.bin").isEmpty && s.origin.requests(to: "/b.bin").isEmpty, "b.bin waits for room")
    }

    /// `release` feeds: content that moves to another path in a new release is linked from
    /// the generation before, and content a release replaced is found in the older
    /// generation still on disk (`kept_files`).
    @Test func releaseGenerationsServeAsSources() throws {
        let s = try FaultHarness()
        let x = Self.bytes(60_000, 9), y = Self.bytes(60_000, 10)
        let (shaX, shaY) = (FaultTests.sha(x), FaultTests.sha(y))
        s.origin.serve("/1/a.bin", OriginResource(x, etag: "\"1a\""))
        s.origin.serve("/2/a.bin", OriginResource(y, etag: "\"2a\""))
        s.origin.serve("/3/c.bin", OriginResource(x, etag: "\"3c\""))
        let head = "consistency: release\nrefresh: 1h\nresources:\n"
        try s.feed(head + Self.entry("a.bin", url: "/1/a.bin", sha256: shaX))
        #expect(try s.run().status == 0)
        // Release 2: a.bin is new content (x stays in generation 1).
        try s.feed(head + Self.entry("a.bin", url: "/2/a.bin", sha256: shaY))
        #expect(try s.runJSON(offset: "+2h").status == 0)
        #expect(s.digest("t/a.bin") == shaY)
        // Release 3: c.bin lists x, which only the older generation holds.
        try s.feed(head + Self.entry("a.bin", url: "/2/a.bin", sha256: shaY) + Self.entry("c.bin", url: "/3/c.bin", sha256: shaX))
        let run = try s.runJSON(offset: "+4h")
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(Self.placed(run, "t", "c.bin")?["from"] as? String == "t/a.bin", "\(run.stdout)")
        #expect(s.origin.requests(to: "/3/c.bin").isEmpty && s.digest("t/c.bin") == shaX)
    }

    /// A pinned copy (sha256, no validators from its origin) is not requested at a release:
    /// `fresh`, reason `pinned`, `next` null; a changed mtime has it hashed again (still
    /// good: no request); its bytes changed, it is fetched as a missing file.
    @Test func aPinnedCopyIsNotFetchedToLearnWhatThePinSays() throws {
        let s = try FaultHarness()
        let body = Self.bytes(70_000, 11), sha = FaultTests.sha(body)
        s.origin.serve("/p.bin", OriginResource(body))  // neither ETag nor Last-Modified
        // An hourly release: each run below, two hours apart, is at a new one.
        try s.feed("schedule: \"0 * * * *\"\nrefresh: 1h\nresources:\n" + Self.entry("p.bin", url: "/p.bin", sha256: sha))
        #expect(try s.run().status == 0)
        let row = try #require(try s.plan(offset: "+2h").first { $0["path"] as? String == "p.bin" })
        #expect(row["state"] as? String == "fresh" && row["reason"] as? String == "pinned" && row["next"] is NSNull, "\(row)")
        let quiet = try s.runJSON(offset: "+2h")
        #expect(quiet.status == 0 && s.origin.requests(to: "/p.bin").count == 1, "not requested: \(quiet.diagnostics)")
        #expect(quiet.events.last?["fresh"] as? Int == 0, "not a fresh (304)")
        let file = s.cache.appendingPathComponent("t/p.bin").path
        #expect(utime(file, nil) == 0)  // a new mtime: hashed again, still its pin
        #expect(try s.runJSON(offset: "+4h").status == 0 && s.origin.requests(to: "/p.bin").count == 1)
        var damaged = body
        damaged[5] ^= 1
        try Data(damaged).write(to: URL(fileURLWithPath: file))
        let planned = try s.plan(offset: "+6h")
        let due = try #require(planned.first { $0["path"] as? String == "p.bin" })
        #expect(due["state"] as? String == "due" && due["reason"] as? String == "not cached", "not its own source: \(due)")
        let repaired = try s.runJSON(offset: "+6h")
        #expect(repaired.status == 0 && repaired.placed("p.bin"), "\(repaired.diagnostics) \(planned)")
        #expect(s.origin.requests(to: "/p.bin").count == 2 && s.digest("t/p.bin") == sha)
    }
}
