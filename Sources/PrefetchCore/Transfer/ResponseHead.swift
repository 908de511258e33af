/// A response's head from the lines libcurl hands over, one at a time: a status line starts
/// a new head (redirects, 100-continue), the headers prefetch reads are kept, the others are
/// skipped without building strings. Total: any bytes make a head (or a verdict on it),
/// never a trap.
extension ResponseRules.Head {
    /// The header names read, lowercase, in `set`'s order.
    private static let wanted: [[UInt8]] =
        ["content-length", "content-range", "etag", "last-modified", "location", "retry-after", "content-encoding",
         "date", "accept-ranges", "content-type"].map { Array($0.utf8) }

    /// Takes one line of the head (with or without its CR LF); returns whether it is the
    /// blank line that ends a head.
    @discardableResult
    mutating func take(line bytes: UnsafeRawBufferPointer) -> Bool {
        let counted = size + bytes.count  // every head of the exchange counts (interim 1xx ones too)
        defer { size = counted }
        // Trim CR/LF as bytes: in a Swift String "\r\n" is one Character, so hasSuffix("\n") misses it.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        if end == 0 { return true }
        if end >= 5, bytes[0] == 0x48, bytes[1] == 0x54, bytes[2] == 0x54, bytes[3] == 0x50, bytes[4] == 0x2F {  // "HTTP/"
            var index = 5
            while index < end, bytes[index] != 0x20 { index += 1 }
            while index < end, bytes[index] == 0x20 { index += 1 }
            var code = 0, digits = 0
            while index < end, digits < 3, (0x30...0x39).contains(bytes[index]) {
                code = code * 10 + Int(bytes[index] - 0x30)
                index += 1
                digits += 1
            }
            self = Self(status: digits == 3 ? code : 0)
            return false
        }
        var colon = 0
        while colon < end, bytes[colon] != 0x3A { colon += 1 }
        guard colon < end else { return false }
        for (index, name) in Self.wanted.enumerated() where name.count == colon {
            var same = true
            for i in 0..<colon where name[i] != Self.lowercased(bytes[i]) { same = false; break }
            guard same else { continue }
            var start = colon + 1, stop = end
            while start < stop, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
            while stop > start, bytes[stop - 1] == 0x20 || bytes[stop - 1] == 0x09 { stop -= 1 }
            let value = UnsafeRawBufferPointer(rebasing: bytes[start..<stop])
            switch index {
            case 0: takeLength(value)
            case 4: takeLocation(value)
            default: set(index, String(decoding: value, as: UTF8.self))
            }
            return false
        }
        return false
    }

    /// An ASCII letter in lowercase, any other byte as it is (`| 0x20` alone would also
    /// turn a CR into '-': `Content\rLength` read as `Content-Length`).
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    private mutating func set(_ index: Int, _ value: String) {
        switch index {
        case 1: contentRange = value
        case 2: etag = value
        case 3: lastModified = value
        case 5: retryAfter = value
        case 6: contentEncoding = value
        // What §7's resumable rule reads of a response (`ResumeRule`, `facts`).
        case 7: date = value
        case 8: acceptRanges = value
        default: contentType = value
        }
    }

    /// RFC 9112 §6.3, RFC 9110 §8.6: every Content-Length field must say the same one
    /// decimal number; anything else makes the response invalid (its first reason is kept).
    private mutating func takeLength(_ value: UnsafeRawBufferPointer) {
        guard invalid == nil else { return }
        switch ResponseRules.lengthField(value) {
        case .length(let length):
            if let earlier = contentLength, earlier != length {
                invalid = "two different Content-Length values (\(earlier) and \(length))"
            } else {
                contentLength = length
            }
        case .conflicting(let first, let second):
            invalid = "two different Content-Length values (\(first) and \(second))"
        case .malformed:
            invalid = "Content-Length \(ResponseRules.quoted(value)) is not a decimal number of at most 63 bits"
        }
        if invalid != nil { contentLength = nil }
    }

    /// A Location over the redirect limit is not kept as a string (its length is: the
    /// redirect is refused when the head ends).
    private mutating func takeLocation(_ value: UnsafeRawBufferPointer) {
        locationLength = value.count
        location = value.count <= ResponseRules.maxLocationBytes ? String(decoding: value, as: UTF8.self) : nil
    }
}

extension ResponseRules.Head {
    /// What §7's resumable rule reads of this response (recorded with the partial it begins).
    var facts: ResponseFacts {
        ResponseFacts(etag: etag, lastModified: lastModified, date: date, acceptRangesNone: ResumeRule.saysNone(acceptRanges),
                      contentEncoding: ResumeRule.normalized(contentEncoding))
    }
}
