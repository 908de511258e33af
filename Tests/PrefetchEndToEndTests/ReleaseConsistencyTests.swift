import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6, "All-or-nothing releases": with `consistency: release`, `CACHE/<feed>` is a
/// relative symlink to a generation folder; a release is staged in the next one (unchanged
/// files hard-linked) and one atomic rename of the symlink switches readers to it whole.
@Suite(.serialized) struct ReleaseConsistencyTests {
    static func version(_ name: String, _ v: Int, size: Int = 3000) -> [UInt8] {
        FaultTests.bytes(size, seed: UInt64(v * 1000 + name.utf8.reduce(0) { $0 &* 31 &+ Int($1) } % 997))
    }

    static func digest(_ name: String, _ v: Int) -> String { FaultTests.sha(version(name, v)) }

    /// `CACHE/t`'s symlink text, or nil when it is not a symlink.
    static func link(_ s: FaultHarness, _ feed: String = "t") -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(s.cache.appendingPathComponent(feed).path, &buffer, buffer.count - 1)
        return count < 0 ? nil : String(cString: Array(buffer[0..<count]) + [0])
    }

    static func generations(_ s: FaultHarness, _ feed: String = "t") -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: s.cache.appendingPathComponent(".prefetch/generations/\(feed)").path)) ?? []).sorted()
    }

    static func inode(_ path: String) -> UInt64? {
        var info = Glibc.stat()
        return lstat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    static func serve(_ s: FaultHarness, _ names: [String], version v: Int, lastModified: Bool = false) {
        for name in names { s.origin.serve("/\(name)", OriginResource(version(name, v), etag: "\"\(name)-\(v)\"")) }
    }

    static let feed = "refresh: 1h\nconsistency: release\nretry: { attempts: 1, backoff: 1s }\nresources:\n"
        + "  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n  - url: ORIGIN/c.bin\n"

    /// The first release goes live whole; the next one is staged beside it, unchanged files
    /// hard-linked (same inode, never fetched again), and switched to at once; the previous
    /// generation stays until the switch after; a release answered wholly by 304s makes no
    /// new generation.
    @Test func aReleaseGoesLiveWholeWithUnchangedFilesLinked() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed)
        let first = try s.runJSON()
        #expect(first.status == 0, "\(first.diagnostics)")
        let live1 = try #require(Self.link(s), "CACHE/t is a symlink")
        #expect(live1.hasPrefix(".prefetch/generations/t/"), "relative, to one of its own generations: \(live1)")
        for name in ["a.bin", "b.bin", "c.bin"] { #expect(s.digest("t/\(name)") == Self.digest(name, 1)) }
        let index1 = try ReaderIndexTests.index(s)
        #expect(index1["complete"] as? Bool == true, "\(index1)")
        #expect(FileManager.default.fileExists(atPath: s.cache.appendingPathComponent(live1 + "/.prefetch-index.json").path),
                "the index lives inside the generation")
        let aBefore = try #require(Self.inode(s.cache.appendingPathComponent("t/a.bin").path))

        // The next release: b changed, a and c answer 304.
        s.origin.serve("/b.bin", OriginResource(Self.version("b.bin", 2), etag: "\"b.bin-2\""))
        let second = try s.runJSON(offset: "+2h")
        #expect(second.status == 0, "\(second.diagnostics)")
        let live2 = try #require(Self.link(s))
        #expect(live2 != live1)
        #expect(s.digest("t/b.bin") == Self.digest("b.bin", 2) && s.digest("t/a.bin") == Self.digest("a.bin", 1))
        #expect(Self.inode(s.cache.appendingPathComponent("t/a.bin").path) == aBefore, "an unchanged file is a hard link")
        #expect(s.origin.requests(to: "/a.bin").count == 2 && s.origin.requests(to: "/a.bin").last?.header("if-none-match") == "\"a.bin-1\"")
        // The previous generation is still whole for a reader in the middle of it.
        let previous = s.cache.appendingPathComponent(live1)
        #expect((try? Data(contentsOf: previous.appendingPathComponent("b.bin"))).map { FaultTests.sha([UInt8]($0)) } == Self.digest("b.bin", 1))
        #expect(Self.generations(s).count == 2, "\(Self.generations(s))")

        // Wholly 304s: no new generation; the live index is replaced in place.
        let third = try s.runJSON(offset: "+4h")
        #expect(third.status == 0, "\(third.diagnostics)")
        #expect(Self.link(s) == live2)
        #expect(Self.generations(s).count == 2, "no generation made nor removed: \(Self.generations(s))")
        // The one after: c changes; the switch removes the generation before the previous one.
        s.origin.serve("/c.bin", OriginResource(Self.version("c.bin", 2), etag: "\"c.bin-2\""))
        #expect(try s.runJSON(offset: "+6h").status == 0)
        let live3 = try #require(Self.link(s))
        #expect(live3 != live2 && Self.generations(s) == [live2, live3].map { String($0.split(separator: "/").last!) }.sorted(),
                "kept: the live one and the previous one: \(Self.generations(s))")
        #expect(s.digest("t/c.bin") == Self.digest("c.bin", 2))
    }

    /// Until a release is finished readers see none of it: a resource in backoff keeps the
    /// release open and the new copies staged; when it arrives, all go live at once. A
    /// failed update (the release ends with it failed) keeps the old copy of that file.
    @Test func anUnfinishedReleaseIsNotSeenAndAFailedUpdateKeepsTheOldCopy() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed.replacingOccurrences(of: "attempts: 1, backoff: 1s", with: "attempts: 3, backoff: 1h"))
        #expect(try s.runJSON().status == 0)
        let live1 = try #require(Self.link(s))
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 2)
        s.origin.inject("/b.bin", [.status(500)])  // b backs off for an hour: the release stays open
        #expect(try s.runJSON(offset: "+2h").status == 1)
        #expect(Self.link(s) == live1, "nothing switched")
        for name in ["a.bin", "b.bin", "c.bin"] { #expect(s.digest("t/\(name)") == Self.digest(name, 1), "readers see the old set: \(name)") }
        #expect(try ReaderIndexTests.index(s)["complete"] as? Bool == true, "the live index still describes the live set")
        #expect(Self.generations(s).count == 3, "previous (empty first), live, staged: \(Self.generations(s))")
        let liveNumber = try #require(Int(live1.split(separator: "/").last ?? ""))
        let status = try s.run(["status"], environment: ["PREFETCH_CLOCK_OFFSET": "+2h"])
        #expect(status.stdout.contains("release: generation \(liveNumber) live, generation \(liveNumber + 1) staged"), "\(status.stdout)")
        let statusJSON = try s.run(["status", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+2h"]).events.first { $0["type"] as? String == "feed" }
        #expect(statusJSON?["consistency"] as? String == "release" && statusJSON?["generation"] as? Int == liveNumber
                && statusJSON?["staged_generation"] as? Int == liveNumber + 1, "\(statusJSON ?? [:])")
        // The backoff is over: b arrives, and the whole new set goes live.
        let done = try s.runJSON(offset: "+3h10m")
        #expect(done.status == 0, "\(done.diagnostics)")
        #expect(Self.link(s) != live1)
        for name in ["a.bin", "b.bin", "c.bin"] { #expect(s.digest("t/\(name)") == Self.digest(name, 2), "the new set: \(name)") }

        // A release whose update of c fails for good: it finishes with c failed, and the
        // new generation keeps c's old copy.
        let live2 = try #require(Self.link(s))
        Self.serve(s, ["a.bin", "b.bin"], version: 3)
        s.origin.inject("/c.bin", [.status(404)])
        #expect(try s.runJSON(offset: "+6h").status == 1)
        #expect(Self.link(s) != live2, "the release finished: it switched")
        #expect(s.digest("t/a.bin") == Self.digest("a.bin", 3) && s.digest("t/c.bin") == Self.digest("c.bin", 2))
        #expect(try ReaderIndexTests.index(s)["complete"] as? Bool == false)
    }

    /// Switching a feed between `file` and `release` keeps every cached file (the same
    /// inodes, nothing fetched again), and `CACHE/t` is never missing for a reader.
    @Test func switchingModeKeepsEveryFileAndTheFolderNeverGoesMissing() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        let plain = Self.feed.replacingOccurrences(of: "consistency: release\n", with: "")
        try s.feed(plain)
        #expect(try s.runJSON().status == 0)
        #expect(Self.link(s) == nil, "a plain folder")
        let inodes = ["a.bin", "b.bin", "c.bin"].map { Self.inode(s.cache.appendingPathComponent("t/\($0)").path) }
        let requests = s.origin.requests.count
        let watcher = FolderWatcher(s.cache.appendingPathComponent("t/a.bin").path)
        try s.feed(Self.feed)
        #expect(try s.runJSON(offset: "+10m").status == 0)
        let live = try #require(Self.link(s), "now a symlink to a generation")
        #expect(live.hasPrefix(".prefetch/generations/t/"))
        #expect(["a.bin", "b.bin", "c.bin"].map { Self.inode(s.cache.appendingPathComponent("t/\($0)").path) } == inodes)
        #expect(try ReaderIndexTests.index(s)["complete"] as? Bool == true)
        try s.feed(plain)
        #expect(try s.runJSON(offset: "+20m").status == 0)
        #expect(Self.link(s) == nil, "a plain folder again")
        #expect(["a.bin", "b.bin", "c.bin"].map { Self.inode(s.cache.appendingPathComponent("t/\($0)").path) } == inodes)
        #expect(Self.generations(s).isEmpty && !s.exists(".prefetch/switch-t"), "nothing left behind")
        #expect(s.origin.requests.count == requests, "nothing fetched again")
        let misses = watcher.stop()
        #expect(watcher.looks > 100 && misses == 0, "\(misses) of \(watcher.looks) looks found t/a.bin missing")
    }

    /// `gc`'s prune, `verify` and a removed feed work on generations: prune removes an
    /// unlisted file from the live generation; a corrupted file is removed from the live
    /// generation (its index then says incomplete) and fetched again; nothing outside the
    /// cache is followed.
    @Test func gcVerifyAndRemovalUnderstandGenerations() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed.replacingOccurrences(of: "consistency: release\n", with: "consistency: release\nprune: true\n"))
        #expect(try s.runJSON().status == 0)
        let live = try #require(Self.link(s))
        // A file changed behind prefetch's back, in the live generation.
        let corrupt = s.cache.appendingPathComponent("t/b.bin")
        var bytes = Self.version("b.bin", 1)
        bytes[10] ^= 0xff
        try Data(bytes).write(to: corrupt)
        let verify = try s.run(["verify"])
        #expect(verify.status == 1 && verify.stdout.contains("mismatch  t/b.bin"), "\(verify.stdout)\(verify.stderr)")
        #expect(!s.exists("t/b.bin") && Self.link(s) == live)
        #expect(try ReaderIndexTests.index(s)["complete"] as? Bool == false)
        #expect(try s.runJSON(offset: "+10m").status == 0)
        #expect(s.digest("t/b.bin") == Self.digest("b.bin", 1), "fetched again")
        // An unlisted file is pruned from what readers see.
        try s.feed(Self.feed.replacingOccurrences(of: "consistency: release\n", with: "consistency: release\nprune: true\n")
            .replacingOccurrences(of: "  - url: ORIGIN/c.bin\n", with: ""))
        let gc = try s.run(["gc"])
        #expect(gc.status == 0 && gc.stdout.contains("t/c.bin"), "\(gc.stdout)\(gc.stderr)")
        #expect(!s.exists("t/c.bin") && s.exists("t/a.bin"))
        // A removed feed's symlink and generations go after the grace; nothing else does.
        let outside = s.dir.url.appendingPathComponent("outside.txt")
        try Data("keep".utf8).write(to: outside)
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n", name: "other")
        try FileManager.default.removeItem(at: s.dir.url.appendingPathComponent("feeds/t.yaml"))
        #expect(try s.run(["gc"]).status == 0)
        #expect(Self.link(s) != nil, "kept through the grace")
        let removed = try s.run(["gc"], environment: ["PREFETCH_CLOCK_OFFSET": "+8d"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(!s.exists("t") && Self.generations(s).isEmpty, "symlink and generations removed")
        #expect(FileManager.default.fileExists(atPath: outside.path))
    }

    /// Its own symlink whose generations were removed by hand: the next run lays the feed
    /// out again and fetches it, rather than refusing every placement for good.
    @Test func aLiveGenerationRemovedByHandIsLaidOutAgain() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed)
        #expect(try s.runJSON().status == 0)
        try FileManager.default.removeItem(at: s.cache.appendingPathComponent(".prefetch/generations/t"))
        #expect(Self.link(s) != nil && !s.exists("t/a.bin"), "the link dangles")
        let again = try s.runJSON(offset: "+10m")
        #expect(again.status == 0, "\(again.diagnostics)")
        for name in ["a.bin", "b.bin", "c.bin"] { #expect(s.digest("t/\(name)") == Self.digest(name, 1), "fetched again: \(name)") }
        #expect(try ReaderIndexTests.index(s)["complete"] as? Bool == true)
    }

    /// A symlink at `CACHE/t` that prefetch did not make is never followed, whatever its
    /// text: not to a folder outside, nor to a generation path that climbs out.
    @Test func aPlantedSymlinkIsNeverFollowed() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed.replacingOccurrences(of: "consistency: release\n", with: "consistency: release\nprune: true\n"))
        let outside = s.dir.url.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("victim".utf8).write(to: outside.appendingPathComponent("victim.txt"))
        try FileManager.default.createDirectory(at: s.cache.appendingPathComponent(".prefetch/generations/t/1"), withIntermediateDirectories: true)
        for (release, text) in [outside.path, ".prefetch/generations/t/1/../../../../../outside", "../outside"].enumerated() {
            try? FileManager.default.removeItem(at: s.cache.appendingPathComponent("t"))
            #expect(symlink(text, s.cache.appendingPathComponent("t").path) == 0)
            let run = try s.runJSON(offset: "+\(2 * release)h")  // a new release each time: a refused placement fails its release
            #expect(run.status == 1 && run.events.filter { $0["type"] as? String == "failed" }.count == 3, "every placement refused: \(text)")
            #expect(try s.run(["gc"]).status == 0)
            #expect(try s.run(["verify"]).status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["victim.txt"], "\(text)")
            #expect(Self.link(s) == text, "left as it is")
        }
    }

    /// While a release is staged, a file that fails `verify` goes from the live generation
    /// too (it is the same file, hard-linked), and the live index says so; the release then
    /// fetches it again and goes live whole.
    @Test func aCorruptFileLeavesTheLiveGenerationWhileAReleaseIsStaged() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed.replacingOccurrences(of: "attempts: 1, backoff: 1s", with: "attempts: 3, backoff: 1h")
            .replacingOccurrences(of: "  - url: ORIGIN/c.bin\n", with: "  - url: ORIGIN/c.bin\n    sha256: \(Self.digest("c.bin", 1))\n"))
        #expect(try s.runJSON().status == 0)
        let live = try #require(Self.link(s))
        s.origin.serve("/a.bin", OriginResource(Self.version("a.bin", 2), etag: "\"a.bin-2\""))
        s.origin.inject("/b.bin", [.status(500)])  // the release stays open, a's new copy staged
        #expect(try s.runJSON(offset: "+2h").status == 1)
        #expect(Self.link(s) == live && Self.generations(s).count == 3)
        // One byte of c changes on the card, in place: live and staged copies are one file.
        let fd = open(s.cache.appendingPathComponent("t/c.bin").path, O_WRONLY)
        #expect(fd >= 0 && pwrite(fd, [UInt8(0x55)], 1, 7) == 1)
        close(fd)
        let verify = try s.run(["verify"], environment: ["PREFETCH_CLOCK_OFFSET": "+2h"])
        #expect(verify.status == 1 && verify.stdout.contains("mismatch  t/c.bin"), "\(verify.stdout)\(verify.stderr)")
        #expect(!s.exists("t/c.bin"), "gone from what readers see")
        let index = try ReaderIndexTests.index(s)
        #expect(index["complete"] as? Bool == false && ReaderIndexTests.files(index)["c.bin"] == nil, "\(index)")
        #expect(ReaderIndexTests.missing(index)["c.bin"]?["reason"] as? String == "failed verification", "\(index)")
        #expect(s.digest("t/a.bin") == Self.digest("a.bin", 1), "the live set is otherwise untouched")
        // b's backoff ends: c is fetched again, and the whole new set goes live.
        let done = try s.runJSON(offset: "+3h10m")
        #expect(done.status == 0, "\(done.diagnostics)")
        #expect(Self.link(s) != live)
        #expect(s.digest("t/a.bin") == Self.digest("a.bin", 2) && s.digest("t/c.bin") == Self.digest("c.bin", 1))
        #expect(try ReaderIndexTests.index(s)["complete"] as? Bool == true)
    }

    /// `kill -9` in the middle of a release's placements: readers keep the old set; the next
    /// run goes on with the staged generation and switches when the release is finished.
    @Test func aReleaseCutShortByKillIsFinishedByTheNextRun() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed)
        #expect(try s.runJSON().status == 0)
        let live = try #require(Self.link(s))
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 2)
        let killed = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "rename:kill@2"])
        #expect(killed.status == Int32(SIGKILL), "\(killed.diagnostics)")
        #expect(Self.link(s) == live)
        for name in ["a.bin", "b.bin", "c.bin"] { #expect(s.digest("t/\(name)") == Self.digest(name, 1), "the old set: \(name)") }
        let again = try s.runJSON(offset: "+2h")
        #expect(again.status == 0, "\(again.diagnostics)")
        #expect(Self.link(s) != live)
        for name in ["a.bin", "b.bin", "c.bin"] { #expect(s.digest("t/\(name)") == Self.digest(name, 2), "the new set: \(name)") }
        #expect(!Self.generations(s).contains { $0.contains(".") }, "no generation left half-built: \(Self.generations(s))")
    }

    /// The Python reader of docs/cache.md, run as written against a release feed: it reads the live
    /// generation's index, and every file through the folder it opened.
    @Test func theManualsPythonReaderReadsOneGeneration() throws {
        let s = try FaultHarness()
        Self.serve(s, ["a.bin", "b.bin", "c.bin"], version: 1)
        try s.feed(Self.feed)
        #expect(try s.runJSON().status == 0)
        let reader = try #require(try MarkdownDocument("docs/cache.md").block(after: "A reader in ten lines of Python")).text
        #expect(reader.split(separator: "\n").count <= 11, "ten lines, and the call")
        let script = reader.replacingOccurrences(of: "\"/var/cache/prefetch\", \"lobby-loop\"", with: "\"\(s.cache.path)\", \"t\"")
            + "import hashlib\nfor path, name in sorted(ready.items()): print(path, hashlib.sha256(open(name, 'rb').read()).hexdigest())\n"
        try s.dir.write("reader.py", script)
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = [s.dir.url.appendingPathComponent("reader.py").path]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        #expect(python.terminationStatus == 0)
        #expect(text == ["a.bin", "b.bin", "c.bin"].map { "\($0) \(Self.digest($0, 1))\n" }.joined(), "\(text)")
    }

    /// Seeded random lives of a feed (`PREFETCH_RELEASE_SEED` replays one; the seed is in
    /// every failure): releases in which each file stays, changes or fails its update, runs
    /// killed at a placement and finished by the next, switches between `file` and `release`,
    /// and runs with nothing to do — checked after every run against a model kept by the test
    /// alone: readers see exactly the set of the last finished release (a failed update keeps
    /// its old copy, a killed release shows nothing of itself), `CACHE/t` is a symlink to one
    /// of at most three generations in release mode and a plain folder in file mode, and
    /// nothing half-built or swapped out is left behind.
    @Test func seededLivesShowExactlyTheLastFinishedRelease() throws {
        let given: UInt64? = ProcessInfo.processInfo.environment["PREFETCH_RELEASE_SEED"].flatMap { UInt64($0) }
        let seeds: [UInt64] = given.map { [$0] } ?? [81, 82, 83, 84, 85]
        for seed in seeds {
            var random = SplitMix64(seed: seed)
            let s = try FaultHarness()
            let names = ["a.bin", "b.bin", "c.bin", "d/e.bin"]
            var live: [String: Int] = [:]  // the model: the version readers must see
            var version: [String: Int] = [:]  // what the origin serves
            for name in names { version[name] = 1; s.origin.serve("/\(name)", OriginResource(Self.version(name, 1), etag: "\"\(name)-1\"")) }
            var mode = Consistency.release
            func writeFeed() throws {
                try s.feed("refresh: 1h\nconsistency: \(mode.rawValue)\nretry: { attempts: 1, backoff: 1s }\nlimits: { concurrency: 1 }\nresources:\n"
                           + names.map { "  - url: ORIGIN/\($0)\n    path: \($0)\n" }.joined())
            }
            try writeFeed()
            var hour = 0
            var story: [String] = []
            func check(_ label: String) {
                let where_ = "seed \(seed), after \(story.joined(separator: "; ")): \(label)"
                if mode == .release {
                    let link = Self.link(s)
                    #expect(link?.hasPrefix(".prefetch/generations/t/") == true, "\(where_): CACHE/t is \(link ?? "not a symlink")")
                    let generations = Self.generations(s)
                    #expect(generations.count <= 3 && generations.allSatisfy { Int($0) != nil }, "\(where_): generations \(generations)")
                } else {
                    #expect(Self.link(s) == nil && s.stat("t").map { ($0.st_mode & S_IFMT) == S_IFDIR } == true, "\(where_): not a plain folder")
                    #expect(Self.generations(s).isEmpty, "\(where_): generations left \(Self.generations(s))")
                }
                #expect(!s.exists(".prefetch/switch-t"), "\(where_): a swapped-out folder or link is left")
                for name in names {
                    let expected = live[name].map { Self.digest(name, $0) }
                    #expect(s.digest("t/\(name)") == expected, "\(where_): \(name) should be version \(live[name].map(String.init) ?? "none")")
                }
            }
            // The first release: every file.
            #expect(try s.runJSON().status == 0)
            for name in names { live[name] = 1 }
            story.append("first release")
            check("first release")
            for _ in 0..<12 {
                hour += 2
                let draw = random.next() % 100
                if draw < 15 {  // a new mode, with the release that comes
                    mode = mode == .release ? .file : .release
                    try writeFeed()
                    story.append("mode \(mode.rawValue), nothing changed")
                    #expect(try s.runJSON(offset: "+\(hour)h").status == 0, "seed \(seed)")
                    check("mode switch")
                    continue
                }
                if draw < 30 && mode == .release {  // every file changes; killed at the second placement, finished by the next run
                    for name in names {
                        version[name]! += 1
                        s.origin.serve("/\(name)", OriginResource(Self.version(name, version[name]!), etag: "\"\(name)-\(version[name]!)\""))
                    }
                    story.append("all changed, killed at the 2nd placement")
                    let killed = try s.runJSON(offset: "+\(hour)h", environment: ["PREFETCH_FAULT": "rename:kill@2"])
                    #expect(killed.status == Int32(SIGKILL), "seed \(seed): \(killed.diagnostics)")
                    check("killed mid-release: readers keep the old set")
                    story.append("the next run")
                    #expect(try s.runJSON(offset: "+\(hour)h").status == 0, "seed \(seed)")
                    for name in names { live[name] = version[name] }
                    check("finished after the kill")
                    continue
                }
                // A release: each file stays, changes, or its update fails (the old copy stays).
                var failing: [String] = []
                var changes: [String] = []
                for name in names {
                    let pick = random.next() % 100
                    if pick < 40 { continue }
                    version[name]! += 1
                    s.origin.serve("/\(name)", OriginResource(Self.version(name, version[name]!), etag: "\"\(name)-\(version[name]!)\""))
                    if pick < 80 { changes.append(name) } else { failing.append(name); s.origin.inject("/\(name)", [.status(500)]) }
                }
                story.append("changed \(changes), failing \(failing)")
                let run = try s.runJSON(offset: "+\(hour)h")
                #expect(run.status == (failing.isEmpty ? 0 : 1), "seed \(seed): \(run.diagnostics)")
                for name in changes { live[name] = version[name] }
                check("a release")
                // The origin goes back to the version the cache has for a failed one: that is
                // what it serves next time unless it changes again.
                for name in failing {
                    version[name] = live[name]
                    s.origin.serve("/\(name)", OriginResource(Self.version(name, version[name]!), etag: "\"\(name)-\(version[name]!)\""))
                }
                if random.next() % 4 == 0 {  // later in the same release: nothing to do, nothing moves
                    story.append("a run with nothing to do")
                    #expect(try s.runJSON(offset: "+\(hour)h10m").status == 0, "seed \(seed)")
                    check("nothing to do")
                }
            }
        }
    }

    /// A reader polls during a switch — 120 files, a slow origin — opening `CACHE/t` once per
    /// look and reading every file and the index below that one folder, as an application
    /// does: it sees the whole old set or the whole new set, each matching its index, never
    /// a mix and never the folder missing.
    @Test func aReaderDuringASwitchNeverSeesAMix() throws {
        let s = try FaultHarness()
        let names = (0..<120).map { "f\($0).bin" }
        Self.serve(s, names, version: 1)
        try s.feed("refresh: 1h\nconsistency: release\nresources:\n" + names.map { "  - url: ORIGIN/\($0)\n" }.joined())
        #expect(try s.runJSON().status == 0)
        let versions = [1, 2].map { v in Dictionary(uniqueKeysWithValues: names.map { ($0, FaultTests.sha(Self.version($0, v))) }) }
        let reader = ReleaseReader(folder: s.cache.appendingPathComponent("t").path, names: names, versions: versions)
        Self.serve(s, names, version: 2)
        for name in names { s.origin.inject("/\(name)", [.delay(seconds: 0.04)]) }  // about a second in all, six at a time
        let run = try s.runJSON(offset: "+2h")
        #expect(run.status == 0, "\(run.diagnostics)")
        Thread.sleep(forTimeInterval: 0.1)  // a few looks at the new set
        let seen = reader.stop()
        #expect(seen.problems.isEmpty, "\(seen.problems.prefix(5))")
        #expect(seen.whole[1, default: 0] > 5 && seen.whole[2, default: 0] > 0,
                "the reader saw the old set and then the new one, each whole: \(seen.whole) in \(seen.looks) looks")
    }
}

