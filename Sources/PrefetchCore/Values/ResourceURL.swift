/// An `http` or `https` URL from a manifest, split into the parts prefetch uses.
///
/// Compact (a manifest holds many): the text as written, the host (lowercased, and
/// interned by the manifest's decoder, so a feed's thousands of URLs share a handful of
/// host strings), and byte offsets of the path and query into the text; `scheme`, `path`
/// and `query` are made from those when asked.
public struct ResourceURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL exactly as written.
    public let text: String
    /// The host, lowercased (brackets kept for an IPv6 literal).
    public let host: String
    /// Byte offsets into `text`: the path `pathStart..<pathEnd` (empty: `/`), and the query
    /// `queryStart..<queryEnd` after its `?` when `hasQuery`.
    private let pathStart: UInt32, pathEnd: UInt32, queryEnd: UInt32
    private let portNumber: UInt16
    private let isHTTPS: Bool
    private let hasQuery: Bool

    /// `http` or `https`, lowercased.
    public var scheme: String { isHTTPS ? "https" : "http" }
    /// The port, explicit or the scheme's default.
    public var port: Int { Int(portNumber) }
    /// The path, still percent-encoded; `/` when the URL has none.
    public var path: String {
        pathEnd > pathStart ? slice(Int(pathStart)..<Int(pathEnd)) : "/"
    }
    /// Where the path is in `text`'s UTF-8 bytes (empty when the URL has none).
    var pathBytes: Range<Int> { Int(pathStart)..<Int(pathEnd) }
    /// The query without `?`, if any.
    public var query: String? {
        hasQuery ? slice(Int(pathEnd) + 1..<Int(queryEnd)) : nil
    }

    private func slice(_ range: Range<Int>) -> String {
        let utf8 = text.utf8
        return String(Substring(utf8[utf8.index(utf8.startIndex, offsetBy: range.lowerBound)..<utf8.index(utf8.startIndex, offsetBy: range.upperBound)]))
    }

    /// The URL as shown to people: query values elided (`?…`), since signed URLs carry tokens there.
    public var redacted: String {
        // The '?' byte, as the parser found it: "?\u{317}" is no Character "?", and the
        // query after it would be shown whole, token and all.
        guard hasQuery, let mark = text.utf8.firstIndex(of: UInt8(ascii: "?")) else { return text }
        return String(decoding: text.utf8[..<mark], as: UTF8.self) + "?…"
    }

    public var description: String { redacted }

    /// The origin that connection caps count by: scheme, host and port.
    public var origin: String { "\(scheme)://\(host):\(port)" }

    /// SHA-256 of the URL's identity — scheme, host, port and path, without the query —
    /// as state.db records it: a changed URL is noticed without storing query values, and
    /// a change of the query alone is no change (signed URLs rotate their tokens; SPEC §5).
    public var identityHash: String {
        var text = origin + path
        return text.withUTF8 { SHA256.hexDigest(UnsafeRawBufferPointer($0)) }
    }

    /// `identityHash` as its 32 bytes, hashed from the URL's own bytes with no string made
    /// (the planner compares it with every record's hash; `identityHash` made four).
    var identityDigest: Digest256 {
        var text = self.text, host = self.host
        return text.withUTF8 { url in
            host.withUTF8 { host in
                let path = pathEnd > pathStart ? UnsafeBufferPointer(rebasing: url[Int(pathStart)..<Int(pathEnd)]) : nil
                let count = 8 + 3 + host.count + 6 + (path?.count ?? 1)
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
                    var at = 0
                    func put(_ bytes: some Sequence<UInt8>) { for byte in bytes { buffer[at] = byte; at += 1 } }
                    put((isHTTPS ? "https" : "http").utf8)
                    put("://".utf8)
                    put(host)
                    put(":".utf8)
                    put(String(portNumber).utf8)
                    if let path { put(path) } else { put("/".utf8) }
                    return withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { out in
                        SHA256.digest(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[..<at])), into: out)
                        return Digest256(bytes: UnsafeRawBufferPointer(out))
                    }
                }
            }
        }
    }

    /// Whether a hash state.db recorded names this URL: its identity hash (`identity`, when
    /// the caller has it, else computed), or version 1's mark of the same URL written alike.
    public func matches(recorded: String, identity: String? = nil) -> Bool {
        if recorded == (identity.flatMap { $0.isEmpty ? nil : $0 } ?? identityHash) { return true }
        return recorded.hasPrefix("v1:") && recorded.dropFirst(3) == legacyHash
    }

    /// The hash state.db version 1 recorded: of the URL as written, query included (only
    /// to re-key such records; see `StateStore.migrations`).
    var legacyHash: String {
        var text = self.text
        return text.withUTF8 { SHA256.hexDigest(UnsafeRawBufferPointer($0)) }
    }

    /// Parses an absolute http(s) URL. Works on UTF-8 bytes (manifests list many URLs);
    /// error offsets are converted to characters.
    public static func parse(_ text: String) throws(ValueError) -> ResourceURL {
        var none: StringInterner? = nil
        return try parse(text, hosts: &none)
    }

    /// Parses as `parse(_:)`, taking the host string from `hosts` when it holds an equal one.
    static func parse(_ text: String, hosts: inout StringInterner?) throws(ValueError) -> ResourceURL {
        var bytes = text  // the same storage; `withUTF8` is mutating
        if let plain = bytes.withUTF8({ plain($0, text: text, hosts: &hosts) }) { return plain }
        return try parseInFull(text, hosts: &hosts)
    }

    /// `parse` the long way, for every URL: what the short way (`plain`) must agree with.
    static func parseInFull(_ text: String, hosts: inout StringInterner?) throws(ValueError) -> ResourceURL {
        let u = Array(text.utf8)
        func characters(_ byte: Int) -> Int { String(decoding: u[..<byte], as: UTF8.self).count }
        func string(_ range: Range<Int>) -> String { String(decoding: u[range], as: UTF8.self) }
        for (index, byte) in u.enumerated() {
            let c1 = byte == 0xC2 && index + 1 < u.count && (0x80...0x9F).contains(u[index + 1])
            if byte <= 0x20 || byte == 0x7f || c1 {
                throw ValueError(byte == 0x20 ? "a URL cannot contain spaces; write them as %20" : "a URL cannot contain control characters",
                                 at: characters(index))
            }
        }
        guard let colon = u.firstIndex(of: UInt8(ascii: ":")) else {
            throw ValueError("expected an absolute URL such as https://example.com/file")
        }
        let scheme = string(0..<colon).lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw ValueError("only http and https URLs are fetched, not '\(scheme)'")
        }
        guard u.count >= colon + 3, u[colon + 1] == UInt8(ascii: "/"), u[colon + 2] == UInt8(ascii: "/") else {
            throw ValueError("expected '//' after '\(scheme):'", at: characters(colon + 1))
        }
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < u.count, u[authorityEnd] != UInt8(ascii: "/"), u[authorityEnd] != UInt8(ascii: "?"),
              u[authorityEnd] != UInt8(ascii: "#") {
            authorityEnd += 1
        }
        if u[authorityStart..<authorityEnd].contains(UInt8(ascii: "@")) {
            throw ValueError("credentials in a URL would be shown in logs; send them as a header with ${VAR}", at: characters(authorityStart))
        }
        var hostEnd = authorityEnd
        if authorityStart < authorityEnd, u[authorityStart] == UInt8(ascii: "[") {
            guard let close = u[authorityStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]")) else {
                throw ValueError("unclosed '[' in the URL's host", at: characters(authorityStart))
            }
            hostEnd = close + 1
            if hostEnd < authorityEnd, u[hostEnd] != UInt8(ascii: ":") {
                throw ValueError("unexpected text after the IPv6 address", at: characters(authorityStart))
            }
        } else if let portColon = u[authorityStart..<authorityEnd].firstIndex(of: UInt8(ascii: ":")) {
            hostEnd = portColon
        }
        var port = scheme == "https" ? 443 : 80
        if hostEnd < authorityEnd {  // ":" then the port; `host:` means the default port (RFC 3986 §3.2.3)
            let digits = u[(hostEnd + 1)..<authorityEnd]
            if !digits.isEmpty {
                var number = 0
                for digit in digits {
                    guard digit >= 48, digit <= 57, number <= 65535 else { number = 0; break }
                    number = number * 10 + Int(digit - 48)
                }
                guard (1...65535).contains(number) else {
                    throw ValueError("the port must be a number from 1 to 65535", at: characters(hostEnd + 1))
                }
                port = number
            }
        }
        guard hostEnd > authorityStart else { throw ValueError("the URL has no host", at: characters(authorityStart)) }
        let fragment = u[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? u.count
        let mark = u[authorityEnd..<fragment].firstIndex(of: UInt8(ascii: "?"))
        let pathEnd = mark ?? fragment
        var host = string(authorityStart..<hostEnd).lowercased()
        if hosts != nil { host = hosts!.intern(host) }
        return ResourceURL(text: text, host: host, pathStart: UInt32(authorityEnd), pathEnd: UInt32(pathEnd),
                           queryEnd: UInt32(fragment), portNumber: UInt16(port), isHTTPS: scheme == "https", hasQuery: mark != nil)
    }

    /// The usual URL, read on its bytes with nothing made on the way: printable ASCII,
    /// `http://` or `https://` in lowercase, a host in lowercase with no `@` or `[`, a valid
    /// port if any. Nil for anything else, which `parse` reads the long way (and reports);
    /// what it returns is what the long way returns.
    private static func plain(_ u: UnsafeBufferPointer<UInt8>, text: String, hosts: inout StringInterner?) -> ResourceURL? {
        // "http" then "s://" or "://", in lowercase.
        guard u.count > 8, u[0] == 0x68, u[1] == 0x74, u[2] == 0x74, u[3] == 0x70 else { return nil }
        let isHTTPS = u[4] == 0x73
        let colon = isHTTPS ? 5 : 4
        guard u[colon] == 0x3A, u[colon + 1] == 0x2F, u[colon + 2] == 0x2F else { return nil }
        for byte in u where byte <= 0x20 || byte >= 0x7F { return nil }
        let authorityStart = isHTTPS ? 8 : 7
        var authorityEnd = authorityStart
        var portColon: Int?
        while authorityEnd < u.count {
            let byte = u[authorityEnd]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") || byte == UInt8(ascii: "[") || (byte >= 0x41 && byte <= 0x5A) { return nil }
            if byte == UInt8(ascii: ":"), portColon == nil { portColon = authorityEnd }
            authorityEnd += 1
        }
        let hostEnd = portColon ?? authorityEnd
        guard hostEnd > authorityStart else { return nil }
        var port = isHTTPS ? 443 : 80
        if hostEnd + 1 < authorityEnd {
            var number = 0
            for digit in u[(hostEnd + 1)..<authorityEnd] {
                guard digit >= 48, digit <= 57, number <= 65535 else { return nil }
                number = number * 10 + Int(digit - 48)
            }
            guard (1...65535).contains(number) else { return nil }
            port = number
        }
        var fragment = authorityEnd
        var mark: Int?
        while fragment < u.count, u[fragment] != UInt8(ascii: "#") {
            if mark == nil, u[fragment] == UInt8(ascii: "?") { mark = fragment }
            fragment += 1
        }
        let hostBytes = UnsafeBufferPointer(rebasing: u[authorityStart..<hostEnd])
        let host = hosts != nil ? hosts!.intern(hostBytes) : String(decoding: hostBytes, as: UTF8.self)
        return ResourceURL(text: text, host: host, pathStart: UInt32(authorityEnd), pathEnd: UInt32(mark ?? fragment),
                           queryEnd: UInt32(fragment), portNumber: UInt16(port), isHTTPS: isHTTPS, hasQuery: mark != nil)
    }

    private init(text: String, host: String, pathStart: UInt32, pathEnd: UInt32, queryEnd: UInt32, portNumber: UInt16,
                 isHTTPS: Bool, hasQuery: Bool) {
        self.text = text
        self.host = host
        self.pathStart = pathStart
        self.pathEnd = pathEnd
        self.queryEnd = queryEnd
        self.portNumber = portNumber
        self.isHTTPS = isHTTPS
        self.hasQuery = hasQuery
    }

    /// The default cache path: the URL path's last segment, percent-decoded, without the
    /// query. Nil when the path ends in `/` (then the manifest needs an explicit `path`).
    public func lastSegment() throws(ValueError) -> String? {
        // On bytes: a '/' with a combining mark after it is no Character "/" (`hasSuffix`,
        // `lastIndex(of:)` would miss it), but it is a '/' in the path.
        guard path.utf8.last != UInt8(ascii: "/"), let slash = path.lastSlash else { return nil }
        let segment = Substring(path.utf8[path.utf8.index(after: slash)...])
        guard let decoded = Self.percentDecode(segment) else {
            throw ValueError("the URL's last segment has a malformed %-escape")
        }
        return decoded
    }

    static func percentDecode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: return byte - 48
        case 65...70: return byte - 55
        case 97...102: return byte - 87
        default: return nil
        }
    }
}
