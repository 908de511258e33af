import Foundation

/// A `multipart/byteranges` body (RFC 9110 §14.6, RFC 2046 §5.1), read as its bytes arrive,
/// for a delta's ranged requests (SPEC §9 step 3): strictly — a boundary line, part headers
/// of at most 8 KiB with exactly one `Content-Range: bytes FIRST-LAST/COMPLETE`, then exactly
/// that many bytes, then the next boundary line, and the closing one — but as RFC 9110 lets a
/// server answer: parts in any order, coalesced or overlapping. Whether a part lies inside
/// the ranges asked for, and whether its complete length is the file's, is the caller's to
/// judge (`Event.part`). Pure: bytes in, events out.
struct ByteRangesReader {
    /// What the body said, in order.
    enum Event: Equatable {
        /// A part begins: its first and last byte in the file, and the complete length it gave.
        case part(first: UInt64, last: UInt64, complete: UInt64)
        /// Bytes of the current part, at their offset in the file.
        case data(offset: UInt64, bytes: [UInt8])
        /// The closing boundary: the body is whole (what follows it is ignored).
        case end
    }

    struct Malformed: Error, Equatable, CustomStringConvertible {
        let detail: String
        var description: String { detail }
    }

    static let headerLimit = 8 * 1024

    private enum Phase { case preamble, headers, data(next: UInt64, left: UInt64), afterData, closed }
    private let delimiter: [UInt8]  // "--" + boundary
    private var phase = Phase.preamble
    private var line: [UInt8] = []
    private var headerBytes = 0
    private var range: (first: UInt64, last: UInt64, complete: UInt64)?

    /// The boundary from a `Content-Type` value, e.g. `multipart/byteranges; boundary=3d6b6a416f9b5`
    /// (a token, or a quoted string of 1 to 70 characters); nil when it is no byteranges type.
    static func boundary(contentType: String) -> String? {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: [" ", "\t"]) }
        guard let type = parts.first, type.lowercased() == "multipart/byteranges" else { return nil }
        for parameter in parts.dropFirst() {
            guard let equals = parameter.firstIndex(of: "="), parameter[..<equals].lowercased() == "boundary" else { continue }
            var value = String(parameter[parameter.index(after: equals)...])
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            guard (1...70).contains(value.utf8.count), value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f || $0 == 0x20 }),
                  value.last != " " else { return nil }
            return value
        }
        return nil
    }

    init(boundary: String) {
        delimiter = Array(("--" + boundary).utf8)
    }

    /// Reads the next bytes of the body.
    mutating func read(_ bytes: some Collection<UInt8>) throws(Malformed) -> [Event] {
        var events: [Event] = []
        var index = bytes.startIndex
        while index != bytes.endIndex {
            switch phase {
            case .closed:
                return events  // the epilogue is ignored
            case .data(let next, let left):
                let available = bytes.distance(from: index, to: bytes.endIndex)
                let count = Int(min(UInt64(available), left))
                let end = bytes.index(index, offsetBy: count)
                events.append(.data(offset: next, bytes: Array(bytes[index..<end])))
                index = end
                phase = left == UInt64(count) ? .afterData : .data(next: next + UInt64(count), left: left - UInt64(count))
            case .preamble, .headers, .afterData:
                let byte = bytes[index]
                index = bytes.index(after: index)
                if case .headers = phase {
                    headerBytes += 1
                    guard headerBytes <= Self.headerLimit else { throw Malformed(detail: "part headers over 8 KiB") }
                }
                guard line.count < Self.headerLimit else { throw Malformed(detail: "a line over 8 KiB") }
                guard byte == UInt8(ascii: "\n") else {
                    line.append(byte)
                    continue
                }
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                defer { line.removeAll(keepingCapacity: true) }
                if let event = try endOfLine() { events.append(event) }
            }
        }
        return events
    }

    /// The body ended: it must have closed.
    func finish() throws(Malformed) {
        guard case .closed = phase else { throw Malformed(detail: "the body ended before its closing boundary") }
    }

    private mutating func endOfLine() throws(Malformed) -> Event? {
        switch phase {
        case .preamble:
            if isBoundary(line) == .next { startPart() }
            else if isBoundary(line) == .close { throw Malformed(detail: "no part before the closing boundary") }
            return nil  // a preamble line
        case .afterData:
            // The CRLF that ends the data belongs to the boundary line: it is empty here.
            if line.isEmpty { return nil }
            switch isBoundary(line) {
            case .next: startPart(); return nil
            case .close: phase = .closed; return .end
            case nil: throw Malformed(detail: "a part is longer than its Content-Range")
            }
        case .headers:
            if !line.isEmpty {
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw Malformed(detail: "a part header is not 'Name: value'") }
                let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
                let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: [" ", "\t"])
                if name == "content-range" {
                    guard range == nil else { throw Malformed(detail: "a part with two Content-Range headers") }
                    guard let parsed = Self.contentRange(value) else { throw Malformed(detail: "a part's Content-Range is not 'bytes FIRST-LAST/LENGTH': '\(value)'") }
                    range = parsed
                }
                return nil
            }
            guard let range else { throw Malformed(detail: "a part without Content-Range") }
            phase = .data(next: range.first, left: range.last - range.first + 1)
            return .part(first: range.first, last: range.last, complete: range.complete)
        case .data, .closed:
            return nil
        }
    }

    private mutating func startPart() {
        phase = .headers
        headerBytes = 0
        range = nil
    }

    private enum Boundary { case next, close }

    /// Whether `line` is the delimiter (`--BOUNDARY`, then optional white space) or the close (`--BOUNDARY--`).
    private func isBoundary(_ line: [UInt8]) -> Boundary? {
        guard line.starts(with: delimiter) else { return nil }
        var rest = line[delimiter.count...]
        var close = false
        if rest.starts(with: [UInt8(ascii: "-"), UInt8(ascii: "-")]) {
            close = true
            rest = rest.dropFirst(2)
        }
        guard rest.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) else { return nil }
        return close ? .close : .next
    }

    /// `bytes FIRST-LAST/COMPLETE`, FIRST ≤ LAST < COMPLETE (a `*` length is no use to a delta).
    static func contentRange(_ value: String) -> (first: UInt64, last: UInt64, complete: UInt64)? {
        let text = Array(value.utf8)
        guard text.starts(with: Array("bytes ".utf8)) else { return nil }
        let rest = text[6...]
        guard let dash = rest.firstIndex(of: UInt8(ascii: "-")), let slash = rest.firstIndex(of: UInt8(ascii: "/")), dash < slash,
              let first = digits(rest[..<dash]), let last = digits(rest[(dash + 1)..<slash]), let complete = digits(rest[(slash + 1)...]),
              first <= last, last < complete else { return nil }
        return (first, last, complete)
    }

    private static func digits(_ text: ArraySlice<UInt8>) -> UInt64? {
        guard !text.isEmpty, text.count <= 19, text.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return UInt64(String(decoding: text, as: UTF8.self))
    }
}