/// An application reading a release feed: opens `CACHE/<feed>` once per look (following its
/// symlink), reads the index and every file below that descriptor, and tells which
/// version the set is — one version whole, matching its index — or what was wrong.
final class ReleaseReader: @unchecked Sendable {
    struct Seen {
        var looks = 0
        /// Looks that found one version whole, by version.
        var whole: [Int: Int] = [:]
        var problems: [String] = []
    }
    private let lock = NSLock()
    private var running = true
    private var seen = Seen()
    private let done = DispatchSemaphore(value: 0)

    init(folder: String, names: [String], versions: [[String: String]]) {
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                let result = Self.look(folder, names, versions)
                lock.withLock {
                    seen.looks += 1
                    switch result {
                    case .success(let v): seen.whole[v, default: 0] += 1
                    case .failure(let problem): if seen.problems.count < 20 { seen.problems.append(problem.text) }
                    }
                }
            }
            done.signal()
        }
    }

    struct Problem: Error { let text: String }

    private static func read(_ name: String, in folder: Int32) -> [UInt8]? {
        let fd = openat(folder, name, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(fd, &buffer, buffer.count)
            if n <= 0 { return n == 0 ? out : nil }
            out += buffer[0..<n]
        }
    }

    private static func look(_ folder: String, _ names: [String], _ versions: [[String: String]]) -> Result<Int, Problem> {
        let dir = open(folder, O_RDONLY | O_DIRECTORY)
        guard dir >= 0 else { return .failure(Problem(text: "the feed's folder is missing: errno \(errno)")) }
        defer { close(dir) }
        guard let indexBytes = read(".prefetch-index.json", in: dir),
              let index = try? JSONSerialization.jsonObject(with: Data(indexBytes)) as? [String: Any],
              let files = index["files"] as? [[String: Any]] else { return .failure(Problem(text: "no readable index")) }
        let indexed = Dictionary(files.map { ($0["path"] as? String ?? "", $0["sha256"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
        var found: Set<Int> = []
        for name in names {
            guard let bytes = read(name, in: dir) else { return .failure(Problem(text: "\(name) missing")) }
            let digest = FaultTests.sha(bytes)
            guard let v = versions.firstIndex(where: { $0[name] == digest }) else { return .failure(Problem(text: "\(name): unknown content")) }
            guard indexed[name] == digest else { return .failure(Problem(text: "\(name): the index says another version")) }
            found.insert(v + 1)
        }
        guard found.count == 1, let only = found.first else { return .failure(Problem(text: "a mix of versions \(found.sorted())")) }
        return .success(only)
    }

    /// Stops reading; what it saw.
    func stop() -> Seen {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { seen }
    }
}

/// Looks at one path as fast as it can on its own thread, counting the looks that found
/// nothing there.
final class FolderWatcher: @unchecked Sendable {
    private let path: String
    private let lock = NSLock()
    private var running = true
    private var missing = 0
    private(set) var looks = 0
    private let done = DispatchSemaphore(value: 0)

    init(_ path: String) {
        self.path = path
        Thread.detachNewThread { [self] in
            while lock.withLock({ running }) {
                var info = Glibc.stat()
                let found = stat(path, &info) == 0
                lock.withLock {
                    looks += 1
                    if !found { missing += 1 }
                }
            }
            done.signal()
        }
    }

    /// Stops looking; the looks that found nothing.
    func stop() -> Int {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { missing }
    }
}
