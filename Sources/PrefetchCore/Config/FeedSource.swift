import Foundation

/// One entry of the config's `feed_sources` (SPEC §8): a manifest fetched from a central
/// place, checked against its keys and applied whole, or not at all.
public struct FeedSource: Sendable {
    /// The manifest's URL as written (the per-machine offset hashes it, query included).
    public var url: ResourceURL
    /// How long after its last check the source is due again (default 15m).
    public var refresh: TimeSpan = .minutes(15)
    /// The minisign public keys any one of which may sign it (empty: unsigned, https only).
    public var publicKeys: [MinisignPublicKey] = []
    /// Where the detached signature is: the URL with `.minisig` on its path, query kept.
    public var signature: ResourceURL
    /// Request headers, `${VAR}` expanded at request time as a resource's.
    public var headers: [HeaderField] = []
    /// The feed name the manifest must have; also the source's label.
    public var name: String?
    /// A client certificate (PEM files) for this source's own fetches (mTLS), in place of
    /// the config's.
    public var clientCertificate: ClientCertificate?
    /// Where the entry starts in the config.
    public var location: SourceLocation

    /// How the source is named in output and metrics: its `name`, else the URL with its
    /// query values elided (`…/feeds?site=…`).
    public var label: String { name ?? Self.label(of: url) }

    /// The URL as a label: each query value elided, its key kept (`?site=…&t=…`); a query
    /// part without `=` is elided whole.
    public static func label(of url: ResourceURL) -> String {
        guard let query = url.query, let mark = url.text.utf8.firstIndex(of: UInt8(ascii: "?")) else { return url.text }
        let base = String(decoding: url.text.utf8[..<mark], as: UTF8.self)
        let parts = query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
            guard let equals = part.firstIndex(of: "=") else { return "…" }
            return part[..<equals] + "=…"
        }
        return base + "?" + parts.joined(separator: "&")
    }

    /// The default signature URL: `.minisig` appended to the path, any query kept
    /// (`…/lobby.yaml?t=X` → `…/lobby.yaml.minisig?t=X`).
    public static func defaultSignature(of url: ResourceURL) -> String {
        let text = url.text
        var end = text.utf8.endIndex
        if let mark = text.utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { end = mark }
        let head = String(decoding: text.utf8[..<end], as: UTF8.self)
        let tail = String(decoding: text.utf8[end...], as: UTF8.self)
        return head + ".minisig" + tail
    }

    /// The feed name a manifest of this URL has when it gives none: the URL's file stem
    /// (its last path segment, percent-decoded, without `.yaml` or `.yml`); nil when there
    /// is none.
    public var defaultFeedName: String? {
        guard let segment = (try? url.lastSegment()) ?? nil else { return nil }
        for suffix in [".yaml", ".yml"] where segment.hasSuffix(suffix) { return String(segment.dropLast(suffix.count)) }
        return segment
    }

    /// Whether the source's manifest must carry a signature.
    public var isSigned: Bool { !publicKeys.isEmpty }
}

/// Reads `feed_sources` out of the config, with the config's strictness and error form.
enum FeedSourceDecoder {
    static let keys = ["url", "refresh", "public_key", "public_keys", "signature", "headers", "name", "client_cert", "client_key"]

    /// The entries of `node`; every problem reported on `reader`. `absolute` anchors file paths.
    static func decode(_ node: YAMLNode, reader: inout NodeReader, absolute: (String) -> String) -> [FeedSource] {
        guard let items = reader.list(node, what: "feed_sources") else { return [] }
        var sources: [FeedSource] = []
        var labels: [String: SourceLocation] = [:]
        for item in items {
            guard let source = decodeEntry(item, reader: &reader, absolute: absolute) else { continue }
            if let first = labels[source.label] {
                let at = source.name == nil ? (item.location) : item.location
                reader.error("feed source '\(source.label)' is listed twice (first at line \(first.line)); give one a different 'name'", at: at)
                continue
            }
            labels[source.label] = item.location
            sources.append(source)
        }
        return sources
    }

    private static func decodeEntry(_ item: YAMLNode, reader: inout NodeReader, absolute: (String) -> String) -> FeedSource? {
        guard let entries = reader.mapping(item, allowed: keys, what: "a feed source") else { return nil }
        let errorsBefore = reader.errorCount
        guard let urlNode = entries["url"]?.value else {
            reader.error("a feed source needs a 'url'", at: item.location)
            return nil
        }
        guard let url = reader.value(urlNode, what: "url", limit: InputLimits.url, ResourceURL.parse) else { return nil }
        var signature = url
        if let node = entries["signature"]?.value {
            guard let parsed = reader.value(node, what: "signature", limit: InputLimits.url, ResourceURL.parse) else { return nil }
            signature = parsed
        } else if let parsed = try? ResourceURL.parse(FeedSource.defaultSignature(of: url)) {
            signature = parsed
        }
        var source = FeedSource(url: url, signature: signature, location: item.location)
        if let node = entries["refresh"]?.value, let span = reader.positiveSpan(node, what: "refresh") { source.refresh = span }
        if entries["public_key"] != nil, let other = entries["public_keys"] {
            reader.error("give either public_key or public_keys, not both", at: other.key.location)
        }
        if let node = entries["public_key"]?.value, let key = reader.value(node, what: "public_key", MinisignPublicKey.init(parsing:)) {
            source.publicKeys = [key]
        }
        if let node = entries["public_keys"]?.value, let items = reader.list(node, what: "public_keys") {
            if items.isEmpty { reader.error("public_keys must list at least one key, or be left out", at: node.location) }
            for item in items {
                if let key = reader.value(item, what: "a public key", MinisignPublicKey.init(parsing:)) { source.publicKeys.append(key) }
            }
        }
        if let node = entries["headers"]?.value { source.headers = reader.headers(node) }
        if let node = entries["name"]?.value {
            source.name = reader.value(node, what: "name") { (text) throws(ValueError) -> String in
                if let problem = FeedName.problem(text) { throw problem }
                return text
            }
        }
        source.clientCertificate = reader.clientCertificate(entries, absolute: absolute)
        // A manifest over plain http is only as trustworthy as every network on the way:
        // it must be signed (SPEC §8).
        if url.scheme == "http" && source.publicKeys.isEmpty {
            reader.error("a feed source over plain http needs a public_key (its manifest must be signed), or use https", at: urlNode.location)
        }
        if source.name == nil, reader.errorCount == errorsBefore, source.defaultFeedName.map({ FeedName.problem($0) != nil }) ?? true {
            reader.error("the URL's file name gives no valid feed name ([a-z0-9][a-z0-9._-]{0,63}); add 'name:'", at: urlNode.location)
        }
        return reader.errorCount == errorsBefore ? source : nil
    }
}
