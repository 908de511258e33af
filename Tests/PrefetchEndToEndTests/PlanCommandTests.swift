import Foundation
import Testing
import TestSupport
import PrefetchCore

/// `prefetch plan` through the real binary, against state written by the state layer.
@Suite struct PlanCommandTests {
    static let nightly = """
    name: lobby
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
    window: "01:00-05:00"
    jitter: 20m
    conditions: { network: unmetered, power: ac, min_free_space: 1GiB }
    resources:
      - url: https://cdn.example.com/loop/intro.mp4?sig=SECRET
        path: loop/intro.mp4
        size: 700MiB
        priority: high
      - url: https://cdn.example.com/loop/menu.html
        path: loop/menu.html
      - url: https://cdn.example.com/loop/poster.png
        path: loop/poster.png
        size: 2MiB
      - url: https://cdn.example.com/loop/sale.mp4
        path: loop/sale.mp4
        size: 50MiB
        not_before: 2026-12-01
      - url: https://cdn.example.com/loop/old.mp4
        path: loop/old.mp4
        expires: 2026-11-01T00:00:00Z
      - url: https://cdn.example.com/loop/broken.mp4
        path: loop/broken.mp4
      - url: https://cdn.example.com/loop/flaky.mp4
        path: loop/flaky.mp4
        size: 10MiB
    """

    static let image = """
    name: image
    timezone: UTC
    resources:
      - url: https://images.example.com/kiosk.img
        size: 3GiB
    """

    static func at(_ text: String) -> Instant {
        guard case .instant(let instant) = try! Timestamp.parse(text) else { fatalError(text) }
        return instant
    }

    /// A feeds folder, and a cache with state recorded by `StateStore` and one placed file.
    static func fixture() throws -> TemporaryFolder {
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby.yaml", nightly)
        try dir.write("feeds/image.yaml", image)
        try dir.write("cache/lobby/loop/poster.png", "poster")
        try FileManager.default.createDirectory(at: dir.url.appendingPathComponent("cache/.prefetch"), withIntermediateDirectories: true)
        let store = try StateStore.openForWriting(dir.url.path + "/cache/.prefetch/state.db")
        let release = at("2026-11-30T02:30:00+01:00")
        let hash = { (url: String) in try! ResourceURL.parse(url).identityHash }
        // The manifest entries' fingerprints, as a run records them with a failure.
        let (feed, _) = FeedDecoder(config: Config()).decode(Array(nightly.utf8), file: "lobby.yaml")
        let entry = { (path: String) in feed!.resources.first { $0.path == path }!.fingerprint }
        try store.recordRelease(feed: "lobby", release: release)
        try store.recordValidated(ResourceKey(feed: "lobby", path: "loop/poster.png"), urlHash: hash("https://cdn.example.com/loop/poster.png"),
                                  validators: Validators(etag: "\"p1\""), length: 2 << 20, sha256: nil, placed: true,
                                  at: at("2026-11-30T02:51:00+01:00"))
        try store.recordFailure(ResourceKey(feed: "lobby", path: "loop/broken.mp4"), urlHash: hash("https://cdn.example.com/loop/broken.mp4"),
                                entry: entry("loop/broken.mp4"), release: release, error: "HTTP 404", permanent: true, nextRetry: nil, at: at("2026-11-30T02:52:00+01:00"))
        try store.recordFailure(ResourceKey(feed: "lobby", path: "loop/flaky.mp4"), urlHash: hash("https://cdn.example.com/loop/flaky.mp4"),
                                entry: entry("loop/flaky.mp4"), release: release, error: "HTTP 503", permanent: false, nextRetry: at("2026-11-30T03:10:00+01:00"),
                                at: at("2026-11-30T02:55:00+01:00"))
        try store.recordPartial(ResourceKey(feed: "lobby", path: "loop/intro.mp4"),
                                PartialState(urlHash: hash("https://cdn.example.com/loop/intro.mp4?sig=SECRET"), validators: Validators(etag: "\"i1\""),
                                             totalLength: 700 << 20, syncedOffset: 300 << 20, updatedAt: at("2026-11-30T02:58:00+01:00")))
        // Its file on disk (sparse): a partial the run would resume is one it finds (SPEC §7).
        let partials = dir.url.appendingPathComponent("cache/.prefetch/partial")
        try FileManager.default.createDirectory(at: partials, withIntermediateDirectories: true)
        let partial = partials.appendingPathComponent(CacheFolder.partialName(feed: "lobby", path: "loop/intro.mp4")).path
        #expect(FileManager.default.createFile(atPath: partial, contents: nil) && truncate(partial, 300 << 20) == 0)
        return dir
    }

    static let environment = ["PREFETCH_MACHINE_ID": "kiosk-17", "TZ": "UTC"]
    static let arguments = ["plan", "--feeds", "feeds", "--cache", "cache", "--at", "2026-11-30T03:00:00+01:00",
                            "--assume", "network=unmetered,power=ac,free=50GiB"]

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/plan")

    /// Compares with `Fixtures/plan/NAME` (`Golden`; `PREFETCH_RECORD_GOLDEN=1` records).
    static func expectGolden(_ text: String, _ name: String) throws {
        let file = fixtures.appendingPathComponent(name)
        #expect(try Golden.matches(text, file), "differs from \(file.path)")
    }

    @Test func goldenText() throws {
        let dir = try Self.fixture()
        let result = try BinaryRunner.run(Self.arguments, in: dir.url, environment: Self.environment)
        #expect(result.status == 0)
        #expect(result.stderr == "")
        try Self.expectGolden(result.stdout, "lobby.txt")
        #expect(!result.stdout.contains("SECRET"))
    }

