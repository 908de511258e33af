/// The config's `no_proxy` (SPEC §5): hosts reached directly, not through a proxy, in
/// curl's `no_proxy` syntax, checked before anything is touched. Its text goes to libcurl as
/// written (`CURLOPT_NOPROXY`), which then replaces the environment's `no_proxy` — for the
/// config's `proxy` and for one the environment names alike.
///
/// curl's rules (libcurl 7.86 and later, `lib/noproxy.c`): a lone `*` matches every host;
/// otherwise entries are separated by commas (blanks around them allowed). A name matches
/// itself and its subdomains, with or without a leading dot (`example.com` and
/// `.example.com` both match `www.example.com`); an IPv4 or IPv6 address (no brackets)
/// matches that address, or its network with a `/bits` suffix; names and addresses are
/// never compared with each other. What curl would silently never match is refused here:
/// a port, a URL, a `*.` wildcard, brackets, or entries separated by blanks alone (curl
/// stops reading at the first blank that is not followed by a comma).
public struct NoProxyList: Sendable, Equatable {
    /// The list exactly as written.
    public let text: String
    /// The entries, blanks trimmed (`["*"]` for a lone `*`).
    public let entries: [String]

    public static func parse(_ text: String) throws(ValueError) -> NoProxyList {
        let chars = Array(text)
        func blank(_ c: Character) -> Bool { c == " " || c == "\t" }
        guard chars.contains(where: { !blank($0) }) else {
            throw ValueError("no_proxy cannot be empty: leave the key out, or write '*' to reach every host directly")
        }
        if let bad = chars.firstIndex(where: { $0.asciiValue.map { $0 < 0x20 && $0 != 0x09 || $0 == 0x7f } == true }) {
            throw ValueError("no_proxy cannot contain control characters", at: bad)
        }
        if String(chars.filter { !blank($0) }) == "*" {
            return NoProxyList(text: text, entries: ["*"])
        }
        var entries: [String] = []
        var start = 0
        while start <= chars.count {
            let end = chars[start...].firstIndex(of: ",") ?? chars.count
            var first = start, last = end
            while first < last, blank(chars[first]) { first += 1 }
            while last > first, blank(chars[last - 1]) { last -= 1 }
            guard first < last else {
                throw ValueError("an empty entry in no_proxy: a comma too many", at: min(first, max(0, chars.count - 1)))
            }
            try check(Array(chars[first..<last]), at: first)
            entries.append(String(chars[first..<last]))
            start = end + 1
        }
        return NoProxyList(text: text, entries: entries)
    }

    /// One entry, `offset` characters into the value.
    private static func check(_ entry: [Character], at offset: Int) throws(ValueError) {
        if let blank = entry.firstIndex(where: { $0 == " " || $0 == "\t" }) {
            throw ValueError("no_proxy entries are separated by commas (curl stops reading at a blank)", at: offset + blank)
        }
        if let star = entry.firstIndex(of: "*") {
            throw ValueError(entry == ["*"] ? "'*' stands alone: it already means every host"
                             : "no_proxy has no '*' wildcard in a name: '.example.com' or 'example.com' also matches its subdomains",
                             at: offset + star)
        }
        if let scheme = findSchemeSeparator(entry) {
            throw ValueError("no_proxy lists hosts, not URLs: write the host alone", at: offset + scheme)
        }
        if entry.first == "[" {
            throw ValueError("write an IPv6 address in no_proxy without brackets", at: offset)
        }
        let slash = entry.firstIndex(of: "/")
        let address = Array(entry[..<(slash ?? entry.count)])
        let colons = address.filter { $0 == ":" }.count
        if colons == 1 {
            throw ValueError("no_proxy entries have no port: curl compares host names and addresses only",
                             at: offset + address.firstIndex(of: ":")!)
        }
        let maxBits: Int
        if colons > 1 {
            guard isIPv6(address) else { throw ValueError("'\(String(address))' is not an IPv6 address", at: offset) }
            maxBits = 128
        } else if address.contains(where: { $0 != "." }), address.allSatisfy({ $0 == "." || ($0.isASCII && $0.isNumber) }) {
            guard isIPv4(address) else { throw ValueError("'\(String(address))' is not an IPv4 address", at: offset) }
            maxBits = 32
        } else {
            if slash != nil {
                throw ValueError("only an IP address takes a /bits suffix", at: offset + slash!)
            }
            try checkName(entry, at: offset)
            return
        }
        if let slash {
            let digits = entry[(slash + 1)...]
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let bits = Int(String(digits)), (1...maxBits).contains(bits) else {
                throw ValueError("the network's /bits must be a number from 1 to \(maxBits)", at: offset + slash + 1)
            }
        }
    }

    private static func findSchemeSeparator(_ entry: [Character]) -> Int? {
        guard entry.count >= 3 else { return nil }
        return (0...(entry.count - 3)).first { entry[$0] == ":" && entry[$0 + 1] == "/" && entry[$0 + 2] == "/" }
    }

    /// A host name or domain: ASCII letters, digits, '-', '_' and dots, a leading dot and a
    /// trailing one allowed (curl ignores both).
    private static func checkName(_ entry: [Character], at offset: Int) throws(ValueError) {
        if let bad = entry.firstIndex(where: { !($0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0))) }) {
            throw ValueError(entry[bad].isASCII ? "unexpected '\(entry[bad])' in a no_proxy host name"
                             : "write an international host name in no_proxy in its xn-- form", at: offset + bad)
        }
        let inner = entry.first == "." ? entry.dropFirst() : entry[...]  // curl ignores one leading dot
        guard !inner.isEmpty else { throw ValueError("a no_proxy entry needs a host name, not only a dot", at: offset) }
        if let empty = inner.indices.first(where: { entry[$0] == "." && ($0 == inner.startIndex || ($0 + 1 < entry.count && entry[$0 + 1] == ".")) }) {
            throw ValueError("a host name has no empty label ('..')", at: offset + empty)
        }
    }

    /// Four decimal numbers 0–255, without leading zeros.
    static func isIPv4(_ chars: [Character]) -> Bool {
        let parts = chars.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && (part.count == 1 || part.first != "0") && Int(String(part)).map { $0 <= 255 } == true
        }
    }

    /// An IPv6 address as inet_pton reads it: up to eight groups of 1–4 hex digits, one `::`
    /// at most, the last 32 bits optionally written as IPv4.
    static func isIPv6(_ chars: [Character]) -> Bool {
        var halves: [ArraySlice<Character>] = []
        var rest = chars[...]
        while let double = rest.indices.first(where: { rest[$0] == ":" && $0 + 1 < rest.endIndex && rest[$0 + 1] == ":" }) {
            halves.append(rest[..<double])
            rest = rest[(double + 2)...]
        }
        halves.append(rest)
        guard halves.count <= 2 else { return false }
        var groups = 0
        for (index, half) in halves.enumerated() where !half.isEmpty {
            let parts = half.split(separator: ":", omittingEmptySubsequences: false)
            for (position, part) in parts.enumerated() {
                let lastOfAll = index == halves.count - 1 && position == parts.count - 1
                if lastOfAll, part.contains(".") {
                    guard isIPv4(Array(part)) else { return false }
                    groups += 2
                    continue
                }
                guard !part.isEmpty, part.count <= 4, part.allSatisfy({ $0.isASCII && $0.isHexDigit }) else { return false }
                groups += 1
            }
        }
        return halves.count == 2 ? groups <= 7 : groups == 8
    }
}
