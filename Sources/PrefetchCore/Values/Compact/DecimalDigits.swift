/// The one decimal writer: an integer's digits as `String(n)` writes them, made on the stack
/// (no string, no array), to append to an output buffer.
///
///     output.append(contentsOf: DecimalDigits(seconds))
struct DecimalDigits: RandomAccessCollection, Sendable {
    /// The digits, right-aligned: a sign and up to 20 digits (`UInt64.max`) fit.
    private var bytes = InlineArray<21, UInt8>(repeating: 0)
    let startIndex: Int
    var endIndex: Int { 21 }

    init(_ value: Int64) {
        self.init(magnitude: value.magnitude, negative: value < 0)
    }

    init(_ value: Int) { self.init(Int64(value)) }

    init(_ value: UInt64) { self.init(magnitude: value, negative: false) }

    private init(magnitude: UInt64, negative: Bool) {
        var magnitude = magnitude
        var start = 21
        repeat {
            start -= 1
            bytes[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        if negative {
            start -= 1
            bytes[start] = UInt8(ascii: "-")
        }
        startIndex = start
    }

    subscript(position: Int) -> UInt8 { bytes[position] }
}