    @Test func goldenJSON() throws {
        let dir = try Self.fixture()
        let result = try BinaryRunner.run(Self.arguments + ["--json"], in: dir.url, environment: Self.environment)
        #expect(result.status == 0)
        try Self.expectGolden(result.stdout, "lobby.jsonl")
        let lines = result.stdout.split(separator: "\n").map { try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(lines.first?["type"] as? String == "feed")
        #expect(lines.last?["type"] as? String == "total")
        for line in lines where line["type"] as? String == "resource" {
            for field in ["feed", "path", "url", "state", "reason", "next", "bytes", "remaining"] {
                #expect(line.keys.contains(field), "resource line lacks \(field)")
            }
        }
        for line in lines where line["type"] as? String == "feed" {
            let releases = try #require(line["next_releases"] as? [String])
            #expect(releases.count == 5 || line["feed"] as? String == "image")
            #expect(releases.allSatisfy { !$0.hasSuffix("Z") })
            #expect(line["jitter_s"] != nil && line["conditions"] != nil)
        }
    }

    @Test func planNeverCreatesTheCache() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/image.yaml", Self.image)
        let result = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "cache/sub"], in: dir.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("due    kiosk.img  not cached"))
        #expect(dir.listing() == ["feeds", "feeds/image.yaml"])
    }

    @Test func planNeverChangesRecordedState() throws {
        let dir = try Self.fixture()
        let db = dir.url.appendingPathComponent("cache/.prefetch/state.db")
        let before = try Data(contentsOf: db)
        let listing = dir.listing()
        _ = try BinaryRunner.run(Self.arguments, in: dir.url, environment: Self.environment)
        #expect(try Data(contentsOf: db) == before)
        #expect(dir.listing().filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") } == listing)
    }

    @Test func unreadableStateWarnsAndPlansAnyway() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/image.yaml", Self.image)
        try dir.write("cache/.prefetch/state.db", String(repeating: "garbage ", count: 100))
        let result = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "cache"], in: dir.url)
        #expect(result.status == 0)
        #expect(result.stderr.hasPrefix("cache/.prefetch/state.db: warning: cannot read the state"))
        #expect(result.stdout.contains("not cached"))
    }

    @Test func clockOffsetMovesEveryCommandsClock() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/w.yaml", "timezone: UTC\nwindow: \"02:00-04:00\"\nresources:\n  - url: https://e.com/a\n")
        func offset(to target: String) -> String {
            "\(Self.at(target).seconds - Int64(Date().timeIntervalSince1970))s"
        }
        let inside = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "c", "--json"], in: dir.url,
                                          environment: ["PREFETCH_CLOCK_OFFSET": "+" + offset(to: "2030-01-01T03:00:00Z")])
        #expect(inside.status == 0, "\(inside.stderr)")
        #expect(inside.stdout.contains(#""state":"due""#))
        let after = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "c", "--json"], in: dir.url,
                                         environment: ["PREFETCH_CLOCK_OFFSET": "+" + offset(to: "2030-01-01T05:00:00Z")])
        #expect(after.stdout.contains(#""state":"deferred","reason":"window closed","next":"2030-01-02T02:00:00+00:00""#))
        // --at wins over the offset.
        let pinned = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "c", "--json", "--at", "2030-01-01T03:30:00Z"],
                                          in: dir.url, environment: ["PREFETCH_CLOCK_OFFSET": "+1h"])
        #expect(pinned.stdout.contains(#""state":"due""#))
    }

    @Test(arguments: [
        (["--at", "tomorrow"], [:], "prefetch: error: --at takes an RFC 3339 time with Z or an offset (2026-03-29T02:30:00+02:00) or HH:MM, not 'tomorrow'"),
        (["--assume", "network=wifi"], [:], "prefetch: error: --assume network= takes metered or unmetered, not 'wifi'"),
        ([], ["PREFETCH_CLOCK_OFFSET": "soon"], "prefetch: error: PREFETCH_CLOCK_OFFSET: expected a number in duration 'soon' (forms: 90s, 15m, 2h, 1d, 1h30m)"),
        ([], ["PREFETCH_CLOCK_OFFSET": "+3x"], "prefetch: error: PREFETCH_CLOCK_OFFSET: unknown duration unit 'x'; use s, m, h or d"),
    ] as [([String], [String: String], String)])
    func badInputIsAUsageError(_ extra: [String], _ environment: [String: String], _ message: String) throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/image.yaml", Self.image)
        let result = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "cache"] + extra, in: dir.url, environment: environment)
        #expect(result.status == 2)
        #expect(result.stdout == "")
        #expect(result.stderr.hasPrefix(message + "\nUsage: prefetch plan"))
    }

    @Test func brokenFeedsStopThePlan() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/bad.yaml", "schedule: \"61 * * * *\"\nresources: []\n")
        let result = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "cache"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stdout == "")
        #expect(result.stderr.hasPrefix("feeds/bad.yaml:1:12: error: 61 is out of range for the minute field (0–59)\n"))
        #expect(result.stderr.hasSuffix("prefetch: 1 error in the feeds; nothing was done\n"))
        let missing = try BinaryRunner.run(["plan", "--feeds", "nowhere", "--cache", "cache"], in: dir.url)
        #expect(missing.status == 2)
        let empty = try TemporaryFolder()
        try FileManager.default.createDirectory(at: empty.url.appendingPathComponent("feeds"), withIntermediateDirectories: true)
        let none = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "cache"], in: empty.url)
        #expect(none.status == 0)
        #expect(none.stderr == "feeds: warning: no feed manifests (*.yaml, *.yml) in this folder\n")
    }
}
