import Foundation
import FuzzCheck
@testable import PrefetchCore

/// The response-header rules (Transfer/ResponseHead.swift, Transfer/ResponseRules.swift).
/// The input is a request (the first 16 bytes: partial, validators, size and cap) and then
/// a head, one line per LF, fed to `take(line:)` as libcurl hands lines over. Checked:
/// the head read against a reference written out here (a header kept only under its exact
/// name, case aside; the last of each name wins; a status line starts afresh); a
/// Content-Range accepted is digits with start ≤ end < total; a Content-Length is digits;
/// Retry-After is never negative and an IMF-fixdate means the seconds to it; ETags compare
/// weakly and symmetrically; and what `onHead`/`onEnd` decide keeps the partial's bytes
/// and the manifest's size and cap (nothing appended that does not continue the partial,
/// nothing placed of another length), under each `encoding` (SPEC §7: `refuse` takes no
/// labelled body, `keep` appends only a range carrying the partial's coding, `decode`
/// appends no encoded range, and checks a decoded body's Content-Length against its bytes
/// on the wire).
func fuzzResponse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard input.count >= 16 else { return 0 }
    var reader = Bytes(input)
    let request = reader.request()
    let onDisk = reader.onDisk(request)
    let cleanly = reader.byte() & 1 == 0
    var head = ResponseRules.Head(status: 0)
    var expected = ReferenceHead()
    for line in reader.rest.split(separator: 0x0A, omittingEmptySubsequences: false) {
        let withBreak = Array(line) + [0x0A]
        _ = withBreak.withUnsafeBytes { head.take(line: $0) }
        expected.take(Array(line))
        require(expected.matches(head), "head read as \(head), expected \(expected) after the line \(String(decoding: line, as: UTF8.self).debugDescription)")
    }
    check(head: head)
    let onWire: UInt64 = switch reader.wire % 3 {
    case 0: head.contentLength ?? onDisk
    case 1: onDisk
    default: onDisk &+ 1
    }
    checkRules(request, head, onDisk: onDisk, onWire: onWire, cleanly: cleanly)
    return 0
}

// MARK: The head

/// A header line read the plain way: `name: value`, the name compared without case
/// (RFC 9110 §5.1), optional blanks around the value stripped (§5.5).
struct ReferenceHead: CustomStringConvertible {
    var status = 0
    var fields: [String: String] = [:]

