import Foundation

// TestOrigin's answers to Range requests once the ranges are read: a plain 206 for one range,
// `multipart/byteranges` (RFC 9110 §14.6) for two or more, framed as nginx frames it, and the
// hostile variants the multi-range `OriginFault`s ask for (SPEC §9 deltas). Pure functions: the
// satisfiable ranges, the representation and the request's fault in; a shape, bytes and header
// values out. nginx coalesces nothing, and neither does this unless `.partsCoalesced` says so.

/// The answer to a request whose `Range` had satisfiable ranges.
enum MultipartAnswer {
    /// The boundary of every multipart answer (nginx numbers its own; one fixed string will do).
    static let boundary = "00000000000000000001"
    /// The `Content-Type` of a multipart answer.
    static let contentType = "multipart/byteranges; boundary=" + boundary
    /// `.partsCoalesced`: ranges at most this many bytes apart are sent as one part.
    static let coalescingGap = 80
    /// `.partsOverlapping`: how many bytes before its range each part after the first starts.
    static let overlap = 10
    /// `.partNotAskedFor`: how long the extra part is.
    static let unaskedLength = 10
    /// `.partCutShort`: how many bytes of the last part are not sent.
    static let shortfall = 5

    /// What a request with satisfiable ranges gets.
    enum Shape: Equatable, Sendable {
        /// 200 with the whole representation.
        case whole
        /// A plain 206 for this range, with a `Content-Range` header.
        case single(ClosedRange<Int>)
        /// A `multipart/byteranges` 206 with a part for each of these ranges, in this order.
        case multipart([ClosedRange<Int>])
    }

    /// What an answer of some shape sends: its body, its `Content-Type`, and its `Content-Range`
    /// header (nil: none, as for a 200 or a multipart 206).
    struct Content {
        var body: ArraySlice<UInt8>
        var contentType: String
        var contentRange: String?
    }

    // MARK: Shape

    /// The shape of the answer to `ranges` (satisfiable, clamped, in the order asked) of a
    /// representation of `length` bytes under `fault`: one range gets a plain 206, two or more a
    /// multipart 206, unless `.wholeForMulti` (200) or `.onlyFirstRange` (a plain 206 for the
    /// first) says otherwise.
    static func shape(for ranges: [ClosedRange<Int>], length: Int, fault: OriginFault?) -> Shape {
        guard let first = ranges.first else { return .whole }
        guard ranges.count > 1 else { return .single(first) }
        switch fault {
        case .wholeForMulti: return .whole
        case .onlyFirstRange: return .single(first)
        default: return .multipart(parts(for: ranges, length: length, fault: fault))
        }
    }

    /// The ranges of the parts sent for two or more asked `ranges`, in the order sent: as asked,
    /// or as `.partsReversed`, `.partsCoalesced`, `.partsOverlapping` or `.partNotAskedFor` has it.
    static func parts(for ranges: [ClosedRange<Int>], length: Int, fault: OriginFault?) -> [ClosedRange<Int>] {
        switch fault {
        case .partsReversed: return ranges.reversed()
        case .partsCoalesced: return coalesced(ranges, gap: coalescingGap)
        case .partsOverlapping: return overlapping(ranges, by: overlap)
        case .partsSplitOverlapping: return ranges.flatMap(splitOverlapping)
        case .partNotAskedFor: return [unasked(besides: ranges, length: length)] + ranges
        default: return ranges
        }
    }

