import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §7 for the config: `max_manifest_size` (1 KiB to 1 GiB, default 64 MiB), a config
/// file of at most 1 MiB, and the same limits on its text as on a feed's.
@Suite struct ConfigLimitTests {
    static func decode(_ yaml: String) -> (Config, [String]) {
        let (config, diagnostics) = ConfigLoader.decode(Array(yaml.utf8), file: "c.yaml")
        return (config, diagnostics.map(\.headline))
    }

    static func x(_ count: Int) -> String { String(repeating: "x", count: count) }

    @Test(arguments: [("1KiB", 1024), ("1024", 1024), ("64MiB", 64 << 20), ("1GiB", 1 << 30), ("1073741824", 1 << 30), ("10MB", 10_000_000)])
    func maxManifestSizeInItsRange(_ text: String, _ bytes: Int) {
        let (config, diagnostics) = Self.decode("max_manifest_size: \(text)\n")
        #expect(diagnostics.isEmpty)
        #expect(config.maxManifestSize.bytes == bytes)
    }

    @Test(arguments: [("1023", "max_manifest_size must be from 1KiB to 1GiB, found 1023"),
                      ("0", "max_manifest_size must be from 1KiB to 1GiB, found 0"),
                      ("1073741825", "max_manifest_size must be from 1KiB to 1GiB, found 1073741825"),
                      ("2GiB", "max_manifest_size must be from 1KiB to 1GiB, found 2GiB"),
                      ("lots", "expected a size such as 512, 64KiB, 20MiB, 2GiB or 1GB")])
    func maxManifestSizeOutOfItsRange(_ text: String, _ message: String) {
        let (config, diagnostics) = Self.decode("max_manifest_size: \(text)\n")
        #expect(diagnostics.count == 1)
        #expect(diagnostics.first?.hasSuffix(message) == true, "\(diagnostics)")
        #expect(config.maxManifestSize.bytes == 64 << 20)
    }

    @Test func theDefaultIs64MiB() {
        #expect(Config().maxManifestSize.bytes == 64 << 20)
    }

    /// The feed decoder refuses bytes over the limit before it parses them (its bytes are
    /// what a fuzzer hands it): one error, no place, no YAML problem of the text.
    @Test func aManifestOverTheLimitIsNotParsed() {
        var config = Config()
        config.maxManifestSize = ByteSize(bytes: 1024)
        let prefix = "resources:\n  - url: https://a.example/x\n#"
        let exact = prefix + Self.x(1024 - prefix.utf8.count - 1) + "\n"
        #expect(exact.utf8.count == 1024)
        #expect(FeedDecoder(config: config).decode(Array(exact.utf8), file: "t.yaml").diagnostics.isEmpty)
        let over = Array((exact + "[").utf8)
        #expect(FeedDecoder(config: config).decode(over, file: "t.yaml").diagnostics.map(\.headline)
                == ["t.yaml: error: the manifest is 1025 bytes (1KiB), over max_manifest_size 1KiB (1024 bytes); it is not read"])
    }

    /// A config of exactly 1 MiB is read; one byte more is refused unparsed, by `decode`
    /// and by `load` (fstat, before reading).
    @Test func theConfigFileHasAtMostOneMiB() throws {
        let exact = "concurrency: 4\n#" + Self.x((1 << 20) - 17) + "\n"
        #expect(exact.utf8.count == 1 << 20)
        #expect(Self.decode(exact).1.isEmpty)
        #expect(Self.decode(exact + "{").1 == ["c.yaml: error: the configuration is 1048577 bytes (1MiB), over the 1MiB (1048576 bytes) a configuration may have; it is not read"])
        let dir = try TemporaryFolder()
        let path = try dir.write("config.yaml", exact + "{")
        let loaded = ConfigLoader.load(path: path, required: true)
        #expect(loaded.diagnostics.map(\.message) == ["the configuration is 1048577 bytes (1MiB), over the 1MiB (1048576 bytes) a configuration may have; it is not read"])
        #expect(loaded.source == nil)
    }

    static let edges: [(String, [String])] = [
        ("no_proxy: " + Array(repeating: "a", count: 32_768).joined(separator: ",") + "b\n", []),
        ("no_proxy: " + Array(repeating: "a", count: 32_768).joined(separator: ",") + "bc\n",
         ["c.yaml:1:11: error: no_proxy has at most 64 KiB (65536 bytes); this one has 65537"]),
        ("no_proxy: '" + Array(repeating: "a", count: 32_768).joined(separator: ",") + "b'\n", []),
        ("machine_id: " + x(4096) + "\n", []),
        ("machine_id: " + x(4097) + "\n", ["c.yaml:1:13: error: a value has at most 4 KiB (4096 bytes); this one has 4097"]),
        ("feeds: /" + x(4095) + "\n", []),
        ("feeds: /" + x(4096) + "\n", ["c.yaml:1:8: error: a value has at most 4 KiB (4096 bytes); this one has 4097"]),
        ("proxy: http://p.example:3128/" + x(8192 - 22) + "\n", ["c.yaml:1:29: error: a proxy URL has no path, query or fragment"]),
        ("proxy: http://p.example:3128/" + x(8193 - 22) + "\n", ["c.yaml:1:8: error: a URL has at most 8 KiB (8192 bytes); this one has 8193"]),
        ("? " + x(4097) + "\n: 1\n", ["c.yaml:1:3: error: a key has at most 4 KiB (4096 bytes); this one has 4097"]),
        ("concurrency: " + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "\n",
         ["c.yaml:1:45: error: this list opens level 33 of nesting; at most 32 levels are allowed"]),
        ("concurrency: 4\n# caf\u{7F}\n", ["c.yaml:2:6: error: control character U+007F is not allowed in a YAML file (only tab and line breaks are)"]),
        ("no_proxy: \"a\\x85b\"\n", ["c.yaml:1:11: error: write an international host name in no_proxy in its xn-- form"]),
        ("no_proxy: \"a\\x7fb\"\n", ["c.yaml:1:11: error: no_proxy cannot contain control characters"]),
    ]

    /// The config's limits hold at their edges: no_proxy 64 KiB, proxy 8 KiB (a URL), every
    /// other value and key 4 KiB; nesting, bytes and escapes as in feeds.
    @Test(arguments: edges)
    func theConfigsLimits(_ yaml: String, _ expected: [String]) {
        #expect(Self.decode(yaml).1 == expected)
    }
}
