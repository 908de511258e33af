import Foundation
import Testing
@testable import PrefetchCore

/// The configuration file: keys, defaults and the same strict checks as feeds.
@Suite struct ConfigTests {
    @Test func defaults() {
        let config = Config()
        #expect(config.feeds == "/etc/prefetch/feeds" && config.cache == "/var/cache/prefetch")
        #expect(config.maxSize.bytes == 16 << 30)
        #expect(config.concurrency == 16 && config.perHost == 6)
        #expect(config.connectTimeout.seconds == 30 && config.stallTimeout.seconds == 60 && config.maxRedirects == 10)
        #expect(config.meteredDefault == .unmetered && config.caFile == nil && config.machineID == nil)
    }

    @Test func everyKey() {
        let yaml = """
        feeds: feeds.d
        cache: /srv/cache
        max_size: 4GiB
        metered_default: metered
        machine_id: kiosk-17
        concurrency: 8
        per_host: 2
        connect_timeout: 5s
        stall_timeout: 90s
        max_redirects: 0
        """
        let (config, diagnostics) = ConfigLoader.decode(Array(yaml.utf8), file: "/etc/prefetch/config.yaml")
        #expect(diagnostics.isEmpty)
        #expect(config.feeds == "/etc/prefetch/feeds.d")  // relative to the config's folder
        #expect(config.cache == "/srv/cache")
        #expect(config.maxSize.bytes == 4 << 30)
        #expect(config.meteredDefault == .metered && config.machineID == "kiosk-17")
        #expect(config.concurrency == 8 && config.perHost == 2)
        #expect(config.connectTimeout.seconds == 5 && config.stallTimeout.seconds == 90 && config.maxRedirects == 0)
    }

    @Test func errorsLikeFeeds() {
        let yaml = "feed: x\nper_host: 0\nca_file: /nonexistent/ca.pem\nstall_timeout: 0s\n"
        let (_, diagnostics) = ConfigLoader.decode(Array(yaml.utf8), file: "c.yaml")
        #expect(diagnostics.map(\.headline) == [
            "c.yaml:1:1: error: unknown key 'feed' in the configuration (did you mean 'feeds'?)",
            "c.yaml:2:11: error: per_host must be from 1 to 1024, found 0",
            "c.yaml:3:10: error: ca_file '/nonexistent/ca.pem' cannot be read",
            "c.yaml:4:16: error: stall_timeout must be longer than 0s",
        ])
    }

    @Test func emptyConfigMeansDefaults() {
        let (config, diagnostics) = ConfigLoader.decode([], file: "c.yaml")
        #expect(diagnostics.isEmpty && config.concurrency == 16)
    }

    @Test func missingDefaultIsFineMissingExplicitIsNot() {
        let missing = "/nonexistent/prefetch-config.yaml"
        #expect(ConfigLoader.load(path: missing, required: false).diagnostics.isEmpty)
        #expect(ConfigLoader.load(path: missing, required: true).diagnostics.map(\.headline)
                == ["\(missing): error: cannot read the configuration: No such file or directory"])
    }

    @Test func sizesAreCheckedAgainstTheGlobalCap() {
        var config = Config()
        config.maxSize = ByteSize(bytes: 1000)
        let yaml = "resources:\n  - url: https://e.com/a\n    size: 1001\n"
        let (feed, diagnostics) = FeedDecoder(config: config).decode(Array(yaml.utf8), file: "t.yaml")
        #expect(feed == nil)
        #expect(diagnostics.map(\.headline) == ["t.yaml:3:11: error: size 1001 is larger than the global max_size 1000B (config)"])
    }
}