    mutating func take(_ line: [UInt8]) {
        var line = line
        while let last = line.last, last == 0x0D || last == 0x0A { line.removeLast() }
        if line.starts(with: Array("HTTP/".utf8)) {
            self = ReferenceHead()
            let parts = line.split(separator: 0x20, maxSplits: 1)
            if parts.count == 2 {
                let digits = parts[1].drop { $0 == 0x20 }.prefix { (0x30...0x39).contains($0) }.prefix(3)
                if digits.count == 3 { status = Int(String(decoding: digits, as: UTF8.self))! }
            }
            return
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return }
        let name = String(decoding: line[..<colon].map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
        guard ["content-length", "content-range", "etag", "last-modified", "location", "retry-after", "content-encoding"].contains(name) else { return }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        let text = String(decoding: value, as: UTF8.self)
        if name == "content-length" { lengths.append(text) }
        fields[name] = text
    }

    /// Every Content-Length field of the head, as sent.
    var lengths: [String] = []

    /// RFC 9112 §6.3 with RFC 9110 §8.6, written out the plain way: every field is a
    /// comma list of `1*DIGIT` numbers of at most 2^63 − 1, and all of them are one number.
    /// `nil` length and `valid` false otherwise; no field at all is no length, valid.
    var expectedLength: (length: UInt64?, valid: Bool) {
        var numbers: Set<UInt64> = []
        for field in lengths {
            for element in field.split(separator: ",", omittingEmptySubsequences: false) {
                let trimmed = element.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                guard isDigits(trimmed), let number = UInt64(trimmed), number <= UInt64(Int64.max) else { return (nil, false) }
                numbers.insert(number)
            }
        }
        guard numbers.count <= 1 else { return (nil, false) }
        return (numbers.first, true)
    }

    func matches(_ head: ResponseRules.Head) -> Bool {
        // RFC 9110 §8.6: Content-Length = 1*DIGIT ("+5" is no length); the fields must agree.
        let (length, valid) = expectedLength
        // A Location over the redirect limit is not kept as a string (its length is).
        let location = fields["location"].flatMap { $0.utf8.count <= ResponseRules.maxLocationBytes ? $0 : nil }
        return head.status == status && head.contentLength == length && (head.invalid == nil) == valid
            && head.contentRange == fields["content-range"]
            && head.etag == fields["etag"] && head.lastModified == fields["last-modified"] && head.location == location
            && head.retryAfter == fields["retry-after"] && head.contentEncoding == fields["content-encoding"]
    }

    var description: String { "status \(status), \(fields)" }
}

func isDigits<S: StringProtocol>(_ text: S) -> Bool {
    !text.isEmpty && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
}

func check(head: ResponseRules.Head) {
    if let value = head.contentRange, let range = ResponseRules.contentRange(value) {
        require(range.start <= range.end, "Content-Range \(value.debugDescription) accepted with start \(range.start) > end \(range.end)")
        if let total = range.total { require(range.end < total, "Content-Range \(value.debugDescription) accepted past its total") }
        // RFC 9110 §14.4: bytes first-pos "-" last-pos "/" ( complete-length / "*" ), each
        // 1*DIGIT; the range unit is case-insensitive (§14.1), blanks after it are skipped.
        let spec = value.utf8.dropFirst(6).drop { $0 == 0x20 }
        let parts = Substring(spec).split(separator: "/", omittingEmptySubsequences: false)
        let positions = parts.first?.split(separator: "-", omittingEmptySubsequences: false) ?? []
        require(value.lowercased().hasPrefix("bytes ") && parts.count == 2 && positions.count == 2 && isDigits(positions[0]) && isDigits(positions[1])
                && (parts[1] == "*" || isDigits(parts[1])),
                "Content-Range \(value.debugDescription) accepted as \(range.start)-\(range.end)/\(range.total.map(String.init) ?? "*")")
    }
    let now = Date(timeIntervalSince1970: 1_780_000_000)
    if let value = head.retryAfter, let seconds = ResponseRules.retryAfter(value, now: now) {
        require(seconds >= 0, "Retry-After \(value.debugDescription) read as \(seconds) s")
        let trimmed = value.trimmingSpaces()
        if let first = trimmed.utf8.first, (0x30...0x39).contains(first) || first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            require(isDigits(trimmed), "Retry-After \(value.debugDescription) read as \(seconds) s")  // delay-seconds = 1*DIGIT
        } else if let date = imfFixdate(trimmed) {
            let expected = max(0, Int64(date.timeIntervalSince(now).rounded(.up)))
            require(seconds == expected, "Retry-After \(value.debugDescription) read as \(seconds) s, not \(expected)")
        }
        // The obsolete forms (RFC 850, asctime) are read by HTTPDate as well; the wait is
        // capped by max_backoff wherever it is used.
    }
    // ETags: another version is symmetric, and no tag is another version of itself (W/ aside).
    let tags = [head.etag, head.lastModified, head.location].compactMap { $0 }
    for a in tags {
        require(!ResponseRules.isAnotherVersion(Validators(etag: a), etag: a, lastModified: nil), "ETag \(a.debugDescription) is another version of itself")
        // Bytes, not Characters: "W/" and a combining mark make one Character "/\u{65E}" (a found input).
        require(a.utf8.starts(with: "W/".utf8) || !ResponseRules.isAnotherVersion(Validators(etag: a), etag: "W/" + a, lastModified: nil),
                "ETag \(a.debugDescription) and its weak form differ")
        for b in tags {
            require(ResponseRules.isAnotherVersion(Validators(etag: a), etag: b, lastModified: nil)
                    == ResponseRules.isAnotherVersion(Validators(etag: b), etag: a, lastModified: nil), "ETags \(a.debugDescription), \(b.debugDescription) compare one way only")
        }
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110 §5.6.7), read strictly, or nil.
func imfFixdate(_ text: String) -> Date? {
    let c = Array(text.utf8)
    guard c.count == 29 else { return nil }
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func string(_ r: Range<Int>) -> String { String(decoding: c[r], as: UTF8.self) }
    func number(_ r: Range<Int>) -> Int? { isDigits(string(r)) ? Int(string(r)) : nil }
    guard let weekday = days.firstIndex(of: string(0..<3)), string(3..<5) == ", ", let day = number(5..<7), c[7] == 0x20,
          let month = months.firstIndex(of: string(8..<11)), c[11] == 0x20, let year = number(12..<16), c[16] == 0x20,
          let hour = number(17..<19), c[19] == 0x3A, let minute = number(20..<22), c[22] == 0x3A, let second = number(23..<25),
          string(25..<29) == " GMT", (1...CivilTime.daysIn(month: month + 1, year: year)).contains(day),
          hour < 24, minute < 60, second < 61 else { return nil }
    let civil = CivilTime(year: year, month: month + 1, day: day, hour: hour, minute: minute, second: min(second, 59))
    let seconds = civil.secondsAsUTC
    // The weekday must be the date's (1970-01-01 was a Thursday, index 3 here).
    let days1970 = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    guard Int((days1970 % 7 + 7 + 3) % 7) == weekday else { return nil }
    return Date(timeIntervalSince1970: TimeInterval(seconds))
}

// MARK: The rules

/// Reads the fuzzer's bytes in order; past the end, zeros.
struct Bytes {
    var data: [UInt8]
    var index = 0
    /// Which count of bytes on the wire a decoded body ends with (`onEnd`'s `onWire`).
    private(set) var wire: UInt8 = 0
    init(_ data: [UInt8]) { self.data = data }

