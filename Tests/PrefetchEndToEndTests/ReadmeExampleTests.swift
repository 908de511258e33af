import Foundation
import Testing
import TestSupport

/// The README's examples are what the binary prints: its error-format example is run as
/// written (a stale example once showed 5 errors where the binary printed 6).
@Suite struct ReadmeExampleTests {
    static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../README.md").standardized

    /// The fenced block that follows the first line containing `marker`.
    static func block(after marker: String, in text: String) throws -> String {
        let lines = text.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.contains(marker) }, "README has no '\(marker)'")
        let open = try #require(lines[start...].firstIndex { $0.hasPrefix("```") })
        let close = try #require(lines[(open + 1)...].firstIndex { $0.hasPrefix("```") })
        return lines[(open + 1)..<close].joined(separator: "\n") + "\n"
    }

    @Test func theErrorFormatExampleIsWhatValidatePrints() throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        let manifest = try Self.block(after: "For this manifest, `feeds/lobby-screens.yaml`:", in: text)
        let expected = try Self.block(after: "`prefetch validate feeds/` (the folder also holds a valid", in: text)
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby-screens.yaml", manifest)
        let news = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../feeds/news-nightly.yaml").standardized
        try dir.write("feeds/news-nightly.yaml", try String(contentsOf: news, encoding: .utf8))
        let result = try BinaryRunner.run(["validate", "feeds/", "--config", "/dev/null"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == expected, "README.md's example differs from the binary's output:\n\(result.stderr)")
    }

    @Test func theValidExampleIsWhatValidatePrints() throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        let expected = try Self.block(after: "On success, stdout gets one `ok` line per feed", in: text)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
        let result = try BinaryRunner.run(["validate", "feeds/", "--config", "/dev/null"], in: root)
        #expect(result.status == 0, "\(result.stderr)")
        #expect("$ prefetch validate feeds/\n" + result.stdout == expected)
    }

    /// The site cache's kiosk config (README, "A site cache (Squid)") is a valid config. (Its
    /// squid.conf lines are what `SquidTests` run: `SquidProxy.siteSettings` reads them.)
    @Test func theSiteCacheKioskConfigIsValid() throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        let config = try Self.block(after: "### A site cache (Squid)", in: text)
        #expect(config.contains("proxy: ") && config.contains("no_proxy: "), "\(config)")
        let dir = try TemporaryFolder()
        try dir.write("config.yaml", config)
        try dir.write("feeds/t.yaml", "resources:\n  - url: http://files.site.example/a.bin\n")
        let result = try BinaryRunner.run(["validate", "--feeds", "feeds", "--config", "config.yaml"], in: dir.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try SquidProxy.siteSettings().count == 5)
    }
}
