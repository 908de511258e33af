import Foundation
import Testing
import TestSupport

/// The settings a command reads (options, config, environment) are parsed once, before
/// anything is touched: every bad value is reported, not only the first, and a command is
/// not refused for a variable it does not read.
@Suite struct SettingsTests {
    @Test func everyBadSettingIsReportedAndNothingIsTouched() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/f.yaml", "resources:\n  - url: https://e.com/a.bin\n")
        let result = try BinaryRunner.run(["run", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null", "--assume", "power=solar"],
                                          in: dir.url, environment: ["PREFETCH_CLOCK_OFFSET": "soon", "PREFETCH_TRANSFER_THREADS": "0"])
        #expect(result.status == 2)
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("prefetch: error:") }
        #expect(errors.count == 3, "\(result.stderr)")
        #expect(result.stderr.contains("PREFETCH_CLOCK_OFFSET") && result.stderr.contains("PREFETCH_TRANSFER_THREADS")
                && result.stderr.contains("--assume power="))
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("cache").path))
    }

    @Test func aCommandIsNotRefusedForWhatItDoesNotRead() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/f.yaml", "resources:\n  - url: https://e.com/a.bin\n")
        let result = try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"],
                                          in: dir.url, environment: ["PREFETCH_TRANSFER_THREADS": "many"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
