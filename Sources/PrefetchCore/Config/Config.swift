import Foundation

/// The machine-wide settings of `/etc/prefetch/config.yaml` (SPEC §5), with defaults.
public struct Config: Sendable {
    /// Where the configuration was read from; nil when the defaults are used.
    public var file: String?
    /// The feeds folder.
    public var feeds: String = "/etc/prefetch/feeds"
    /// The cache folder.
    public var cache: String = "/var/cache/prefetch"
    /// The global cap on one resource's size.
    public var maxSize: ByteSize = ByteSize(bytes: 16 << 30)
    /// A CA bundle to verify TLS with, in place of the system's.
    public var caFile: String?
    /// Whether the link counts as metered when NetworkManager cannot say.
    public var meteredDefault: MeteredDefault = .unmetered
    /// Overrides `/etc/machine-id` for jitter.
    public var machineID: String?
    /// Transfers at once, over all feeds.
    public var concurrency: Int = 16
    /// Transfers at once to one origin (scheme, host, port).
    public var perHost: Int = 6
    public var connectTimeout: TimeSpan = TimeSpan(seconds: 30)
    /// Under 1 KiB/s for this long aborts a transfer (it resumes later).
    public var stallTimeout: TimeSpan = TimeSpan(seconds: 60)
    /// A response head not whole this long after its request was sent fails it (SPEC §7).
    public var responseTimeout: TimeSpan = TimeSpan(seconds: 120)
    /// Redirects followed before a resource fails.
    public var maxRedirects: Int = 10
    /// How often the daemon re-hashes the cache in its idle time (SPEC §6, `verify`).
    public var verifyEvery: TimeSpan = .hours(24 * 7)
    /// Where `run` and `daemon` write Prometheus metrics after every pass (SPEC §6); nil: nowhere.
    public var metricsFile: String?
    /// Missed windows in a row at which `status` calls a feed starved (SPEC §6).
    public var starvedAfter: Int = 3
    /// How long the folder of a feed whose manifest is gone is kept (SPEC §6).
    public var removedFeedGrace: TimeSpan = .hours(24 * 7)
    /// The proxy for every request, in place of the environment's `http_proxy`,
    /// `https_proxy` and `all_proxy`; nil: those apply, as curl reads them.
    public var proxy: ProxyURL?
    /// Hosts reached directly, in place of the environment's `no_proxy`, for the config's
    /// proxy and the environment's alike; nil: the environment's `no_proxy` applies.
    public var noProxy: NoProxyList?
    /// The largest feed manifest read (SPEC §7); a larger one is refused before it is parsed.
    public var maxManifestSize: ByteSize = ByteSize(bytes: InputLimits.defaultManifestSize)
    /// Manifests fetched from a central place (SPEC §8), in the config's order.
    public var feedSources: [FeedSource] = []
    /// The client certificate presented to every origin that asks for one (SPEC §8,
    /// `client_cert` and `client_key`); nil: none.
    public var clientCertificate: ClientCertificate?
    /// The most bytes the cached files may take (SPEC §8, `max_cache_size`); nil: no cap.
    public var maxCacheSize: ByteSize?

    /// The path of the default configuration file.
    public static let defaultPath = "/etc/prefetch/config.yaml"

    /// What to assume about the link when no probe knows.
    public enum MeteredDefault: String, Sendable { case metered, unmetered }

    /// A configuration with every default.
    public init() {}
}

/// Loads and checks a configuration file with the same strictness as feeds.
public enum ConfigLoader {
    /// The keys a configuration may have (`ConfigKey.all` says what each is).
    public static let keys = ConfigKey.names

    /// Where the config's scalars have limits of their own (SPEC §8's `feed_sources` URLs
    /// among them).
    static let scalars = ScalarLimits(value: .value, key: .key, rules: [
        .init([.key("no_proxy")], InputLimits.noProxy),
        .init([.key("proxy")], InputLimits.url),
        .init([.key("feed_sources"), .item, .key("url")], InputLimits.url),
        .init([.key("feed_sources"), .item, .key("signature")], InputLimits.url),
        .init([.key("feed_sources"), .item, .key("headers"), .anyKey], InputLimits.headerValue),
    ])

    /// Reads `path`. A missing file is an error only when `required` (an explicit `--config`).
    /// A file over 1 MiB is refused before it is parsed (SPEC §7).
    public static func load(path: String, required: Bool) -> (config: Config, diagnostics: [Diagnostic], source: SourceText?) {
        let bytes: [UInt8]
        switch FileSystem.readFile(path, limit: InputLimits.configSize) {
        case .success(.bytes(let data)):
            bytes = data
        case .success(.tooLarge(let size, let exact)):
            return (Config(), [Diagnostic(.error, file: path, at: nil, tooLarge(size: size, exact: exact))], nil)
        case .failure(let error):
            if error.code == ENOENT && !required { return (Config(), [], nil) }
            return (Config(), [Diagnostic(.error, file: path, at: nil, "cannot read the configuration: \(error)")], nil)
        }
        let (config, diagnostics) = decode(bytes, file: path)
        return (config, diagnostics, SourceText(bytes: bytes))
    }

