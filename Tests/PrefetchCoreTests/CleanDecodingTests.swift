import Foundation
import Testing
@testable import PrefetchCore

/// The short way a clean manifest file is read (`FeedDecoder.decodeClean`: each resource
/// straight from libyaml's events by `FlatItemCollector`, no node tree) against the one
/// every message comes from (`FeedDecoder.decode` of the bytes, through the tree): on seeded
/// random manifests made of clean entries and of every kind of trap (unknown, repeated and
/// quoted keys, anchors, aliases, tags, nulls, lists and mappings where values go, mirrors, values
/// over their limits, flow entries, bad values), the short way gives the same feed as the
/// tree whenever it gives one, gives one for every entry-wise clean file, and `FeedLoader`
/// reports exactly what the tree reports. `PREFETCH_CLEAN_SEED` replays a seed.
@Suite struct CleanDecodingTests {
    static let seed: UInt64 = {
        ProcessInfo.processInfo.environment["PREFETCH_CLEAN_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
    }()

    /// Lines of a resource entry (after its first key): clean ones, and traps.
    static let clean = [
        "path: a/b/{n}.bin", "path: \"q/{n} x.bin\"", "path: 'single/{n}.bin'",
        "sha256: " + String(repeating: "ab", count: 32), "size: 1024", "size: 2MiB", "max_size: 4GiB",
        "not_before: 2026-01-02T03:04:05Z", "expires: 2027-03-01", "expires: 2027-01-01T00:00:00+01:00",
        "priority: high", "priority: low", "encoding: keep", "encoding: decode",
        "headers: { Authorization: \"Bearer ${TOKEN}\" }", "headers:\n      X-Api-Key: k{n}\n      Accept-Language: de",
        "mirrors: [https://m1.example/v/{n}.mp4, \"https://m2.example:8443/v/{n}.mp4?t=1\"]", "mirrors:\n      - https://m3.example/{n}.bin",
    ]
    static let traps = [
        "pathh: x", "\"path\": quoted/{n}.bin", "path: &p anchored/{n}.bin", "size: !!str 12", "path:", "path: ~",
        "size: [1, 2]", "headers: [a, b]", "headers: { X: { deep: 1 } }", "sha256: ABCDEF", "sha256: "
            + String(repeating: "AB", count: 32), "size: -1", "size: lots", "priority: urgent", "encoding: gzip",
        "path: ../up", "path: /abs/{n}", "path: dup.bin", "expires: 2020-01-01T00:00:00Z\n    not_before: 2021-01-01T00:00:00Z",
        "url: https://twice.example/{n}", "path: " + String(repeating: "p", count: 300),
        "headers: { X-Long: " + String(repeating: "v", count: 9000) + " }", "max_size: 0", "size: 5GiB\n    max_size: 1GiB",
        "mirrors: [https://cdn.example.com/v/{n}.mp4]", "mirrors: https://m.example/{n}", "mirrors: [ftp://m.example/{n}]",
        "mirrors: [[https://m.example/{n}]]", "mirrors: [https://" + String(repeating: "m", count: 9000) + "/{n}]",
    ]
    static let urls = [
        "url: https://cdn.example.com/v/{n}.mp4", "url: \"https://Cdn.Example.com:8443/x/{n}.bin?sig=1\"",
        "url: http://h.example/d/{n}/", "url: https://h.example/{n}%2Fx", "url: ftp://h.example/{n}",
        "url: https://h.example/{n} with space", "url: https://" + String(repeating: "h", count: 9000) + "/{n}",
        "url: *nowhere", "url: [https://a/{n}]",
    ]

    static func manifest(_ random: inout SplitMix64, trapRate: UInt64) -> String {
        var lines = ["name: f", "timezone: Europe/Berlin", "resources:"]
        for n in 0..<Int(random.next() % 12) {
            let first = trapRate == 0 || random.next() % 10 < 8 ? "url: https://cdn.example.com/v/{n}.mp4" : urls[Int(random.next() % UInt64(urls.count))]
            if trapRate > 0, random.next() % 40 == 0 {
                lines.append(random.next() % 2 == 0 ? "  - just text" : "  - { " + first + ", path: flow/{n}.bin }")
                continue
            }
            lines.append("  - " + first)
            var keys: Set<Substring> = ["url"]
            for _ in 0..<Int(random.next() % 5) {
                let pool = random.next() % 100 < trapRate ? traps : clean
                let line = pool[Int(random.next() % UInt64(pool.count))]
                // A key twice is a trap of its own: only where traps are laid.
                guard keys.insert(line.prefix { $0 != ":" }).inserted || trapRate > 0 else { continue }
                lines.append("    " + line)
            }
            lines = lines.map { $0.replacingOccurrences(of: "{n}", with: "\(n)") }
        }
        if random.next() % 10 == 0 { lines.append("prune: true") }  // a top-level key after the list
        return lines.joined(separator: "\n") + "\n"
    }

    /// Everything a decoded feed holds that its resources' values decide.
    static func describe(_ feed: Feed?) -> String {
        guard let feed else { return "no feed" }
        var out = "\(feed.name) \(feed.resources.count)\n"
        for r in feed.resources {
            out += "\(r.url.text) \(r.url.host) \(r.url.port) \(r.url.path) \(r.url.query ?? "-") | \(r.path) | \(r.sha256 ?? "-") "
                + "\(r.size.map(String.init) ?? "-") \(r.maxSize.map(String.init) ?? "-") \(r.notBefore.map(String.init(describing:)) ?? "-") "
                + "\(r.expires.map(String.init(describing:)) ?? "-") \(r.priority) \(r.encoding) \(r.location) "
                + r.headers.map { "\($0.name)=\($0.value)" }.joined(separator: ",") + " "
                + (r.mirrors ?? []).map { "\($0.text) \($0.host) \($0.port)" }.joined(separator: ",") + "\n"
        }
        return out
    }

    @Test func theShortWayAgreesWithTheTree() throws {
        print("CleanDecodingTests: PREFETCH_CLEAN_SEED=\(Self.seed)")
        var random = SplitMix64(seed: Self.seed)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("clean-decoding-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("f.yaml").path
        let decoder = FeedDecoder(config: Config())
        var short = 0, refused = 0
        for round in 0..<400 {
            let yaml = Self.manifest(&random, trapRate: round % 2 == 0 ? 0 : 15)
            try Data(yaml.utf8).write(to: URL(fileURLWithPath: file))
            let (tree, diagnostics) = decoder.decode(Array(yaml.utf8), file: file)
            let context = "seed \(Self.seed), round \(round):\n\(yaml)"
            let opened = try #require(FileSystem.openRegularFile(file))
            if let feed = decoder.decodeClean(opened, file: file) {
                short += 1
                #expect(diagnostics.isEmpty, "\(context)\n\(diagnostics.map(\.headline))")
                #expect(Self.describe(feed) == Self.describe(tree), "\(context)")
            } else {
                refused += 1
                // Only a file with something to say, or with an anchor or a tag, goes the long way.
                #expect(!diagnostics.isEmpty || yaml.contains("&") || yaml.contains("!!"), "\(context)")
            }
            let loaded = FeedLoader.load([file], config: Config())
            #expect(loaded.diagnostics.map(\.headline) == diagnostics.map(\.headline), "\(context)")
            #expect(Self.describe(loaded.feeds.first) == Self.describe(tree), "\(context)")
        }
        print("CleanDecodingTests: \(short) files read the short way, \(refused) the long way")
        #expect(short > 100 && refused > 100, "short \(short), refused \(refused)")
    }

    /// A large clean feed: the room made from the first entries' rate holds every entry
    /// (the estimate leaves 2 % spare), and the feed is the tree's.
    @Test func aLargeFeedIsReadTheShortWay() throws {
        var yaml = "name: big\nresources:\n"
        for n in 0..<5000 {
            yaml += "  - url: https://cdn.example.com/\(n % 7)/item-\(n).bin\n    size: \(n + 1)\n"
            if n % 3 == 0 { yaml += "    sha256: " + String(repeating: "0f", count: 32) + "\n" }
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("clean-decoding-big-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("big.yaml").path
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: file))
        let decoder = FeedDecoder(config: Config())
        let opened = try #require(FileSystem.openRegularFile(file))
        let feed = try #require(decoder.decodeClean(opened, file: file))
        #expect(feed.resources.count == 5000)
        #expect(Self.describe(feed) == Self.describe(decoder.decode(Array(yaml.utf8), file: file).feed))
    }
}