    mutating func byte() -> UInt8 {
        defer { index += 1 }
        return index < data.count ? data[index] : 0
    }

    /// A small number mostly, sometimes a large one: lengths near each other find edges.
    mutating func length() -> UInt64 {
        let kind = byte()
        let low = UInt64(byte()) | UInt64(byte()) << 8
        switch kind % 4 {
        case 0: return low % 16
        case 1: return low
        case 2: return UInt64.max - low
        default: return low << 32
        }
    }

    var rest: ArraySlice<UInt8> { data[min(index, data.count)...] }

    mutating func request() -> ResponseRules.Request {
        let flags = byte()
        var request = ResponseRules.Request()
        let tags = ["\"v1\"", "W/\"v1\"", "\"v2\"", "W/\"v2\""]
        let dates = ["Sun, 06 Nov 1994 08:49:37 GMT", "Mon, 07 Nov 1994 08:49:37 GMT"]
        if flags & 1 != 0 { request.resumeFrom = length() }
        if flags & 2 != 0 { request.partialValidators.etag = tags[Int(byte()) % tags.count] }
        if flags & 4 != 0 { request.partialValidators.lastModified = dates[Int(byte()) % dates.count] }
        if flags & 8 != 0 { request.partialTotal = length() }
        if flags & 16 != 0 { request.revalidating = Validators(etag: tags[Int(byte()) % tags.count], lastModified: dates[0]) }
        if flags & 32 != 0 { request.size = length() }
        if flags & 64 != 0 { request.cap = length() }
        if flags & 128 != 0 {
            // SPEC §7's `encoding`: the mode, what decode offers, and the partial's coding
            // (a listed one, or up to 7 bytes of the input).
            let choice = byte()
            request.encoding = EncodingMode.allCases[Int(choice & 3) % 3]  // bits 0-1: the mode; 2: what decode offers; 3-7: the coding
            if request.encoding == .decode { request.offered = choice & 4 != 0 ? ["gzip", "deflate", "br", "zstd"] : ["gzip", "deflate"] }
            let codings: [String?] = [nil, "gzip", "br", "identity", "x-gzip"]
            let pick = Int(choice >> 3) % (codings.count + 1)
            if pick < codings.count {
                request.partialEncoding = codings[pick]
            } else {
                let count = Int(byte() % 8)
                request.partialEncoding = String(decoding: (0..<count).map { _ in byte() }, as: UTF8.self)
            }
            wire = byte()
        }
        return request
    }

