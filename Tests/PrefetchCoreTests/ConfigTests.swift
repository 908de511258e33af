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
        #expect(config.proxy == nil && config.noProxy == nil)  // the environment's proxies apply, as curl reads them
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

    /// SPEC §6's keys: the metrics file (relative to the config's folder), starvation's threshold.
    @Test func fleetKeys() {
        let (config, diagnostics) = ConfigLoader.decode(Array("metrics_file: metrics/prefetch.prom\nstarved_after: 5\n".utf8),
                                                        file: "/etc/prefetch/config.yaml")
        #expect(diagnostics.isEmpty && config.metricsFile == "/etc/prefetch/metrics/prefetch.prom" && config.starvedAfter == 5)
        let (_, bad) = ConfigLoader.decode(Array("metrics_file: /var/lib/x/\nstarved_after: 0\n".utf8), file: "c.yaml")
        #expect(bad.map(\.headline) == ["c.yaml:1:15: error: metrics_file must name a file, found '/var/lib/x/'",
                                        "c.yaml:2:16: error: starved_after must be from 1 to 100000, found 0"])
    }

    /// SPEC §8's `max_cache_size`: a size above 0, checked like the others; no cap by default.
    @Test func maxCacheSize() {
        #expect(Config().maxCacheSize == nil)
        let (config, diagnostics) = ConfigLoader.decode(Array("max_cache_size: 20GiB\n".utf8), file: "c.yaml")
        #expect(diagnostics.isEmpty && config.maxCacheSize?.bytes == 20 << 30, "\(diagnostics.map(\.headline))")
        let (zero, bad) = ConfigLoader.decode(Array("max_cache_size: 0\n".utf8), file: "c.yaml")
        #expect(bad.map(\.headline) == ["c.yaml:1:17: error: max_cache_size must be more than 0"] && zero.maxCacheSize == nil)
        let (_, unit) = ConfigLoader.decode(Array("max_cache_size: 1.5GiB\n".utf8), file: "c.yaml")
        #expect(unit.map(\.headline) == ["c.yaml:1:18: error: sizes are whole numbers; use a smaller unit (1536MiB, not 1.5GiB)"],
                "\(unit.map(\.headline))")
        let (_, typo) = ConfigLoader.decode(Array("max_cache_sise: 1GiB\n".utf8), file: "c.yaml")
        #expect(typo.first?.headline.contains("did you mean 'max_cache_size'") == true, "\(typo.map(\.headline))")
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

    // MARK: proxy and no_proxy (SPEC §5)

    /// A proxy as curl takes it: one of its schemes, a host (name, address, or IPv6 in
    /// brackets), a port, optional credentials and an optional trailing `/`. The text goes to
    /// libcurl as written.
    @Test(arguments: [
        ("http://squid.site:3128", "http", "squid.site", 3128),
        ("HTTP://Squid.Site:3128/", "http", "squid.site", 3128),
        ("https://proxy.example:443", "https", "proxy.example", 443),
        ("socks4://10.0.0.1:1080", "socks4", "10.0.0.1", 1080),
        ("socks4a://gw:1", "socks4a", "gw", 1),
        ("socks5://gw:65535", "socks5", "gw", 65535),
        ("socks5h://gw:1080", "socks5h", "gw", 1080),
        ("http://[::1]:3128", "http", "[::1]", 3128),
        ("http://kiosk:s%40cret@squid.site:3128", "http", "squid.site", 3128),
    ])
    func aProxyIsAURLCurlTakes(text: String, scheme: String, host: String, port: Int) throws {
        let (config, diagnostics) = ConfigLoader.decode(Array("proxy: '\(text)'\n".utf8), file: "c.yaml")
        #expect(diagnostics.isEmpty, "\(diagnostics.map(\.headline))")
        let proxy = try #require(config.proxy)
        #expect(proxy.text == text && proxy.scheme == scheme && proxy.host == host && proxy.port == port)
    }

    /// Every way a proxy can be wrong, each reported at its column (the value starts at column
    /// 9 of `proxy: '…'`).
    @Test(arguments: [
        InvalidValue(text: "http://squid site:3128", offset: 12, phrase: "a proxy URL cannot contain spaces"),
        InvalidValue(text: "http://squid\tsite:3128", offset: 12, phrase: "a proxy URL cannot contain control characters"),
        InvalidValue(text: "squid.site:3128", offset: 0, phrase: "a proxy is a URL with its scheme and port, such as http://proxy.example:3128"),
        InvalidValue(text: "squid.site", offset: 0, phrase: "a proxy is a URL with its scheme and port, such as http://proxy.example:3128"),
        InvalidValue(text: "http:/squid.site:3128", offset: 0, phrase: "a proxy is a URL with its scheme and port, such as http://proxy.example:3128"),
        InvalidValue(text: "ftp://squid.site:3128", offset: 0, phrase: "a proxy's scheme is http, https, socks4, socks4a, socks5 or socks5h, not 'ftp'"),
        InvalidValue(text: "squid://squid.site:3128", offset: 0, phrase: "a proxy's scheme is http, https, socks4, socks4a, socks5 or socks5h, not 'squid'"),
        InvalidValue(text: "http://squid.site:3128/proxy", offset: 22, phrase: "a proxy URL has no path, query or fragment"),
        InvalidValue(text: "http://squid.site:3128?x=1", offset: 22, phrase: "a proxy URL has no path, query or fragment"),
        InvalidValue(text: "http://squid.site:3128#x", offset: 22, phrase: "a proxy URL has no path, query or fragment"),
        InvalidValue(text: "http://squid.site:3128//", offset: 22, phrase: "a proxy URL has no path, query or fragment"),
        InvalidValue(text: "http://[::1:3128", offset: 7, phrase: "unclosed '[' in the proxy's host"),
        InvalidValue(text: "http://[::1]x:3128", offset: 12, phrase: "unexpected text after the IPv6 address"),
        InvalidValue(text: "http://:3128", offset: 7, phrase: "the proxy URL has no host"),
        InvalidValue(text: "http://[]:3128", offset: 7, phrase: "the proxy URL has no host"),
        InvalidValue(text: "http://kiosk@:3128", offset: 13, phrase: "the proxy URL has no host"),
        InvalidValue(text: "http://", offset: 7, phrase: "the proxy URL has no host"),
        InvalidValue(text: "http://squid.site", offset: 17,
                     phrase: "the proxy URL needs a port (Squid listens on 3128; without one curl would use 1080)"),
        InvalidValue(text: "https://squid.site/", offset: 18,
                     phrase: "the proxy URL needs a port (Squid listens on 3128; without one curl would use 443)"),
        InvalidValue(text: "http://squid.site:", offset: 18, phrase: "the proxy's port must be a number from 1 to 65535"),
        InvalidValue(text: "http://squid.site:0", offset: 18, phrase: "the proxy's port must be a number from 1 to 65535"),
        InvalidValue(text: "http://squid.site:65536", offset: 18, phrase: "the proxy's port must be a number from 1 to 65535"),
        InvalidValue(text: "http://squid.site:0003128", offset: 18, phrase: "the proxy's port must be a number from 1 to 65535"),
        InvalidValue(text: "http://squid.site:31a8", offset: 18, phrase: "the proxy's port must be a number from 1 to 65535"),
        InvalidValue(text: "http://squid.site:-1", offset: 18, phrase: "the proxy's port must be a number from 1 to 65535"),
    ])
    func aBadProxyIsAnErrorAtItsColumn(_ bad: InvalidValue) {
        let (config, diagnostics) = ConfigLoader.decode(Array("feeds: f\nproxy: '\(bad.text)'\n".utf8), file: "c.yaml")
        #expect(diagnostics.map(\.headline) == ["c.yaml:2:\(9 + bad.offset): error: \(bad.phrase)"])
        #expect(config.proxy == nil)
    }

    /// curl's `no_proxy` syntax: a lone `*`, or comma-separated names (a leading dot allowed),
    /// IPv4 and IPv6 addresses (IPv6 without brackets) and networks with `/bits`.
    @Test(arguments: [
        ("*", ["*"]),
        (" * ", ["*"]),
        ("localhost", ["localhost"]),
        ("localhost,127.0.0.1,::1", ["localhost", "127.0.0.1", "::1"]),
        (".example.com, cdn.example.org ,\tintranet", [".example.com", "cdn.example.org", "intranet"]),
        ("example.com.", ["example.com."]),
        ("10.0.0.0/8,192.168.1.0/24,10.1.2.3/32", ["10.0.0.0/8", "192.168.1.0/24", "10.1.2.3/32"]),
        ("fd00::/8,2001:db8::1,::ffff:10.0.0.1,1:2:3:4:5:6:7:8", ["fd00::/8", "2001:db8::1", "::ffff:10.0.0.1", "1:2:3:4:5:6:7:8"]),
        ("KIOSK-01.site_a.example", ["KIOSK-01.site_a.example"]),
    ])
    func noProxyIsCurlsList(text: String, entries: [String]) throws {
        let (config, diagnostics) = ConfigLoader.decode(Array("no_proxy: '\(text)'\n".utf8), file: "c.yaml")
        #expect(diagnostics.isEmpty, "\(diagnostics.map(\.headline))")
        let list = try #require(config.noProxy)
        #expect(list.text == text && list.entries == entries)
    }

    /// Every way a `no_proxy` list can be wrong — each one curl would read as something else,
    /// or never match — reported at its column (the value starts at column 12 of
    /// `no_proxy: '…'`).
    @Test(arguments: [
        InvalidValue(text: "", offset: 0, phrase: "no_proxy cannot be empty: leave the key out, or write '*' to reach every host directly"),
        InvalidValue(text: " \t ", offset: 0, phrase: "no_proxy cannot be empty: leave the key out, or write '*' to reach every host directly"),
        InvalidValue(text: "a,,b", offset: 2, phrase: "an empty entry in no_proxy: a comma too many"),
        InvalidValue(text: "a, ,b", offset: 3, phrase: "an empty entry in no_proxy: a comma too many"),
        InvalidValue(text: "a,", offset: 1, phrase: "an empty entry in no_proxy: a comma too many"),
        InvalidValue(text: ",a", offset: 0, phrase: "an empty entry in no_proxy: a comma too many"),
        InvalidValue(text: "localhost 127.0.0.1", offset: 9, phrase: "no_proxy entries are separated by commas (curl stops reading at a blank)"),
        InvalidValue(text: "*,example.com", offset: 0, phrase: "'*' stands alone: it already means every host"),
        InvalidValue(text: "a, *", offset: 3, phrase: "'*' stands alone: it already means every host"),
        InvalidValue(text: "*.example.com", offset: 0,
                     phrase: "no_proxy has no '*' wildcard in a name: '.example.com' or 'example.com' also matches its subdomains"),
        InvalidValue(text: "cdn.*.com", offset: 4,
                     phrase: "no_proxy has no '*' wildcard in a name: '.example.com' or 'example.com' also matches its subdomains"),
        InvalidValue(text: "a,http://example.com", offset: 6, phrase: "no_proxy lists hosts, not URLs: write the host alone"),
        InvalidValue(text: "[::1]", offset: 0, phrase: "write an IPv6 address in no_proxy without brackets"),
        InvalidValue(text: "example.com:8080", offset: 11, phrase: "no_proxy entries have no port: curl compares host names and addresses only"),
        InvalidValue(text: "127.0.0.1:80", offset: 9, phrase: "no_proxy entries have no port: curl compares host names and addresses only"),
        InvalidValue(text: "1::2::3", offset: 0, phrase: "'1::2::3' is not an IPv6 address"),
        InvalidValue(text: "1:2:3:4:5:6:7", offset: 0, phrase: "'1:2:3:4:5:6:7' is not an IPv6 address"),
        InvalidValue(text: "1:2:3:4:5:6:7:8:9", offset: 0, phrase: "'1:2:3:4:5:6:7:8:9' is not an IPv6 address"),
        InvalidValue(text: "fe80::1%eth0", offset: 0, phrase: "'fe80::1%eth0' is not an IPv6 address"),
        InvalidValue(text: "::12345", offset: 0, phrase: "'::12345' is not an IPv6 address"),
        InvalidValue(text: "::ffff:10.0.0", offset: 0, phrase: "'::ffff:10.0.0' is not an IPv6 address"),
        InvalidValue(text: "10.0.0", offset: 0, phrase: "'10.0.0' is not an IPv4 address"),
        InvalidValue(text: "x,256.1.1.1", offset: 2, phrase: "'256.1.1.1' is not an IPv4 address"),
        InvalidValue(text: "010.1.1.1", offset: 0, phrase: "'010.1.1.1' is not an IPv4 address"),
        InvalidValue(text: "1..1.1", offset: 0, phrase: "'1..1.1' is not an IPv4 address"),
        InvalidValue(text: "example.com/24", offset: 11, phrase: "only an IP address takes a /bits suffix"),
        InvalidValue(text: "10.0.0.0/33", offset: 9, phrase: "the network's /bits must be a number from 1 to 32"),
        InvalidValue(text: "10.0.0.0/0", offset: 9, phrase: "the network's /bits must be a number from 1 to 32"),
        InvalidValue(text: "10.0.0.0/", offset: 9, phrase: "the network's /bits must be a number from 1 to 32"),
        InvalidValue(text: "10.0.0.0/8/8", offset: 9, phrase: "the network's /bits must be a number from 1 to 32"),
        InvalidValue(text: "fd00::/129", offset: 7, phrase: "the network's /bits must be a number from 1 to 128"),
        InvalidValue(text: "exa$mple.com", offset: 3, phrase: "unexpected '$' in a no_proxy host name"),
        InvalidValue(text: "bücher.example", offset: 1, phrase: "write an international host name in no_proxy in its xn-- form"),
        InvalidValue(text: ".", offset: 0, phrase: "a no_proxy entry needs a host name, not only a dot"),
        InvalidValue(text: "..example.com", offset: 1, phrase: "a host name has no empty label ('..')"),
        InvalidValue(text: "cdn..example.com", offset: 3, phrase: "a host name has no empty label ('..')"),
    ])
    func aBadNoProxyIsAnErrorAtItsColumn(_ bad: InvalidValue) {
        let (config, diagnostics) = ConfigLoader.decode(Array("feeds: f\nno_proxy: '\(bad.text)'\n".utf8), file: "c.yaml")
        #expect(diagnostics.map(\.headline) == ["c.yaml:2:\(12 + bad.offset): error: \(bad.phrase)"])
        #expect(config.noProxy == nil)
    }

    /// What is not a string at all, and control characters (which YAML lets through only
    /// as escapes, so the error is at the value).
    @Test func proxyValuesThatAreNoText() {
        let yaml = "proxy: [http://a:1]\nno_proxy: { a: b }\n"
        let (_, diagnostics) = ConfigLoader.decode(Array(yaml.utf8), file: "c.yaml")
        #expect(diagnostics.map(\.headline) == ["c.yaml:1:8: error: proxy must be a value, found a list",
                                                "c.yaml:2:11: error: no_proxy must be a value, found a mapping"])
        let escaped = ConfigLoader.decode(Array("proxy: \"http://a\\x01:1\"\nno_proxy: \"a\\x7fb\"\n".utf8), file: "c.yaml").1
        #expect(escaped.map(\.headline) == ["c.yaml:1:8: error: a proxy URL cannot contain control characters",
                                            "c.yaml:2:11: error: no_proxy cannot contain control characters"])
        let empty = ConfigLoader.decode(Array("proxy:\nno_proxy: ~\n".utf8), file: "c.yaml").1
        #expect(empty.map(\.headline) == ["c.yaml:1:7: error: proxy must be a value, found nothing (null)",
                                          "c.yaml:2:11: error: no_proxy must be a value, found nothing (null)"])
    }
}

/// SPEC §5/§7's `response_timeout`: 2m by default, a duration above 0s.
extension ConfigTests {
    @Test func responseTimeout() {
        #expect(Config().responseTimeout.seconds == 120)
        let (config, diagnostics) = ConfigLoader.decode(Array("response_timeout: 45s\n".utf8), file: "c.yaml")
        #expect(diagnostics.isEmpty && config.responseTimeout.seconds == 45)
        let (_, bad) = ConfigLoader.decode(Array("response_timeout: 0s\nresponse_timeot: 1m\n".utf8), file: "c.yaml")
        #expect(bad.map(\.headline) == ["c.yaml:1:19: error: response_timeout must be longer than 0s",
                                        "c.yaml:2:1: error: unknown key 'response_timeot' in the configuration (did you mean 'response_timeout'?)"])
    }
}
