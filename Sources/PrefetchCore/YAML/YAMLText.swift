/// The byte-level rules of a YAML file, as libyaml's reader applies them before any
/// syntax (YAML 1.1 §5.1): UTF-8 made of printable characters and line breaks. And its
/// lines and columns, counted as libyaml counts them: a line break is LF, CR LF, CR, NEL,
/// LS or PS, and a column is one character (a Unicode scalar), whatever its bytes.
enum YAMLText {
    /// The bytes of the line break at `index` (LF, CR LF, CR, NEL, LS, PS), or 0.
    static func breakLength(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int {
        switch bytes[index] {
        case 0x0A: return 1
        case 0x0D: return index + 1 < bytes.count && bytes[index + 1] == 0x0A ? 2 : 1
        case 0xC2: return index + 1 < bytes.count && bytes[index + 1] == 0x85 ? 2 : 0
        case 0xE2:
            return index + 2 < bytes.count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9) ? 3 : 0
        default: return 0
        }
    }

    /// True when YAML allows `scalar` in a file: tab, line breaks and printable characters.
    static func isPrintable(_ value: UInt32) -> Bool {
        value == 0x09 || value == 0x0A || value == 0x0D || (0x20...0x7E).contains(value) || value == 0x85
            || (0xA0...0xD7FF).contains(value) || (0xE000...0xFFFD).contains(value) || (0x10000...0x10FFFF).contains(value)
    }

    /// Whether `firstProblem` finds nothing in `bytes`, found eight bytes at a time while
    /// they are printable ASCII (a manifest's usual bytes); anything else is left to it.
    static func isClean(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= bytes.count {
            let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            // A byte under 0x20, or over 0x7E (Hacker's Delight's byte-wise compares).
            let below = (word &- ones &* 0x20) & ~word & highs
            let above = ((word &+ ones &* (127 - 0x7E)) | word) & highs
            if below | above == 0 {
                index += 8
                continue
            }
            for byte in bytes[index..<(index + 8)] where !(byte >= 0x20 && byte < 0x7F) && byte != 0x0A && byte != 0x09 && byte != 0x0D {
                return firstProblem(bytes) == nil
            }
            index += 8
        }
        for byte in bytes[index...] where !(byte >= 0x20 && byte < 0x7F) && byte != 0x0A && byte != 0x09 && byte != 0x0D {
            return firstProblem(bytes) == nil
        }
        return true
    }

    /// The first byte libyaml's reader would refuse — invalid UTF-8, a NUL, any other
    /// character outside YAML's printable set — at its own line and column (libyaml reports
    /// such a problem by byte offset only, which showed as 1:1), or nil for a clean file.
    static func firstProblem(_ bytes: UnsafeBufferPointer<UInt8>) -> YAMLSyntaxError? {
        var line = 1
        var column = 1
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            if byte >= 0x20 && byte < 0x7F || byte == 0x09 {  // the usual case
                column += 1
                index += 1
                continue
            }
            let breaks = breakLength(bytes, at: index)
            if breaks > 0 {
                line += 1
                column = 1
                index += breaks
                continue
            }
            let at = SourceLocation(line: line, column: column)
            guard let (value, width) = decode(bytes, at: index) else {
                return YAMLSyntaxError(location: at, message: invalidUTF8(bytes, at: index))
            }
            if !isPrintable(value) {
                return YAMLSyntaxError(location: at, message: unprintable(value))
            }
            column += 1
            index += width
        }
        return nil
    }

    /// The line and column of the byte at `offset`.
    static func location(ofByte offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> SourceLocation {
        var line = 1
        var column = 1
        var index = 0
        while index < min(offset, bytes.count) {
            let breaks = breakLength(bytes, at: index)
            if breaks > 0 {
                line += 1
                column = 1
                index += breaks
            } else {
                column += 1
                index += decode(bytes, at: index)?.1 ?? 1
            }
        }
        return SourceLocation(line: line, column: column)
    }

    /// The scalar whose UTF-8 sequence starts at `index` and its length in bytes; nil for a
    /// malformed sequence (a stray or missing continuation byte, an overlong form, a
    /// surrogate, a value past U+10FFFF: what libyaml refuses).
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> (UInt32, Int)? {
        let lead = bytes[index]
        let width: Int
        var value: UInt32
        switch lead {
        case 0x00..<0x80: return (UInt32(lead), 1)
        case 0xC0..<0xE0: width = 2; value = UInt32(lead & 0x1F)
        case 0xE0..<0xF0: width = 3; value = UInt32(lead & 0x0F)
        case 0xF0..<0xF8: width = 4; value = UInt32(lead & 0x07)
        default: return nil
        }
        guard index + width <= bytes.count else { return nil }
        for offset in 1..<width {
            let next = bytes[index + offset]
            guard next & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(next & 0x3F)
        }
        let smallest: UInt32 = width == 2 ? 0x80 : width == 3 ? 0x800 : 0x10000
        guard value >= smallest, value <= 0x10FFFF, !(0xD800...0xDFFF).contains(value) else { return nil }
        return (value, width)
    }

    private static func invalidUTF8(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> String {
        if index == 0, bytes.count >= 2, (bytes[0] == 0xFF && bytes[1] == 0xFE) || (bytes[0] == 0xFE && bytes[1] == 0xFF) {
            return "the file is UTF-16 (it starts with a UTF-16 byte order mark); save it as UTF-8"
        }
        let hex = String(bytes[index], radix: 16, uppercase: true)
        return "invalid UTF-8 (byte 0x\(hex.count == 1 ? "0" : "")\(hex)); save the file as UTF-8"
    }

    private static func unprintable(_ value: UInt32) -> String {
        if value == 0 { return "a NUL byte is not allowed in a YAML file" }
        var hex = String(value, radix: 16, uppercase: true)
        while hex.count < 4 { hex = "0" + hex }
        let control = value < 0x20 || (0x7F...0x9F).contains(value)
        return "\(control ? "control character" : "character") U+\(hex) is not allowed in a YAML file"
            + (control ? " (only tab and line breaks are)" : "")
    }
}
