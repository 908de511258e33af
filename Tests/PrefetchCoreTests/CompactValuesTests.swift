import Foundation
import Testing
@testable import PrefetchCore

/// The compact records a large manifest and state.db are held in (`StringInterner`,
/// `Digest256`, `HexText`, `ResourceURL`'s offsets, `Planner.permute`), each against a plain
/// reference on seeded random input. `PREFETCH_COMPACT_SEED` replays a run.
@Suite struct CompactValuesTests {
    static let seed: UInt64 = {
        ProcessInfo.processInfo.environment["PREFETCH_COMPACT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
    }()

    /// Random text from pieces that include canonically equivalent spellings ("é" as one
    /// scalar and as "e" + U+0301), which must stay apart.
    static func text(_ random: inout SplitMix64) -> String {
        let pieces = ["a", "b", "é", "e\u{301}", "host", ".example.com", "-", "0", "ü", "u\u{308}", "x" + String(repeating: "y", count: 20)]
        return (0..<Int(random.next() % 4 + 1)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
    }

    @Test func theInternerJoinsEqualBytesOnly() {
        print("CompactValuesTests: PREFETCH_COMPACT_SEED=\(Self.seed)")
        var random = SplitMix64(seed: Self.seed)
        var interner = StringInterner()
        var reference: [[UInt8]: String] = [:]  // the first string of each byte sequence
        for round in 0..<2000 {
            let text = Self.text(&random)
            let kept = interner.intern(text)
            #expect(Array(kept.utf8) == Array(text.utf8), "seed \(Self.seed), round \(round): \(text.debugDescription)")
            let first = reference[Array(text.utf8), default: text]
            reference[Array(text.utf8)] = first
            // The same storage as the first one with these bytes: equal identity of the buffers.
            #expect(kept.utf8.withContiguousStorageIfAvailable { $0.baseAddress } == first.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
                    || kept.utf8.count <= 15, "seed \(Self.seed), round \(round)")
            // Found from bytes too, without a string made of them.
            var copy = text
            let viaBytes = copy.withUTF8 { interner.intern($0) }
            #expect(Array(viaBytes.utf8) == Array(text.utf8))
        }
        #expect(interner.count == reference.count)
        #expect(interner.intern("e\u{301}").utf8.count == 3 && interner.intern("é").utf8.count == 2)
    }

    @Test func digestsGiveBackTheirHex() {
        var random = SplitMix64(seed: Self.seed)
        let digits = Array("0123456789abcdef")
        for round in 0..<1000 {
            let hex = String((0..<64).map { _ in digits[Int(random.next() % 16)] })
            let digest = Digest256(hex: hex)
            #expect(digest?.hex == hex, "seed \(Self.seed), round \(round)")
            #expect(HexText(hex).text == hex)
            #expect(HexText(hex) == HexText(String(hex)))
            // Anything else is kept as text, as given.
            let other = random.next() % 2 == 0 ? String(hex.dropLast()) : hex.uppercased()
            #expect(Digest256(hex: other) == nil || other == hex)
            #expect(HexText(other).text == other)
            #expect((HexText(other) == HexText(hex)) == (other == hex))
        }
        for bad in ["", "v1:" + String(repeating: "a", count: 64), String(repeating: "g", count: 64), String(repeating: "a", count: 65)] {
            #expect(Digest256(hex: bad) == nil)
            #expect(HexText(bad).text == bad)
        }
        #expect(HexText("é") != HexText("e\u{301}"))
    }

    /// The parts a URL gives from its offsets are those a plain split of its text finds.
    @Test func urlPartsComeFromTheirOffsets() throws {
        var random = SplitMix64(seed: Self.seed)
        let schemes = ["http", "https", "HTTPS", "Http"]
        let hosts = ["cdn.example.com", "CDN.Example.COM", "[::1]", "static.example-cdn.com", "é.example", "127.0.0.1"]
        let ports = ["", ":8443", ":", ":80"]
        let paths = ["", "/", "/a/b.mp4", "/%41%2Fx", "/v1/é/file"]
        let queries = ["", "?", "?v=1", "?exp=1&sig=abc", "?\u{317}x"]
        let fragments = ["", "#top", "#a?b"]
        var interner: StringInterner? = StringInterner()
        for round in 0..<1000 {
            func pick(_ list: [String]) -> String { list[Int(random.next() % UInt64(list.count))] }
            let scheme = pick(schemes), host = pick(hosts), port = pick(ports), path = pick(paths), query = pick(queries)
            let fragment = pick(fragments)
            let text = scheme + "://" + host + port + path + query + fragment
            let plain = try ResourceURL.parse(text)
            let interned = try ResourceURL.parse(text, hosts: &interner)
            let context = "seed \(Self.seed), round \(round): \(text)"
            for url in [plain, interned] {
                #expect(url.text == text, "\(context)")
                #expect(url.scheme == scheme.lowercased(), "\(context)")
                #expect(url.host == host.lowercased(), "\(context)")
                let explicit = port.count > 1 ? Int(port.dropFirst())! : (scheme.lowercased() == "https" ? 443 : 80)
                #expect(url.port == explicit, "\(context)")
                #expect(url.path == (path.isEmpty ? "/" : path), "\(context)")
                #expect(url.query == (query.isEmpty ? nil : String(decoding: query.utf8.dropFirst(), as: UTF8.self)), "\(context)")
                #expect(url.identityHash == Array((url.origin + url.path).utf8).withUnsafeBytes { SHA256.hexDigest($0) }, "\(context)")
            }
            #expect(plain == interned)
        }
        #expect(interner?.count == Set(hosts.map { $0.lowercased() }).count)
    }

    @Test func permutingInPlaceMatchesAMap() {
        var random = SplitMix64(seed: Self.seed)
        for round in 0..<500 {
            let count = Int(random.next() % 40)
            let items = (0..<count).map { "item \($0)" }
            var order = Array(0..<count)
            for index in order.indices.reversed() where index > 0 {
                order.swapAt(index, Int(random.next() % UInt64(index + 1)))
            }
            var permuted = items
            Planner.permute(&permuted, into: order)
            #expect(permuted == order.map { items[$0] }, "seed \(Self.seed), round \(round)")
        }
    }
}