    /// Each range merged into the part before it when it starts at or after that part's start and
    /// at most `gap` bytes after its end (adjacent and overlapping ranges included); a merged part
    /// runs from the first range's start to the furthest end. The order of the parts is kept.
    static func coalesced(_ ranges: [ClosedRange<Int>], gap: Int) -> [ClosedRange<Int>] {
        var merged: [ClosedRange<Int>] = []
        for range in ranges {
            if let last = merged.last, range.lowerBound >= last.lowerBound,
               range.lowerBound - last.upperBound - 1 <= gap {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// A range of 4 bytes or more as two parts overlapping by 4 bytes inside it; a shorter one as it is.
    static func splitOverlapping(_ range: ClosedRange<Int>) -> [ClosedRange<Int>] {
        guard range.count >= 4 else { return [range] }
        let middle = range.lowerBound + range.count / 2
        return [range.lowerBound...(middle + 1), (middle - 2)...range.upperBound]
    }

    /// Every range but the first started `bytes` earlier (not before 0).
    static func overlapping(_ ranges: [ClosedRange<Int>], by bytes: Int) -> [ClosedRange<Int>] {
        ranges.enumerated().map { index, range in
            index == 0 ? range : (max(0, range.lowerBound - bytes)...range.upperBound)
        }
    }

    /// The extra part of `.partNotAskedFor`: the first `unaskedLength` bytes, or the last ones when
    /// an asked range touches the first (clamped to the representation, which has at least 1 byte).
    static func unasked(besides ranges: [ClosedRange<Int>], length: Int) -> ClosedRange<Int> {
        let head = 0...max(0, min(unaskedLength, length) - 1)
        guard ranges.contains(where: { $0.overlaps(head) }) else { return head }
        return max(0, length - unaskedLength)...max(0, length - 1)
    }

    // MARK: Bytes and headers

    /// The body, `Content-Type` and `Content-Range` of an answer of `shape` for `representation`
    /// (served as `contentType`) under `fault`.
    static func content(_ shape: Shape, of representation: [UInt8], contentType: String,
                        fault: OriginFault?) -> Content {
        switch shape {
        case .whole:
            return Content(body: representation[...], contentType: contentType, contentRange: nil)
        case .single(let range):
            return Content(body: data(range, of: representation, last: true, fault: fault), contentType: contentType,
                           contentRange: contentRange(range, length: representation.count, fault: fault))
        case .multipart(let parts):
            let body = multipartBody(parts, of: representation, contentType: contentType, fault: fault)
            return Content(body: body[...], contentType: Self.contentType, contentRange: nil)
        }
    }

    /// A multipart body as nginx frames it: for each part `CRLF--BOUNDARY CRLF`, its `Content-Type`
    /// and `Content-Range` lines, a blank line and its bytes; then `CRLF--BOUNDARY-- CRLF`.
    static func multipartBody(_ parts: [ClosedRange<Int>], of representation: [UInt8], contentType: String,
                              fault: OriginFault?) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, range) in parts.enumerated() {
            let head = "\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\n"
                + "Content-Range: \(contentRange(range, length: representation.count, fault: fault))\r\n\r\n"
            bytes += Array(head.utf8)
            bytes += data(range, of: representation, last: index == parts.count - 1, fault: fault)
        }
        bytes += Array("\r\n--\(boundary)--\r\n".utf8)
        return bytes
    }

    /// The bytes sent for one part (`last`: the last one sent): the range's, less `shortfall`
    /// bytes at the end of the last part under `.partCutShort`.
    static func data(_ range: ClosedRange<Int>, of representation: [UInt8], last: Bool,
                     fault: OriginFault?) -> ArraySlice<UInt8> {
        let bytes = representation[range]
        if last, case .partCutShort = fault { return bytes.dropLast(shortfall) }
        return bytes
    }

    /// A `Content-Range` value, `bytes FIRST-LAST/COMPLETE`: the complete length is `length`, or
    /// the one `.rangeCompleteLength` gives.
    static func contentRange(_ range: ClosedRange<Int>, length: Int, fault: OriginFault?) -> String {
        var complete = length
        if case .rangeCompleteLength(let claimed) = fault { complete = claimed }
        return "bytes \(range.lowerBound)-\(range.upperBound)/\(complete)"
    }

    /// The validator headers of a 206 (single or multipart): as given, except that `.rangeETag`
    /// puts its value in place of the ETag (or adds it, first, when there was none).
    static func partialValidators(_ validators: [(String, String)], fault: OriginFault?) -> [(String, String)] {
        guard case .rangeETag(let value) = fault else { return validators }
        return [("ETag", value)] + validators.filter { $0.0 != "ETag" }
    }
}
