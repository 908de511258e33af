/// The config's `proxy` (SPEC §5): the proxy every request goes through, as curl's
/// `http_proxy`/`https_proxy` would name it, checked before anything is touched. Its text
/// goes to libcurl as written (`CURLOPT_PROXY`).
public struct ProxyURL: Sendable, Equatable {
    /// The URL exactly as written.
    public let text: String
    /// `http`, `https`, `socks4`, `socks4a`, `socks5` or `socks5h`, lowercased.
    public let scheme: String
    /// The host, lowercased (brackets kept for an IPv6 literal).
    public let host: String
    public let port: Int

    /// The schemes libcurl takes for a proxy (CURLOPT_PROXY: "http://", "https://",
    /// "socks4://", "socks4a://", "socks5://", "socks5h://").
    public static let schemes = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    /// Parses `scheme://[user:password@]host:port[/]`. The port is required: without one
    /// libcurl connects to 1080 (443 for https), which is rarely the proxy meant (Squid
    /// listens on 3128). Credentials are allowed, as curl allows them; nothing prints them.
    public static func parse(_ text: String) throws(ValueError) -> ProxyURL {
        let chars = Array(text)
        if let bad = chars.firstIndex(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7f } == true }) {
            throw ValueError(chars[bad] == " " ? "a proxy URL cannot contain spaces" : "a proxy URL cannot contain control characters", at: bad)
        }
        guard let colon = chars.firstIndex(of: ":"), chars[colon...].starts(with: [":", "/", "/"]) else {
            throw ValueError("a proxy is a URL with its scheme and port, such as http://proxy.example:3128")
        }
        let scheme = String(chars[..<colon]).lowercased()
        guard schemes.contains(scheme) else {
            throw ValueError("a proxy's scheme is http, https, socks4, socks4a, socks5 or socks5h, not '\(scheme)'")
        }
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < chars.count, !"/?#".contains(chars[authorityEnd]) { authorityEnd += 1 }
        if authorityEnd < chars.count, chars[authorityEnd...] != ["/"] {
            throw ValueError("a proxy URL has no path, query or fragment", at: authorityEnd)
        }
        // Credentials end at the last '@' of the authority (a password may hold '@' only
        // percent-encoded, but curl splits at the last one too).
        let hostStart = (chars[authorityStart..<authorityEnd].lastIndex(of: "@")).map { $0 + 1 } ?? authorityStart
        var hostEnd = hostStart
        if hostStart < authorityEnd, chars[hostStart] == "[" {
            guard let close = chars[hostStart..<authorityEnd].firstIndex(of: "]") else {
                throw ValueError("unclosed '[' in the proxy's host", at: hostStart)
            }
            hostEnd = close + 1
            if hostEnd < authorityEnd, chars[hostEnd] != ":" {
                throw ValueError("unexpected text after the IPv6 address", at: hostEnd)
            }
        } else {
            hostEnd = chars[hostStart..<authorityEnd].firstIndex(of: ":") ?? authorityEnd
        }
        guard hostEnd > hostStart, String(chars[hostStart..<hostEnd]) != "[]" else {
            throw ValueError("the proxy URL has no host", at: hostStart)
        }
        guard hostEnd < authorityEnd else {
            throw ValueError("the proxy URL needs a port (Squid listens on 3128; without one curl would use \(scheme == "https" ? 443 : 1080))",
                             at: hostEnd)
        }
        let digits = chars[(hostEnd + 1)..<authorityEnd]
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(String(digits)), (1...65535).contains(port) else {
            throw ValueError("the proxy's port must be a number from 1 to 65535", at: hostEnd + 1)
        }
        return ProxyURL(text: text, scheme: scheme, host: String(chars[hostStart..<hostEnd]).lowercased(), port: port)
    }
}
