import Testing
@testable import PrefetchCore

/// SPEC §7's limits on manifests, through the decoder's entry point (bytes in, diagnostics
/// out): FAULTS 25's hostile inputs give one error each at their own line and column, and
/// every length limit holds exactly at its edge and refuses one byte more.
@Suite struct ManifestLimitTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        let expected: [String]
        var testDescription: String { name }

        init(_ name: String, _ yaml: String, _ expected: [String]) {
            self.init(name, Array(yaml.utf8), expected)
        }

        init(_ name: String, _ bytes: [UInt8], _ expected: [String]) {
            self.name = name
            self.bytes = bytes
            self.expected = expected
        }
    }

    static func decode(_ bytes: [UInt8], config: Config = Config()) -> [String] {
        FeedDecoder(config: config).decode(bytes, file: "t.yaml").diagnostics.map(\.headline)
    }

    static let head = "name: t\nresources:\n  - url: https://a.example/x\n"
    static func x(_ count: Int) -> String { String(repeating: "x", count: count) }

    /// A 1 MiB URL, a 100 KiB header value, 100,000 levels: as FAULTS 25 has them.
    static let hostile: [Case] = [
        Case("100,000 nested flow lists", head + "    path: " + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000) + "\n",
             ["t.yaml:4:40: error: this list opens level 33 of nesting; at most 32 levels are allowed"]),
        Case("100,000 nested flow mappings", head + "    path: " + String(repeating: "{a: ", count: 100_000) + String(repeating: "}", count: 100_000) + "\n",
             ["t.yaml:4:127: error: this mapping opens level 33 of nesting; at most 32 levels are allowed"]),
        Case("100,000 nested block lists", head + "    path:\n      " + String(repeating: "- ", count: 100_000) + "x\n",
             ["t.yaml:5:65: error: this list opens level 33 of nesting; at most 32 levels are allowed"]),
        Case("100,000 nested block mappings (explicit keys)", String(repeating: "? ", count: 100_000) + "x\n",
             ["t.yaml:1:65: error: this mapping opens level 33 of nesting; at most 32 levels are allowed"]),
        Case("an unclosed 100,000-deep flow list", head + "    path: " + String(repeating: "[", count: 100_000) + "\n",
             ["t.yaml:4:40: error: this list opens level 33 of nesting; at most 32 levels are allowed"]),
        Case("billion laughs", billionLaughs,
             ["t.yaml:8:8: error: with this alias the file's aliases stand for more than 1000000 nodes (an alias bomb?); at most 1000000 are allowed"]),
        Case("billion laughs inside a resource", "resources:\n  - url: https://a.example/x\n    headers:\n"
             + billionLaughs.split(separator: "\n").dropFirst().prefix(7).map { "      X-" + $0 }.joined(separator: "\n") + "\n",
             ["t.yaml:10:16: error: with this alias the file's aliases stand for more than 1000000 nodes (an alias bomb?); at most 1000000 are allowed"]),
        Case("a 1 MiB URL", "name: t\nresources:\n  - url: https://a.example/" + x(1 << 20) + "\n",
             ["t.yaml:3:10: error: a URL has at most 8 KiB (8192 bytes); this one has 1048594"]),
        Case("a 100 KiB header value", head + "    headers:\n      X-Big: " + x(100 << 10) + "\n",
             ["t.yaml:5:14: error: a header value has at most 8 KiB (8192 bytes); this one has 102400"]),
        Case("a 100 KiB header value, quoted with an unclosed ${", head + "    headers: { X-Big: \"${" + x(100 << 10) + "\" }\n",
             ["t.yaml:4:24: error: a header value has at most 8 KiB (8192 bytes); this one has 102402"]),
        Case("invalid UTF-8 on line 4", Array((head).utf8) + Array("    path: caf".utf8) + [0xC3, 0x28] + Array("\n".utf8),
             ["t.yaml:4:14: error: invalid UTF-8 (byte 0xC3); save the file as UTF-8"]),
        Case("a stray continuation byte in a comment on line 5", Array((head + "# ok\n# caf").utf8) + [0xA9] + Array("\n".utf8),
             ["t.yaml:5:6: error: invalid UTF-8 (byte 0xA9); save the file as UTF-8"]),
        Case("a NUL on line 4", Array((head + "    path: a").utf8) + [0] + Array("b\n".utf8),
             ["t.yaml:4:12: error: a NUL byte is not allowed in a YAML file"]),
        Case("a DEL byte", Array((head + "    path: é").utf8) + [0x7F] + Array("\n".utf8),
             ["t.yaml:4:12: error: control character U+007F is not allowed in a YAML file (only tab and line breaks are)"]),
        Case("a C1 character as bytes", Array((head + "    path: a").utf8) + [0xC2, 0x9B] + Array("\n".utf8),
             ["t.yaml:4:12: error: control character U+009B is not allowed in a YAML file (only tab and line breaks are)"]),
        Case("an escape (ESC) byte after a NEL line break", Array("name: t\u{85}#".utf8) + [0x1B] + Array("\nresources: []\n".utf8),
             ["t.yaml:2:2: error: control character U+001B is not allowed in a YAML file (only tab and line breaks are)"]),
        Case("UTF-16", [0xFF, 0xFE] + Array("n\0a\0".utf8),
             ["t.yaml:1:1: error: the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"]),
        Case("CR LF put into a header value by an escape", head + "    headers: { X-A: \"a\\r\\nX-Injected: 1\" }\n",
             ["t.yaml:4:21: error: a header value cannot contain line breaks or NUL"]),
        Case("C1 (NEL) put into a header value by an escape", head + "    headers: { X-A: \"a\\Nb\" }\n",
             ["t.yaml:4:21: error: a header value cannot contain control characters (RFC 9110 §5.5)"]),
        Case("C1 put into a header value by \\u", head + "    headers: { X-A: \"a\\u009bb\" }\n",
             ["t.yaml:4:21: error: a header value cannot contain control characters (RFC 9110 §5.5)"]),
        Case("DEL put into a header value by an escape", head + "    headers: { X-A: \"a\\x7fb\" }\n",
             ["t.yaml:4:21: error: a header value cannot contain control characters (RFC 9110 §5.5)"]),
        Case("ESC put into a header value by an escape", head + "    headers: { X-A: \"\\e[31m\" }\n",
             ["t.yaml:4:21: error: a header value cannot contain control characters (RFC 9110 §5.5)"]),
        Case("a tab put into a header value (C0)", head + "    headers: { X-A: \"a\\tb\" }\n",
             ["t.yaml:4:21: error: a header value cannot contain control characters (RFC 9110 §5.5)"]),
        Case("CR LF put into a URL by an escape", "resources:\n  - url: \"https://a.example/x\\r\\nHost: evil\"\n    path: a\n",
             ["t.yaml:2:10: error: a URL cannot contain control characters"]),
        Case("C1 put into a URL by an escape", "resources:\n  - url: \"https://a.example/x\\u0085\"\n    path: a\n",
             ["t.yaml:2:10: error: a URL cannot contain control characters"]),
        Case("C1 put into a path by an escape", head + "    path: \"a\\u0090b\"\n",
             ["t.yaml:4:11: error: a path cannot contain control characters"]),
        Case("DEL put into a path by an escape", head + "    path: \"a\\x7F\"\n",
             ["t.yaml:4:11: error: a path cannot contain control characters"]),
    ]

    /// Nine anchors, each list nine aliases of the one before: 9^9 nodes if expanded.
    static let billionLaughs = "name: t\n" + (0..<8).map { level -> String in
        let name = String(UnicodeScalar(UInt8(97 + level)))
        if level == 0 { return "\(name): &\(name) [lol, lol, lol, lol, lol, lol, lol, lol, lol]" }
        let previous = String(UnicodeScalar(UInt8(96 + level)))
        return "\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 9).joined(separator: ",") + "]"
    }.joined(separator: "\n") + "\nresources:\n  - url: https://a.example/x\n"

    @Test(arguments: hostile)
    func aHostileInputGivesOneErrorAtItsPlace(_ example: Case) {
        #expect(Self.decode(example.bytes) == example.expected)
    }

    /// A path of exactly `count` bytes: 255-byte components and a shorter last one.
    static func path(bytes count: Int) -> String {
        var parts: [String] = []
        var left = count
        while left > 256 {
            parts.append(x(255))
            left -= 256
        }
        parts.append(x(left))
        return parts.joined(separator: "/")
    }

    /// `count` headers' block lines, each value `value` bytes, names `X-0`, `X-1`, …
    static func headers(_ values: [Int]) -> String {
        "    headers:\n" + values.enumerated().map { "      X-\($0.offset): " + x($0.element) + "\n" }.joined()
    }

    static let url = "https://a.example/"

    /// Each limit exactly at its edge (fine, or the value's own error) and one byte over
    /// (the limit's error, which replaces the value's own).
    static let edges: [Case] = [
        Case("URL of 8192 bytes", "resources:\n  - url: \(url)\(x(8192 - 18))\n    path: a\n", []),
        Case("URL of 8193 bytes", "resources:\n  - url: \(url)\(x(8193 - 18))\n    path: a\n",
             ["t.yaml:2:10: error: a URL has at most 8 KiB (8192 bytes); this one has 8193"]),
        Case("URL of 8192 bytes decoded, longer as written", "resources:\n  - url: \"\(url)\(String(repeating: "\\x41", count: 8192 - 18))\"\n    path: a\n", []),
        Case("URL of 8193 bytes decoded, quoted", "resources:\n  - url: \"\(url)\(String(repeating: "\\x41", count: 8193 - 18))\"\n    path: a\n",
             ["t.yaml:2:11: error: a URL has at most 8 KiB (8192 bytes); this one has 8193"]),
        Case("URL of 8193 bytes that is not even a URL", "resources:\n  - url: ftp:\(x(8193 - 4))\n    path: a\n",
             ["t.yaml:2:10: error: a URL has at most 8 KiB (8192 bytes); this one has 8193"]),
        Case("path of 4000 bytes", head + "    path: \(path(bytes: 4000))\n", []),
        Case("path of 4001 bytes", head + "    path: \(path(bytes: 4001))\n",
             ["t.yaml:4:11: error: a path has at most 4000 bytes; this one has 4001"]),
        Case("path of 4001 bytes that also leaves the folder", head + "    path: ../\(path(bytes: 3998))\n",
             ["t.yaml:4:11: error: a path has at most 4000 bytes; this one has 4001"]),
        Case("path component of 255 bytes", head + "    path: d/\(x(255))\n", []),
        Case("path component of 256 bytes", head + "    path: d/\(x(256))\n",
             ["t.yaml:4:13: error: a path component has at most 255 bytes; this one has 256"]),
        Case("path component of 256 bytes after '..'", head + "    path: ../\(x(256))\n",
             ["t.yaml:4:14: error: a path component has at most 255 bytes; this one has 256"]),
        Case("path component of 255 bytes in 128 characters", head + "    path: \(String(repeating: "é", count: 127))x\n", []),
        Case("path component of 256 bytes in 128 characters", head + "    path: \(String(repeating: "é", count: 128))\n",
             ["t.yaml:4:11: error: a path component has at most 255 bytes; this one has 256"]),
        Case("default path from the URL of 255 bytes", "resources:\n  - url: \(url)\(x(255))\n", []),
        Case("default path from the URL of 256 bytes", "resources:\n  - url: \(url)\(x(256))\n",
             ["t.yaml:2:10: error: the file name from the URL's last segment is too long: a path component has at most 255 bytes; this one has 256; give the resource a 'path'"]),
        Case("default path from the URL of 256 bytes once decoded", "resources:\n  - url: \(url)\(String(repeating: "%41", count: 256))\n",
             ["t.yaml:2:10: error: the file name from the URL's last segment is too long: a path component has at most 255 bytes; this one has 256; give the resource a 'path'"]),
        Case("default path from a long URL, with a path given", "resources:\n  - url: \(url)\(x(256))\n    path: a\n", []),
        Case("header value of 8192 bytes", head + headers([8192]), []),
        Case("header value of 8193 bytes", head + headers([8193]),
             ["t.yaml:5:12: error: a header value has at most 8 KiB (8192 bytes); this one has 8193"]),
        Case("header value of 8193 bytes with a bad ${", head + "    headers:\n      X-0: ${\(x(8191))\n",
             ["t.yaml:5:12: error: a header value has at most 8 KiB (8192 bytes); this one has 8193"]),
        Case("headers of 65536 bytes in all", head + headers(Array(repeating: 8192, count: 7) + [65536 - 7 * (3 + 8192) - 3]), []),
        Case("headers of 65537 bytes in all", head + headers(Array(repeating: 8192, count: 7) + [65537 - 7 * (3 + 8192) - 3]),
             ["t.yaml:12:7: error: with header 'X-7' this resource's headers have 65537 bytes (names and values); a resource's headers have at most 64 KiB (65536 bytes) in all"]),
        Case("a value of 4096 bytes has its own error", "name: \(x(4096))\n" + head.dropFirst(8),
             ["t.yaml:1:71: error: a feed name has at most 64 characters"]),
        Case("a value of 4097 bytes", "name: \(x(4097))\n" + head.dropFirst(8),
             ["t.yaml:1:7: error: a value has at most 4 KiB (4096 bytes); this one has 4097"]),
        Case("a value of 4097 bytes in a list", "window: [\"01:00-02:00\", \(x(4097))]\n" + head.dropFirst(8),
             ["t.yaml:1:25: error: a value has at most 4 KiB (4096 bytes); this one has 4097"]),
        Case("a value of 4097 bytes where a list belongs", "days: \(x(4097))\n" + head.dropFirst(8),
             ["t.yaml:1:7: error: a value has at most 4 KiB (4096 bytes); this one has 4097"]),
        Case("a value of 4097 bytes under a key no feed has", "extra: [\(x(4097))]\n" + head.dropFirst(8),
             ["t.yaml:1:1: error: unknown key 'extra' in a feed",
              "t.yaml:1:9: error: a value has at most 4 KiB (4096 bytes); this one has 4097"]),
        Case("a sha256 of 4097 bytes", head + "    sha256: \(x(4097))\n",
             ["t.yaml:4:13: error: a value has at most 4 KiB (4096 bytes); this one has 4097"]),
        // A simple key has at most 1024 characters in YAML: longer ones are explicit (`? `).
        Case("a key of 4097 bytes", "? \(x(4097))\n: 1\n" + head.dropFirst(8),
             ["t.yaml:1:3: error: a key has at most 4 KiB (4096 bytes); this one has 4097"]),
        Case("a header name of 4097 bytes", head + "    headers:\n      ? \(x(4097))\n      : v\n",
             ["t.yaml:5:9: error: a key has at most 4 KiB (4096 bytes); this one has 4097"]),
        Case("a header name of 4097 bytes in a flow mapping", head + "    headers: { ? \(x(4097)) : v }\n",
             ["t.yaml:4:18: error: a key has at most 4 KiB (4096 bytes); this one has 4097"]),
        Case("a 6 KiB URL moved by an alias to where 4 KiB is the limit",
             "resources:\n  - url: &u \(url)\(x(6000))\n    path: a\n    sha256: *u\n",
             ["t.yaml:4:13: error: a value has at most 4 KiB (4096 bytes); this one has 6018"]),
        Case("a comment of 100 KiB", "# \(x(100 << 10))\n" + head, []),
    ]

    @Test(arguments: edges)
    func aLengthLimitHoldsAtItsEdge(_ example: Case) {
        #expect(Self.decode(example.bytes) == example.expected)
    }

    @Test func aKeyOf4096BytesIsReadAsAKey() {
        let diagnostics = Self.decode(Array("? \(Self.x(4096))\n: 1\n\(Self.head.dropFirst(8))".utf8))
        #expect(diagnostics == ["t.yaml:1:3: error: unknown key '\(Self.x(4096))' in a feed"])
    }

    /// The root collection is level 1: 32 levels are read, 33 are not; a scalar under
    /// level 32 adds none, and aliases are not walked.
    @Test func nestingCountsCollectionStartsFromTheRoot() {
        // resources (root mapping 1, list 2, resource mapping 3), so `path` opens level 4.
        let deep32 = Self.head + "    path: " + String(repeating: "[", count: 29) + "a" + String(repeating: "]", count: 29) + "\n"
        #expect(Self.decode(Array(deep32.utf8)) == ["t.yaml:4:11: error: path must be a value, found a list"])
        let deep33 = Self.head + "    path: " + String(repeating: "[", count: 30) + String(repeating: "]", count: 30) + "\n"
        #expect(Self.decode(Array(deep33.utf8)) == ["t.yaml:4:40: error: this list opens level 33 of nesting; at most 32 levels are allowed"])
        // An anchor 30 levels deep repeated 30 levels down stands 60 deep, yet nothing is walked.
        let aliased = "extra: &deep " + String(repeating: "[", count: 30) + String(repeating: "]", count: 30) + "\n"
            + "more: " + String(repeating: "[", count: 30) + "*deep" + String(repeating: "]", count: 30) + "\n" + Self.head.dropFirst(8)
        #expect(Self.decode(Array(aliased.utf8)) == ["t.yaml:1:1: error: unknown key 'extra' in a feed", "t.yaml:2:1: error: unknown key 'more' in a feed"])
    }

    /// Exactly 1,000,000 nodes through aliases is allowed; one more is not. An anchor of
    /// 1,000 nodes (a list of 999 scalars) aliased 1,000 times, then one alias of a scalar.
    @Test func aliasesMayStandForAMillionNodes() {
        let anchor = "extra: &k [" + Array(repeating: "a", count: 999).joined(separator: ",") + "]\nscalar: &s b\n"
        let million = anchor + "more: [" + Array(repeating: "*k", count: 1000).joined(separator: ",") + "]\n"
        #expect(Self.decode(Array((million + Self.head.dropFirst(8)).utf8))
                == ["t.yaml:1:1: error: unknown key 'extra' in a feed", "t.yaml:2:1: error: unknown key 'scalar' in a feed",
                    "t.yaml:3:1: error: unknown key 'more' in a feed"])
        let over = million + "again: *s\n"
        #expect(Self.decode(Array((over + Self.head.dropFirst(8)).utf8))
                == ["t.yaml:4:8: error: with this alias the file's aliases stand for more than 1000000 nodes (an alias bomb?); at most 1000000 are allowed"])
    }

    /// A file with an error in each of a million entries (2 MB) is read up to its 1,000th
    /// error, then one more says the rest is not read: before, all million were found and
    /// shown, which took minutes.
    @Test func aFileStopsBeingReadAtAThousandErrors() {
        let yaml = "name: t\nresources: [" + Array(repeating: "a", count: 1_000_000).joined(separator: ",") + "]\n"
        let diagnostics = Self.decode(Array(yaml.utf8))
        #expect(diagnostics.count == 1001)
        #expect(diagnostics.first == "t.yaml:2:13: error: a resource must be a mapping of keys to values, found a string")
        #expect(diagnostics.last == "t.yaml:2:2012: error: more than 1000 errors; the rest of the file is not checked")
        let limits = "name: t\nresources:\n" + String(repeating: "  - url: https://a.example/\(Self.x(8200))\n", count: 1200)
        let long = Self.decode(Array(limits.utf8))
        #expect(long.count == 1001 && long.last == "t.yaml:1002:8228: error: more than 1000 errors; the rest of the file is not checked", "\(long.suffix(2))")
        // Keys no feed has, 20,000 of them: the same cap, where the 1,001st was found.
        let keys = (0..<20_000).map { "k\($0): 1\n" }.joined() + "resources: []\n"
        let unknown = Self.decode(Array(keys.utf8))
        #expect(unknown.count == 1001 && unknown.first == "t.yaml:1:1: error: unknown key 'k0' in a feed", "\(unknown.prefix(2))")
        #expect(unknown.last == "t.yaml:1001:1: error: more than 1000 errors; the rest of the file is not checked", "\(unknown.suffix(2))")
    }

    /// A limit error replaces the value's other errors, and of a file's several values over
    /// their limits each is reported, with the other problems of the file.
    @Test func everyValueOverItsLimitIsReportedOnce() {
        let yaml = "schedule: \"\(Self.x(4097))\"\nresources:\n  - url: \(Self.url)\(Self.x(9000))\n  - url: gopher://x\n"
            + "  - url: \(Self.url)b\n    path: \(Self.path(bytes: 5000))\n"
        #expect(Self.decode(Array(yaml.utf8)) == [
            "t.yaml:1:12: error: a value has at most 4 KiB (4096 bytes); this one has 4097",
            "t.yaml:3:10: error: a URL has at most 8 KiB (8192 bytes); this one has 9018",
            "t.yaml:4:10: error: only http and https URLs are fetched, not 'gopher'",
            "t.yaml:6:11: error: a path has at most 4000 bytes; this one has 5000",
        ])
    }
}