    /// Decodes configuration text; `file` names it in diagnostics and anchors relative paths.
    /// The bytes are all there is to it (the fuzzing entry point): the same limits apply as
    /// to a file, its size first.
    public static func decode(_ bytes: [UInt8], file: String) -> (Config, [Diagnostic]) {
        var config = Config()
        config.file = file
        if bytes.count > InputLimits.configSize {
            return (config, [Diagnostic(.error, file: file, at: nil, tooLarge(size: bytes.count, exact: true))])
        }
        var reader = NodeReader(file: file)
        let root: YAMLNode?
        do {
            let document = try YAMLParser.parse(bytes, limits: ConfigLoader.scalars)
            root = document.root
            for problem in document.problems { reader.error(problem.message, at: problem.location) }
        } catch {
            return (config, [Diagnostic(.error, file: file, at: error.location, error.message)])
        }
        guard let root, !root.isNull else { return (config, reader.finished()) }  // an empty config means defaults
        guard let entries = reader.mapping(root, allowed: keys, what: "the configuration") else {
            return (config, reader.finished())
        }
        let folder = (file as NSString).deletingLastPathComponent
        func absolute(_ path: String) -> String {
            path.hasPrefix("/") || folder.isEmpty ? path : folder + "/" + path
        }
        if let node = entries["feeds"]?.value, let text = reader.string(node, what: "feeds") { config.feeds = absolute(text) }
        if let node = entries["cache"]?.value, let text = reader.string(node, what: "cache") { config.cache = absolute(text) }
        if let node = entries["max_size"]?.value, let size = reader.value(node, what: "max_size", ByteSize.parse) {
            if size.bytes == 0 { reader.error("max_size must be more than 0", at: node.location) } else { config.maxSize = size }
        }
        if let node = entries["ca_file"]?.value, let text = reader.string(node, what: "ca_file") {
            let path = absolute(text)
            if access(path, R_OK) != 0 {
                reader.error("ca_file '\(path)' cannot be read", at: node.location)
            }
            config.caFile = path
        }
        if let node = entries["metered_default"]?.value,
           let value = reader.choice(node, what: "metered_default", [("metered", Config.MeteredDefault.metered), ("unmetered", .unmetered)]) {
            config.meteredDefault = value
        }
        if let node = entries["machine_id"]?.value, let text = reader.string(node, what: "machine_id") {
            if text.trimmingSpaces().isEmpty { reader.error("machine_id cannot be empty", at: node.location) } else { config.machineID = text }
        }
        if let node = entries["concurrency"]?.value, let n = reader.integer(node, what: "concurrency", range: 1...1024) { config.concurrency = n }
        if let node = entries["per_host"]?.value, let n = reader.integer(node, what: "per_host", range: 1...1024) { config.perHost = n }
        if let node = entries["connect_timeout"]?.value, let span = reader.positiveSpan(node, what: "connect_timeout") { config.connectTimeout = span }
        if let node = entries["stall_timeout"]?.value, let span = reader.positiveSpan(node, what: "stall_timeout") { config.stallTimeout = span }
        if let node = entries["max_redirects"]?.value, let n = reader.integer(node, what: "max_redirects", range: 0...100) { config.maxRedirects = n }
        if let node = entries["response_timeout"]?.value, let span = reader.positiveSpan(node, what: "response_timeout") { config.responseTimeout = span }
        if let node = entries["verify_every"]?.value, let span = reader.positiveSpan(node, what: "verify_every") { config.verifyEvery = span }
        if let node = entries["metrics_file"]?.value, let text = reader.string(node, what: "metrics_file") {
            if text.isEmpty || text.hasSuffix("/") {
                reader.error("metrics_file must name a file, found '\(text)'", at: node.location)
            } else {
                config.metricsFile = absolute(text)
            }
        }
        if let node = entries["starved_after"]?.value, let n = reader.integer(node, what: "starved_after", range: 1...100_000) { config.starvedAfter = n }
        if let node = entries["removed_feed_grace"]?.value, let span = reader.positiveSpan(node, what: "removed_feed_grace") {
            config.removedFeedGrace = span
        }
        if let node = entries["proxy"]?.value, let proxy = reader.value(node, what: "proxy", limit: InputLimits.url, ProxyURL.parse) {
            config.proxy = proxy
        }
        if let node = entries["no_proxy"]?.value, let list = reader.value(node, what: "no_proxy", limit: InputLimits.noProxy, NoProxyList.parse) {
            config.noProxy = list
        }
        config.clientCertificate = reader.clientCertificate(entries, absolute: absolute)
        if let node = entries["max_manifest_size"]?.value, let size = reader.value(node, what: "max_manifest_size", ByteSize.parse) {
            let range = InputLimits.manifestSizes
            if range.contains(size.bytes) {
                config.maxManifestSize = size
            } else {
                reader.error("max_manifest_size must be from \(ByteSize(bytes: range.lowerBound)) to \(ByteSize(bytes: range.upperBound)), found \(node.scalar ?? "\(size)")",
                             at: node.location)
            }
        }
        if let node = entries["max_cache_size"]?.value, let size = reader.value(node, what: "max_cache_size", ByteSize.parse) {
            if size.bytes == 0 { reader.error("max_cache_size must be more than 0", at: node.location) } else { config.maxCacheSize = size }
        }
        if let node = entries["feed_sources"]?.value, !node.isNull {
            config.feedSources = FeedSourceDecoder.decode(node, reader: &reader, absolute: absolute)
        }
        return (config, reader.finished())
    }

    /// The error for a config file of `size` bytes, over the 1 MiB a config may have.
    static func tooLarge(size: Int, exact: Bool) -> String {
        InputLimits.tooLarge("configuration", size: size, exact: exact,
                                limit: "the 1MiB (\(InputLimits.configSize) bytes) a configuration may have")
    }
}

extension NodeReader {
    /// A duration above zero.
    mutating func positiveSpan(_ node: YAMLNode, what: String) -> TimeSpan? {
        value(node, what: what) { (text) throws(ValueError) -> TimeSpan in
            let span = try TimeSpan.parse(text)
            guard span.seconds > 0 else { throw ValueError("\(what) must be longer than 0s") }
            return span
        }
    }
}
