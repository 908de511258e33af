import Foundation
import Testing
import TestSupport

/// `prefetch validate`, `help` and `--version` through the real binary.
@Suite struct ValidateCommandTests {
    static let good = """
    name: lobby
    schedule: "30 2 * * *"
    timezone: Europe/Berlin
    window: "01:00-05:00"
    resources:
      - url: https://cdn.example.com/loop/intro.mp4
        size: 10MiB
      - url: https://cdn.example.com/loop/outro.mp4
    """

    @Test func validFeedsPrintOkAndExitZero() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby.yaml", Self.good)
        try dir.write("feeds/news.yml", "resources:\n  - url: https://e.com/n.xml\n")
        try dir.write("feeds/.hidden.yaml", "this is: [not valid")
        try dir.write("feeds/README.txt", "not a manifest")
        let before = dir.listing()
        let result = try BinaryRunner.run(["validate", "feeds"], in: dir.url)
        #expect(result.status == 0)
        #expect(result.stdout == """
            ok  lobby  2 resources  feeds/lobby.yaml
            ok  news   1 resource  feeds/news.yml
            2 feeds, 3 resources: valid

            """)
        #expect(result.stderr == "")
        #expect(dir.listing() == before)  // nothing written
    }

    @Test func brokenFeedPrintsEveryErrorWithCaretsAndExitsTwo() throws {
        let dir = try TemporaryFolder()
        try dir.write("bad.yaml", """
        name: bad
        schedule: "0 25 * * *"
        windw: "01:00-05:00"
        resources:
          - url: ftp://example.com/file.bin
        """)
        let result = try BinaryRunner.run(["validate", "bad.yaml"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stdout == "")
        #expect(result.stderr == """
            bad.yaml:2:14: error: 25 is out of range for the hour field (0–23)
            schedule: "0 25 * * *"
                         ^
            bad.yaml:3:1: error: unknown key 'windw' in a feed (did you mean 'window'?)
            windw: "01:00-05:00"
            ^
            bad.yaml:5:10: error: only http and https URLs are fetched, not 'ftp'
              - url: ftp://example.com/file.bin
                     ^
            prefetch: 3 errors in 1 file

            """)
    }

    @Test func errorsInSeveralFilesAndDuplicateNames() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/a.yaml", "name: shared\nresources: []\n")
        try dir.write("feeds/b.yaml", "name: shared\nresources: []\n")
        try dir.write("feeds/c.yaml", "jitter: soon\nresources: []\n")
        let result = try BinaryRunner.run(["validate", "feeds"], in: dir.url)
        #expect(result.status == 2)
        let headlines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("feeds/") || $0.hasPrefix("prefetch:") }
        #expect(headlines == [
            "feeds/a.yaml:2:12: warning: this feed lists no resources",
            "feeds/b.yaml:2:12: warning: this feed lists no resources",
            "feeds/b.yaml:1:7: error: feed name 'shared' is already used by feeds/a.yaml",
            "feeds/c.yaml:1:9: error: expected a number in duration 'soon' (forms: 90s, 15m, 2h, 1d, 1h30m)",
            "feeds/c.yaml:2:12: warning: this feed lists no resources",
            "prefetch: 2 errors, 3 warnings in 2 of 3 files",
        ])
    }

    @Test func missingFeedsFolderIsAUsageError() throws {
        let dir = try TemporaryFolder()
        let result = try BinaryRunner.run(["validate", "--feeds", "nowhere"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stderr == "nowhere: error: no such file or folder\nprefetch: 1 error in 1 file\n")
    }

    @Test func emptyFeedsFolderWarnsAndSucceeds() throws {
        let dir = try TemporaryFolder()
        try FileManager.default.createDirectory(at: dir.url.appendingPathComponent("empty"), withIntermediateDirectories: true)
        let result = try BinaryRunner.run(["validate", "empty"], in: dir.url)
        #expect(result.status == 0)
        #expect(result.stderr == "empty: warning: no feed manifests (*.yaml, *.yml) in this folder\n")
        #expect(result.stdout == "0 feeds, 0 resources: valid (1 warning)\n")
    }

    @Test func feedsFolderComesFromTheConfig() throws {
        let dir = try TemporaryFolder()
        try dir.write("etc/feeds/lobby.yaml", Self.good)
        try dir.write("etc/config.yaml", "feeds: feeds\nmax_size: 1GiB\n")
        let result = try BinaryRunner.run(["validate", "--config", "etc/config.yaml"], in: dir.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("ok  lobby  2 resources  etc/feeds/lobby.yaml\n"))
    }

    @Test func configErrorsStopEverything() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby.yaml", Self.good)
        try dir.write("config.yaml", "concurency: 4\n")
        let result = try BinaryRunner.run(["validate", "--config", "config.yaml", "feeds"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stdout == "")
        #expect(result.stderr == """
            config.yaml:1:1: error: unknown key 'concurency' in the configuration (did you mean 'concurrency'?)
            concurency: 4
            ^
            prefetch: 1 error in the configuration

            """)
        let missing = try BinaryRunner.run(["validate", "--config", "nope.yaml", "feeds"], in: dir.url)
        #expect(missing.status == 2)
        #expect(missing.stderr == "nope.yaml: error: cannot read the configuration: No such file or directory\nprefetch: 1 error in the configuration\n")
    }

    @Test func configCapAppliesToFeeds() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby.yaml", Self.good)
        try dir.write("config.yaml", "max_size: 1MiB\n")
        let result = try BinaryRunner.run(["validate", "--config", "config.yaml", "feeds"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("feeds/lobby.yaml:7:11: error: size 10485760 is larger than the global max_size 1MiB (config)\n"))
    }

    @Test func versionAndHelp() throws {
        let version = try BinaryRunner.run(["--version"])
        #expect(version.status == 0 && version.stdout == "prefetch 0.1.0\n")
        let help = try BinaryRunner.run(["help"])
        #expect(help.status == 0 && help.stdout.hasPrefix("OVERVIEW: Preload content"))
        let page = try BinaryRunner.run(["validate", "--help"])
        #expect(page.status == 0 && page.stdout.contains("USAGE: prefetch validate [FILE|DIR ...] [--feeds DIR] [--config FILE]"))
        let bare = try BinaryRunner.run([])
        #expect(bare.status == 2 && bare.stderr.hasPrefix("OVERVIEW:"))
    }

    @Test func usageErrorsExitTwoWithTheUsageLine() throws {
        let unknown = try BinaryRunner.run(["validate", "--bogus"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr == """
            prefetch: error: unknown option '--bogus'
            Usage: prefetch validate [FILE|DIR ...] [--feeds DIR] [--config FILE]
            See 'prefetch help validate'.

            """)
        let command = try BinaryRunner.run(["valdate"])
        #expect(command.status == 2)
        #expect(command.stderr.hasPrefix("prefetch: error: unknown command 'valdate' (did you mean 'validate'?)\n"))
        let missing = try BinaryRunner.run(["plan", "--at"])
        #expect(missing.status == 2 && missing.stderr.hasPrefix("prefetch: error: option '--at' needs a value (TIME)\n"))
    }

    @Test func unreadableUTF8AndBinaryGarbageDoNotCrash() throws {
        let dir = try TemporaryFolder()
        let path = dir.url.appendingPathComponent("garbage.yaml")
        try Data([0xff, 0xfe, 0x00, 0x41, 0x0a, 0x80, 0x81]).write(to: path)
        let result = try BinaryRunner.run(["validate", "garbage.yaml"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("garbage.yaml:1:1: error: "))
    }
}
