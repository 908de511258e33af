/// A number of bytes written as `512`, `64KiB`, `20MiB`, `2GiB` or `1GB` (SI).
public struct ByteSize: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The size in bytes.
    public var bytes: UInt64

    /// Creates a size of `bytes`.
    public init(bytes: UInt64) {
        self.bytes = bytes
    }

    public static func < (a: ByteSize, b: ByteSize) -> Bool { a.bytes < b.bytes }

    private static let units: [String: UInt64] = [
        "B": 1,
        "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50,
        "kB": 1_000, "KB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000,
        "TB": 1_000_000_000_000, "PB": 1_000_000_000_000_000,
    ]

    /// Parses `<digits>[unit]`: no unit (or `B`) means bytes; binary units `KiB MiB GiB TiB`
    /// and SI units `kB/KB MB GB TB`.
    public static func parse(_ text: String) throws(ValueError) -> ByteSize {
        // The usual `size:` of a manifest, a plain count of bytes, read from its bytes (each
        // Character below asks Unicode for its numeric value). 19 digits cannot overflow.
        let utf8 = text.utf8
        if !utf8.isEmpty, utf8.count <= 19, utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return ByteSize(bytes: utf8.reduce(0) { $0 * 10 + UInt64($1 - 0x30) })
        }
        var number: UInt64 = 0
        var index = text.startIndex
        var digits = 0
        while index < text.endIndex, let digit = text[index].wholeNumberValue, text[index].isASCII {
            let (product, overflow1) = number.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = product.addingReportingOverflow(UInt64(digit))
            if overflow1 || overflow2 { throw ValueError("size is too large") }
            number = sum
            index = text.index(after: index)
            digits += 1
        }
        guard digits > 0 else {
            throw ValueError("expected a size such as 512, 64KiB, 20MiB, 2GiB or 1GB")
        }
        let unit = String(text[index...])
        if unit.isEmpty { return ByteSize(bytes: number) }
        if unit.first == "." {
            throw ValueError("sizes are whole numbers; use a smaller unit (1536MiB, not 1.5GiB)", at: digits)
        }
        guard let scale = units[unit] else {
            if unit.first == " " {
                throw ValueError("a size has no spaces; write it as \(text.filter { $0 != " " })", at: digits)
            }
            let hint = units.keys.sorted().first { $0.lowercased() == unit.lowercased() }
                ?? (["k", "m", "g", "t", "p"].contains(unit.lowercased()) ? unit.uppercased() + "iB" : nil)
            let suffix = hint.map { " (did you mean '\($0)'?)" } ?? ""
            throw ValueError("unknown size unit '\(unit)'; use B, KiB, MiB, GiB, TiB, PiB or kB, MB, GB, TB, PB\(suffix)", at: digits)
        }
        let (total, overflow) = number.multipliedReportingOverflow(by: scale)
        if overflow { throw ValueError("size is too large") }
        return ByteSize(bytes: total)
    }

    /// A short human form: `512B`, `1.5KiB`, `20MiB`, `1.2GiB`.
    public var description: String { Self.format(bytes) }

    /// Formats a byte count with binary units and at most `decimals` decimals (trailing
    /// zeros dropped).
    public static func format(_ bytes: UInt64, decimals: Int = 1) -> String {
        let steps: [(String, Double)] = [("TiB", 1_099_511_627_776), ("GiB", 1_073_741_824), ("MiB", 1_048_576), ("KiB", 1024)]
        let scale = Double((0..<decimals).reduce(1) { value, _ in value * 10 })
        for (index, (unit, size)) in steps.enumerated() where Double(bytes) >= size {
            let value = Double(bytes) / size
            let rounded = (value * scale).rounded() / scale
            if rounded >= 1024, index > 0 { return "1\(steps[index - 1].0)" }
            if rounded == rounded.rounded() { return "\(Int(rounded))\(unit)" }
            // `rounded` has `decimals` decimals already: its digits are those of the whole
            // number `rounded × scale` (as `%.Nf` prints them, without `String(format:)`,
            // which goes through NSString on Linux: costly for a line a resource).
            let units = Int((rounded * scale).rounded()), one = Int(scale)
            var fraction = String(units % one)
            fraction = String(repeating: "0", count: decimals - fraction.count) + fraction
            while fraction.hasSuffix("0") { fraction.removeLast() }
            return "\(units / one).\(fraction)" + unit
        }
        return "\(bytes)B"
    }

    /// Two different byte counts formatted so that they read differently: more decimals
    /// while they look the same, then exact bytes (`1GiB < 1GiB` says nothing).
    public static func formatApart(_ a: UInt64, _ b: UInt64) -> (String, String) {
        guard a != b else { return (format(a), format(b)) }
        for decimals in 1...3 {
            let pair = (format(a, decimals: decimals), format(b, decimals: decimals))
            if pair.0 != pair.1 { return pair }
        }
        return ("\(a)B", "\(b)B")
    }
}

/// A transfer rate written as `SIZE/s` (`20MiB/s`), or a budget as `SIZE/day`.
public struct ByteRate: Sendable, Hashable {
    /// Bytes per period.
    public var bytes: UInt64

    /// Creates a rate of `bytes` per period.
    public init(bytes: UInt64) {
        self.bytes = bytes
    }

    /// Parses `SIZE/<period>` where `period` is the one unit accepted (`s` or `day`).
    public static func parse(_ text: String, per period: String) throws(ValueError) -> ByteRate {
        guard let slash = text.lastIndex(of: "/") else {
            throw ValueError("expected SIZE/\(period), as in 20MiB/\(period)", at: text.count)
        }
        let unit = text[text.index(after: slash)...]
        let offset = text.distance(from: text.startIndex, to: slash) + 1
        guard unit == period else {
            throw ValueError("expected '/\(period)' after the size, found '/\(unit)'", at: offset)
        }
        let size = try ByteSize.parse(String(text[..<slash]))
        guard size.bytes > 0 else { throw ValueError("a rate must be more than 0") }
        return ByteRate(bytes: size.bytes)
    }
}