    mutating func onDisk(_ request: ResponseRules.Request) -> UInt64 {
        let kind = byte()
        let delta = UInt64(byte())
        switch kind % 3 {
        case 0: return request.resumeFrom &+ delta
        case 1: return request.size ?? delta
        default: return length()
        }
    }
}

/// A Content-Encoding as the reference reads it: its bytes without the blanks around them,
/// ASCII letters in lower case (RFC 9110 §8.4.1: codings are case-insensitive tokens);
/// nil for none, an empty one or `identity`. Two codings are the same when these bytes are.
func referenceCoding(_ value: String?) -> [UInt8]? {
    guard let value else { return nil }
    var bytes = Array(value.utf8)[...]
    while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
    while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
    let lower = bytes.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
    return lower.isEmpty || lower == Array("identity".utf8) ? nil : lower
}

func checkRules(_ request: ResponseRules.Request, _ head: ResponseRules.Head, onDisk: UInt64, onWire: UInt64, cleanly: Bool) {
    let decided = ResponseRules.onHead(request, head)
    let coding = referenceCoding(head.contentEncoding)
    func shown(_ value: String?) -> String { value?.debugDescription ?? "(none)" }
    let labelled = "Content-Encoding \(shown(head.contentEncoding))"
    switch decided {
    case .append(let total, let rangeEnd):
        require(head.status == 206, "append for HTTP \(head.status)")
        let range = ResponseRules.contentRange(head.contentRange)
        require(range?.start == request.resumeFrom && range?.end == rangeEnd, "append of \(String(describing: range)) to a partial of \(request.resumeFrom) bytes")
        require(rangeEnd >= request.resumeFrom, "append ending at \(rangeEnd) before the partial's end \(request.resumeFrom)")
        if let total {
            require(rangeEnd < total && total <= request.cap, "append to a file of \(total) bytes (range end \(rangeEnd), cap \(request.cap))")
            if let size = request.size { require(total == size, "append to a file of \(total) bytes, size \(size)") }
            if request.resumeFrom > 0, let recorded = request.partialTotal { require(total == recorded, "append to a file of \(total), partial's \(recorded)") }
        }
        if request.resumeFrom > 0 {
            require(!ResponseRules.isAnotherVersion(request.partialValidators, etag: head.etag, lastModified: head.lastModified),
                    "bytes of another version appended to the partial")
        }
        switch request.encoding {
        case .refuse, .decode:
            require(coding == nil, "a range with \(labelled) appended under encoding: \(request.encoding)")
        case .keep:
            require(request.resumeFrom == 0 || coding == referenceCoding(request.partialEncoding),
                    "a range with \(labelled) appended to a partial of \(shown(request.partialEncoding))")
        }
    case .restart(let total):
        require((200..<300).contains(head.status) && head.status != 206, "restart for HTTP \(head.status)")
        require(request.encoding != .refuse || coding == nil, "a body with \(labelled) taken under encoding: refuse")
        if request.encoding == .decode, coding != nil {
            require(total == nil, "a decoded body's file announced as \(String(describing: total)) bytes (its Content-Length counts the wire)")
            require(ContentCodings.names(in: head.contentEncoding ?? "").allSatisfy(request.offered.contains),
                    "a body with \(labelled) taken, offered \(request.offered)")
        }
        if let total {
            require(total <= request.cap, "restart for \(total) bytes over the cap \(request.cap)")
            if let size = request.size { require(total == size, "restart for \(total) bytes, size \(size)") }
        }
    case .cachedCopy:
        require(head.status == 200 && request.revalidating?.etag == head.etag && head.etag?.hasPrefix("W/") == false,
                "cached copy kept for HTTP \(head.status), ETag \(String(describing: head.etag))")
    case .noBody:
        require(!(200..<300).contains(head.status), "no body for HTTP \(head.status)")
    case .refuse(let failure):
        // An invalid head without a status line (status 0) names no status.
        require(failure.httpStatus == (head.status == 0 && failure.invalidResponse ? nil : head.status),
                "refusal names HTTP \(String(describing: failure.httpStatus)) for \(head.status)")
    }

    // The exchange's end is judged only for a body the head let through (TransferStateMachine:
    // a refused head is the failure, a cached copy resent is kept).
    switch decided {
    case .refuse, .cachedCopy: return
    case .append, .restart, .noBody: break
    }
    let decodes = request.encoding == .decode && coding != nil && (200..<300).contains(head.status)
    let ended = ResponseRules.onEnd(request, head, onDisk: onDisk, onWire: decodes ? onWire : nil, cleanly: cleanly, cut: "cut",
                                    now: Date(timeIntervalSince1970: 1_780_000_000))
    switch ended {
    case .finalize(let total):
        require(total == onDisk, "finalize of \(total) bytes with \(onDisk) on disk")
        require((200..<300).contains(head.status) || head.status == 416, "finalize for HTTP \(head.status)")
        if let size = request.size { require(total == size, "finalize of \(total) bytes, size \(size)") }
        if (200..<300).contains(head.status) {
            require(cleanly, "finalize after a cut exchange")
            if decodes {
                // SPEC §7: a decoded body's Content-Length is of the bytes as sent.
                if let length = head.contentLength { require(length == onWire, "finalize of a decoded body of \(onWire) bytes on the wire announced as \(length)") }
            } else if head.status == 206 {
                let range = ResponseRules.contentRange(head.contentRange)
                require(range != nil && range!.end + 1 == onDisk, "finalize of a 206 with range \(String(describing: range)) and \(onDisk) bytes")
            } else if let length = head.contentLength {
                require(length == onDisk, "finalize of \(onDisk) bytes announced as \(length)")
            }
        } else {
            require(request.resumeFrom == onDisk && onDisk > 0, "finalize on a 416 with \(onDisk) bytes of a partial of \(request.resumeFrom)")
        }
    case .notModified:
        require(head.status == 304 && request.revalidating != nil && request.resumeFrom == 0, "not modified for HTTP \(head.status)")
    case .redirect:
        require((300..<400).contains(head.status) && head.status != 304, "redirect for HTTP \(head.status)")
    case .failed(let failure):
        require(failure.retryAfter.map { $0 >= 0 } ?? true, "a failure retried after \(failure.retryAfter!) s")
        require(failure.httpStatus == head.status || (head.status == 0 && failure.httpStatus == 0), "failure names HTTP \(String(describing: failure.httpStatus)) for \(head.status)")
    }
}
