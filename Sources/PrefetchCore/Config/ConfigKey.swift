/// One key of the configuration file (SPEC §5–§8): what the loader accepts, and what `help`,
/// the man page and docs/configuration.md's key table say about it. The table is the one
/// list: `ConfigLoader` takes its keys from it, and a test holds the manual's table to it.
public struct ConfigKey: Sendable {
    /// The key as written in config.yaml.
    public let name: String
    /// The kind of value, as the manual's "Type" column says it.
    public let form: String
    /// The default, as the manual's "Default" column says it.
    public let defaultValue: String
    /// One line on what it does.
    public let summary: String

    init(_ name: String, _ form: String, _ defaultValue: String, _ summary: String) {
        self.name = name
        self.form = form
        self.defaultValue = defaultValue
        self.summary = summary
    }

    /// Every key, in the manual's order.
    public static let all: [ConfigKey] = [
        .init("feeds", "path", "/etc/prefetch/feeds", "The feeds folder (--feeds overrides it)."),
        .init("cache", "path", "/var/cache/prefetch", "The cache folder (--cache overrides it)."),
        .init("max_size", "size", "16GiB", "The global cap on one resource."),
        .init("ca_file", "path", "the system's CA store", "A PEM bundle to verify TLS with, in place of the system's."),
        .init("metered_default", "metered | unmetered", "unmetered", "What the link counts as when NetworkManager cannot say."),
        .init("machine_id", "string", "/etc/machine-id, else /var/lib/dbus/machine-id", "The id jitter is derived from."),
        .init("concurrency", "whole number", "16", "Transfers at once over all feeds (1 to 1024)."),
        .init("per_host", "whole number", "6", "Transfers at once to one origin (1 to 1024)."),
        .init("connect_timeout", "duration", "30s", "The TCP connect and TLS handshake."),
        .init("stall_timeout", "duration", "60s", "Under 1 KiB/s for this long aborts a transfer (it resumes later)."),
        .init("response_timeout", "duration", "2m", "A response head not whole this long after its request fails it."),
        .init("max_redirects", "whole number", "10", "Redirects followed before a resource fails (0 to 100)."),
        .init("verify_every", "duration", "7d", "How often the daemon re-hashes the cache in its idle time."),
        .init("metrics_file", "path", "none", "Where run and the daemon write Prometheus metrics (--metrics-file overrides it)."),
        .init("starved_after", "whole number, 1 or more", "3", "Missed windows in a row at which status calls a feed starved."),
        .init("removed_feed_grace", "duration", "7d", "How long the folder of a feed whose manifest is gone is kept."),
        .init("proxy", "URL", "none: the environment's http_proxy, https_proxy, all_proxy, as curl reads them",
              "The proxy for every request, in place of the environment's."),
        .init("no_proxy", "curl's no_proxy list", "none: the environment's no_proxy", "Hosts reached directly, in place of the environment's no_proxy."),
        .init("max_manifest_size", "size", "64MiB", "A feed manifest over it is refused before it is parsed (1KiB to 1GiB)."),
        .init("feed_sources", "list of sources", "none",
              "Manifests fetched from a central place: url, refresh, public_key, public_keys, signature, headers, name, client_cert, client_key."),
        .init("client_cert", "path", "none", "The TLS client certificate (PEM) presented to every origin that asks for one."),
        .init("client_key", "path", "none", "client_cert's private key (PEM, unencrypted), if not in client_cert's file."),
        .init("max_cache_size", "size", "none", "The most bytes the cached files may take, all feeds together; due work past it waits (cache full)."),
    ]

    /// The keys' names, in the table's order.
    public static var names: [String] { all.map(\.name) }
}
