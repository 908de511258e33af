/// An `http` or `https` URL from a manifest, split into the parts prefetch uses.
public struct ResourceURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL exactly as written.
    public let text: String
    /// `http` or `https`, lowercased.
    public let scheme: String
    /// The host, lowercased (brackets kept for an IPv6 literal).
    public let host: String
    /// The port, explicit or the scheme's default.
    public let port: Int
    /// The path, still percent-encoded; `/` when the URL has none.
    public let path: String
    /// The query without `?`, if any.
    public let query: String?

    /// The URL as shown to people: query values elided (`?…`), since signed URLs carry tokens there.
    public var redacted: String {
        guard query != nil, let mark = text.firstIndex(of: "?") else { return text }
        return String(text[..<mark]) + "?…"
    }

    public var description: String { redacted }

    /// The origin that connection caps count by: scheme, host and port.
    public var origin: String { "\(scheme)://\(host):\(port)" }

    /// Parses an absolute http(s) URL.
    public static func parse(_ text: String) throws(ValueError) -> ResourceURL {
        let chars = Array(text.unicodeScalars)
        for (index, scalar) in chars.enumerated() where scalar.value <= 0x20 || scalar.value == 0x7f {
            throw ValueError(scalar == " " ? "a URL cannot contain spaces; write them as %20" : "a URL cannot contain control characters", at: index)
        }
        guard let colon = text.firstIndex(of: ":") else {
            throw ValueError("expected an absolute URL such as https://example.com/file")
        }
        let scheme = text[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw ValueError("only http and https URLs are fetched, not '\(scheme)'")
        }
        let afterScheme = text[text.index(after: colon)...]
        guard afterScheme.hasPrefix("//") else {
            throw ValueError("expected '//' after '\(scheme):'", at: scheme.count + 1)
        }
        let authorityStart = afterScheme.index(afterScheme.startIndex, offsetBy: 2)
        let rest = text[authorityStart...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = String(rest[..<authorityEnd])
        let authorityOffset = scheme.count + 3
        if authority.contains("@") {
            throw ValueError("credentials in a URL would be shown in logs; send them as a header with ${VAR}", at: authorityOffset)
        }
        var host = authority
        var port = scheme == "https" ? 443 : 80
        let hostEnd: String.Index?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ValueError("unclosed '[' in the URL's host", at: authorityOffset)
            }
            hostEnd = authority.index(after: close) < authority.endIndex ? authority.index(after: close) : nil
            if let hostEnd, authority[hostEnd] != ":" {
                throw ValueError("unexpected text after the IPv6 address", at: authorityOffset)
            }
        } else {
            hostEnd = authority.firstIndex(of: ":")
        }
        if let hostEnd {
            host = String(authority[..<hostEnd])
            let portText = authority[authority.index(after: hostEnd)...]
            let portOffset = authorityOffset + authority.distance(from: authority.startIndex, to: hostEnd) + 1
            if !portText.isEmpty {  // `host:` means the default port (RFC 3986 §3.2.3)
                guard let number = Int(portText), portText.allSatisfy({ $0.isASCII && $0.isNumber }), (1...65535).contains(number) else {
                    throw ValueError("the port must be a number from 1 to 65535", at: portOffset)
                }
                port = number
            }
        }
        guard !host.isEmpty else { throw ValueError("the URL has no host", at: authorityOffset) }
        let tail = rest[authorityEnd...]
        let withoutFragment = tail.firstIndex(of: "#").map { tail[..<$0] } ?? tail
        var path = Substring(withoutFragment)
        var query: String?
        if let mark = withoutFragment.firstIndex(of: "?") {
            path = withoutFragment[..<mark]
            query = String(withoutFragment[withoutFragment.index(after: mark)...])
        }
        return ResourceURL(text: text, scheme: scheme, host: host.lowercased(), port: port,
                           path: path.isEmpty ? "/" : String(path), query: query)
    }

    /// The default cache path: the URL path's last segment, percent-decoded, without the
    /// query. Nil when the path ends in `/` (then the manifest needs an explicit `path`).
    public func lastSegment() throws(ValueError) -> String? {
        guard !path.hasSuffix("/"), let slash = path.lastIndex(of: "/") else { return nil }
        let segment = path[path.index(after: slash)...]
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
