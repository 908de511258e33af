import Foundation

/// The heart of the downloader: what a response means for the partial on disk and for the
/// cached copy (SPEC §3, FAULTS 1–16). Pure — the exchange in, the decision out; no file,
/// no clock, no libcurl. `Transfer` carries the decisions out, and the exhaustive table in
/// the tests checks them over every combination of partial, status, validators, range,
/// length, encoding and manifest checks: the final file is always absent, the previous good
/// copy, or byte-identical to the origin's current content.
///
/// Two moments are judged: the response's head (`onHead`: may its body be written, and
/// where?) and the exchange's end (`onEnd`: place the file, keep the copy, retry, or fail).
enum ResponseRules {
    /// What the request asked for, and what the client holds.
    struct Request: Sendable, Equatable {
        /// Where the Range began: the bytes of the partial on disk it continues (0: the
        /// whole body was asked for).
        var resumeFrom: UInt64 = 0
        /// Validators of the partial's version (its If-Range, when it has one: `ResumeRule`).
        var partialValidators = Validators()
        /// The partial's recorded total length, when known.
        var partialTotal: UInt64?
        /// Validators of the cached copy, when If-None-Match / If-Modified-Since were sent.
        var revalidating: Validators?
        /// The manifest's exact `size`, when given.
        var size: UInt64?
        /// The most bytes the file may have (`size`, else `max_size`, else the global cap), and
        /// how an error names it.
        var cap: UInt64 = .max
        var capName = "the global max_size"
        /// The resource's `encoding` (SPEC §7 "Encoded bodies"), and with `decode` the codings
        /// offered (`ContentCodings.offered`: what this libcurl decodes).
        var encoding = EncodingMode.refuse
        var offered: [String] = []
        /// The Content-Encoding of the partial's bytes (nil: identity): with `keep`, a 206 that
        /// continues it must carry the same.
        var partialEncoding: String?
    }

    /// The response's status and the headers prefetch reads (the last of each name wins),
    /// kept without a dictionary: a response is parsed per request, thousands of times a run.
    /// Read from libcurl's header lines by `take(line:)` (ResponseHead.swift).
    struct Head: Sendable, Equatable {
        var status: Int
        var etag: String?
        var lastModified: String?
        var contentRange: String?
        var contentLength: UInt64?
        var contentEncoding: String?
        var retryAfter: String?
        var location: String?
        /// `Date` and `Accept-Ranges`, for §7's resumable rule (`facts`).
        var date: String?
        var acceptRanges: String?
        /// `Content-Type`: a delta's ranged answer may be `multipart/byteranges` (SPEC §9).
        var contentType: String?
        /// Why the head makes the response invalid (RFC 9112 §6.3: a Content-Length that is
        /// not one decimal number of at most 63 bits, or two that differ), or nil.
        var invalid: String? = nil
        /// The bytes of the Location's value (one over `maxLocationBytes` is not kept).
        var locationLength = 0
        /// The bytes of the exchange's heads so far (interim 1xx heads included).
        var size = 0
    }

    /// What to do with a 2xx body, decided on its head.
    enum OnHead: Equatable {
        /// Write it after the `resumeFrom` bytes on disk: it carries bytes up to `rangeEnd`
        /// of a file of `total` bytes (when the 206 says).
        case append(total: UInt64?, rangeEnd: UInt64)
        /// It is the whole file from byte 0: the partial starts afresh (never appended to).
        case restart(total: UInt64?)
        /// Nothing of it is written.
        case refuse(TransferFailure)
        /// Not a body to write (no 2xx): judged at the end.
        case noBody
        /// The body is the cached copy itself, sent whole to a revalidation: nothing of it is
        /// written, and the copy is kept as for a 304, with these validators.
        case cachedCopy(Validators)
    }

    /// How the exchange ended.
    enum OnEnd: Equatable {
        /// The partial holds the whole file, `total` bytes: check its digest, then place it.
        case finalize(total: UInt64)
        /// 304: the cached copy is current; these are its validators now.
        case notModified(Validators)
        /// 3xx with a Location to follow (the caller checks scheme, loops and count).
        case redirect
        case failed(TransferFailure)
    }

    // MARK: The head as it arrives (SPEC §7)

    /// The most bytes a response's head may have (libcurl's own limit is 300 KiB).
    static let maxHeadBytes = 256 << 10
    /// The longest `Location` a redirect is followed to.
    static let maxLocationBytes = 8 << 10

    /// Judged at each line of the head as it arrives (`ended`: the line was the blank one
    /// closing a head): a head past 256 KiB is refused at once, and a final head that
    /// makes the response invalid, or a redirect to a Location over 8 KiB, is refused as it
    /// ends, before any body. Each is one transient failure that says nothing of the origin
    /// (SPEC §6: it neither holds nor clears a hold). Nil: the exchange goes on.
    static func onHeadLine(_ head: Head, ended: Bool) -> TransferFailure? {
        if head.size > maxHeadBytes { return invalid("the response head is over 256 KiB", discard: false, head) }
        guard ended, !(100..<200).contains(head.status) else { return nil }  // an interim head: the final one follows
        if head.status < 100 { return invalid("no status line", discard: false, head) }
        if let problem = head.invalid { return invalid(problem, discard: false, head) }
        if (300..<400).contains(head.status), head.status != 304, head.locationLength > maxLocationBytes {
            return invalid("the redirect's Location is over 8 KiB (\(head.locationLength) bytes); not followed", discard: false, head)
        }
        return nil
    }

    // MARK: The head

    static func onHead(_ request: Request, _ head: Head) -> OnHead {
        if let problem = head.invalid { return .refuse(invalid(problem, discard: false, head)) }  // RFC 9112 §6.3: nothing of it is used
        guard (200..<300).contains(head.status) else { return .noBody }
        // A 200 to a revalidation naming the cached copy's own strong ETag is that copy: a
        // strong validator changes whenever the bytes do (RFC 9110 §8.8.1). A shared cache
        // sends one so: Squid 5, asked with If-None-Match alone about an entry it had to
        // revalidate, gets the origin's 304 and hands its whole entry on as a 200. This comes
        // before the encoding's rules (SPEC §7): the body is not read, whatever it is labelled.
        if head.status == 200, let cached = request.revalidating, let tag = cached.etag, !isWeakTag(tag),
           let sent = head.etag, SameBytes.equal(sent, tag) {  // strong comparison: the same octets
            return .cachedCopy(Validators(etag: tag, lastModified: head.lastModified ?? cached.lastModified))
        }
        // SPEC §7: a range that cannot be (negative, reversed, past 2^63, past its total) is
        // never appended to; the file restarts from zero. Such a response is invalid whatever
        // its encoding, as one with an invalid Content-Length is (above).
        let range = head.status == 206 ? contentRange(head.contentRange) : nil
        if head.status == 206, range == nil {
            return .refuse(invalid("Content-Range \(quoted(head.contentRange)) is not a valid range; restarting from zero", discard: true, head))
        }
        if let refused = encodingRefusal(request, head) { return .refuse(refused) }
        if let range {
            // FAULTS 1: a 206 must continue the partial exactly where it ends.
            guard range.start == request.resumeFrom else {
                return .refuse(failure(.transient, "the server sent a range that does not continue the partial", discard: true, head))
            }
            if request.resumeFrom > 0 {
                // A server that ignores If-Range may send a range of the version it has now: its
                // validators say so, or its length does; its bytes are never appended (FAULTS 6).
                if isAnotherVersion(request.partialValidators, etag: head.etag, lastModified: head.lastModified) {
                    return .refuse(failure(.transient, "the server answered the resume with a range of another version; restarting from zero",
                                           discard: true, head))
                }
                if let total = range.total, let recorded = request.partialTotal, total != recorded {
                    return .refuse(failure(.transient, "the server answered the resume with a file of \(total) bytes, not the partial's \(recorded); restarting from zero",
                                           discard: true, head))
                }
            }
            if let refused = announced(range.total, request, head) { return .refuse(refused) }
            return .append(total: range.total, rangeEnd: range.end)
        }
        // FAULTS 5: any other 2xx is the whole file from zero, also to a ranged request. A
        // decoded body's Content-Length counts the bytes as sent, not the file (`onEnd`).
        let length = decodes(request, head) ? nil : head.contentLength
        if let refused = announced(length, request, head) { return .refuse(refused) }
        return .restart(total: length)
    }

    /// SPEC §7 "Encoded bodies" (FAULTS 15): a body labelled with a Content-Encoding is
    /// another representation than the identity asked for. `refuse` refuses it (as a
    /// `sha256` mismatch: one attempt, not retried in the run); `keep` stores it as sent,
    /// but a 206 continuing a partial must carry the partial's encoding; `decode` takes the
    /// codings it offered, never a range of them (it never asks for one).
    static func encodingRefusal(_ request: Request, _ head: Head) -> TransferFailure? {
        let coding = ResumeRule.normalized(head.contentEncoding)
        switch request.encoding {
        case .refuse:
            guard let coding else { return nil }
            return failure(.mismatch, "the server sent Content-Encoding: \(coding) although identity was asked; not placed "
                               + "(set encoding: keep to store it as sent, or decode)", discard: false, head)
        case .keep:
            guard head.status == 206, request.resumeFrom > 0,
                  !ResumeRule.continuesEncoding(partial: request.partialEncoding, response: coding) else { return nil }
            return failure(.transient, "the server answered the resume with Content-Encoding: \(coding ?? "identity"), not the partial's "
                               + "\(ResumeRule.normalized(request.partialEncoding) ?? "identity"); restarting from zero", discard: true, head)
        case .decode:
            guard let coding else { return nil }
            let unknown = ContentCodings.names(in: coding).filter { !request.offered.contains($0) }
            if !unknown.isEmpty {
                return failure(.mismatch, "the server sent Content-Encoding: \(coding), which this build cannot decode (encoding: decode "
                                   + "offers \(request.offered.joined(separator: ", "))); not placed", discard: true, head)
            }
            if head.status == 206 {
                return failure(.transient, "the server sent a range of a Content-Encoding: \(coding) body, which cannot be decoded; "
                                   + "restarting from zero", discard: true, head)
            }
            return nil
        }
    }

    /// Whether the body is decoded on its way to the partial (`decode`, and it is labelled):
    /// its Content-Length then counts the bytes as sent, and `size` and the cap the decoded
    /// bytes.
    static func decodes(_ request: Request, _ head: Head) -> Bool {
        request.encoding == .decode && ResumeRule.normalized(head.contentEncoding) != nil
    }

    /// A file whose announced length is over its cap, or is not its exact `size`, is refused
    /// before a byte is written (FAULTS 13, 14): nothing is downloaded only to be discarded.
    private static func announced(_ total: UInt64?, _ request: Request, _ head: Head) -> TransferFailure? {
        guard let total else { return nil }
        if total > request.cap {
            return failure(.mismatch, "the body is longer than \(request.capName); cut off and discarded", discard: true, head)
        }
        if let size = request.size, total != size {
            return failure(.mismatch, "size mismatch: the server announced \(total) bytes, expected \(size)", discard: true, head)
        }
        return nil
    }

    // MARK: The end

    /// `onDisk`: the partial's bytes now (those kept from before, and what this response
    /// wrote); `onWire`: the body's bytes as sent, when it was decoded (`decodes`);
    /// `cleanly`: libcurl finished the exchange without an error (`cut` says which).
    static func onEnd(_ request: Request, _ head: Head, onDisk: UInt64, onWire: UInt64? = nil, cleanly: Bool, cut: @autoclosure () -> String,
                      now: @autoclosure () -> Date) -> OnEnd {
        if let problem = head.invalid { return .failed(invalid(problem, discard: false, head)) }
        let status = head.status
        if (300..<400).contains(status), status != 304 { return .redirect }
        if status == 304 {
            // FAULTS 10, 11: only an answer to a revalidation, never "complete" for a partial.
            guard let cached = request.revalidating, request.resumeFrom == 0 else {
                return .failed(failure(.transient, "unexpected 304 to an unconditional request", discard: true, head))
            }
            return .notModified(Validators(etag: head.etag ?? cached.etag, lastModified: head.lastModified ?? cached.lastModified))
        }
        if status == 416 {
            // FAULTS 9: the partial may already hold the whole file — unless the 416 names
            // another version: then those bytes are the old one's. (A length recorded for the
            // partial is not held against it: it may have come from a Content-Length that lied.)
            if let value = head.contentRange, value.hasPrefix("bytes */"), let total = decimal(value.utf8.dropFirst(8)),
               total == onDisk, onDisk > 0, request.resumeFrom == onDisk,
               !isAnotherVersion(request.partialValidators, etag: head.etag, lastModified: head.lastModified) {
                if let size = request.size, total != size {
                    return .failed(failure(.mismatch, "size mismatch: got \(total) bytes, expected \(size)", discard: true, head))
                }
                return .finalize(total: total)
            }
            return .failed(failure(.transient, "HTTP 416: the partial does not fit the current version; restarting", discard: true, head))
        }
        if (200..<300).contains(status) {
            guard cleanly else {
                // FAULTS 1, 12, 17: the connection dropped or stalled; keep what arrived.
                return .failed(failure(.transient, cut(), discard: false, head))
            }
            return complete(request, head, onDisk: onDisk, onWire: onWire)
        }
        switch status {
        case 401, 403, 404, 410:
            return .failed(failure(.permanent, "HTTP \(status)", discard: false, head))
        case 408, 429, 502, 503, 504:  // 408 Request Timeout is transient too, as for curl --retry
            var failed = failure(.transient, "HTTP \(status)", discard: false, head)
            failed.retryAfter = retryAfter(head.retryAfter, now: now())
            if status != 408 { failed.holdsOrigin = "HTTP \(status)" }  // SPEC §6: the origin is overloaded or down
            return .failed(failed)
        case 500..<600:
            return .failed(failure(.transient, "HTTP \(status)", discard: false, head))
        default:
            return .failed(failure(.permanent, "HTTP \(status)", discard: false, head))
        }
    }

    /// A 2xx body received whole: its length against what the response and the manifest say
    /// (FAULTS 12–14). A 206 is part of a file: it must carry the bytes its range names, and
    /// it is the whole file only when a total (its own, or `size`) says the file ends there.
    private static func complete(_ request: Request, _ head: Head, onDisk: UInt64, onWire: UInt64?) -> OnEnd {
        var total: UInt64?
        if decodes(request, head) {
            // SPEC §7: Content-Length counts the bytes on the wire; `size` (below) the decoded ones.
            if let length = head.contentLength, let wire = onWire, wire != length {
                return .failed(failure(.transient, "got \(wire) of \(length) bytes (as sent, before decoding)", discard: true, head))
            }
        } else if head.status == 206, let range = contentRange(head.contentRange) {
            if onDisk != range.end + 1 {
                return .failed(failure(.transient, "the 206 ended at byte \(onDisk) of the range to \(range.end + 1)",
                                       discard: onDisk > range.end + 1, head))
            }
            guard let known = range.total ?? request.size else {
                return .failed(failure(.transient, "the 206 gave no total length (Content-Range: …/*): \(onDisk) bytes kept, the rest is asked for next",
                                       discard: false, head))
            }
            if onDisk < known {
                return .failed(failure(.transient, "got \(onDisk) of \(known) bytes", discard: false, head))
            }
            total = known
        } else {
            total = head.contentLength
        }
        if let total, onDisk != total {
            return .failed(failure(.transient, "got \(onDisk) of \(total) bytes", discard: onDisk > total, head))
        }
        if let size = request.size, onDisk != size {
            return .failed(failure(.mismatch, "size mismatch: got \(onDisk) bytes, expected \(size)", discard: true, head))
        }
        return .finalize(total: onDisk)
    }

    /// The manifest's `sha256` against the digest of the bytes to place (FAULTS 14).
    static func checkDigest(_ digest: String, expected: String?, status: Int) -> TransferFailure? {
        guard let expected, digest != expected else { return nil }
        return TransferFailure(kind: .mismatch, message: "sha256 mismatch: got \(digest.prefix(12))…, expected \(expected.prefix(12))…",
                               retryAfter: nil, discardPartial: true, httpStatus: status)
    }

    // MARK: Pieces

    private static func failure(_ kind: TransferFailure.Kind, _ message: String, discard: Bool, _ head: Head) -> TransferFailure {
        TransferFailure(kind: kind, message: message, retryAfter: nil, discardPartial: discard, httpStatus: head.status)
    }

    /// An invalid response (SPEC §7): one transient failure, nothing of it used, and no word
    /// on its origin (it neither holds nor clears a hold).
    private static func invalid(_ problem: String, discard: Bool, _ head: Head) -> TransferFailure {
        TransferFailure(kind: .transient, message: "invalid response: \(problem)", retryAfter: nil, discardPartial: discard,
                        httpStatus: head.status == 0 ? nil : head.status, invalidResponse: true)
    }

    /// Whether a response's validators name another version than the partial's: ETags
    /// compared weakly (RFC 9110 §8.8.3.2, the opaque tags), else Last-Modified; a
    /// validator missing on either side tells nothing. Validators are octets: compared byte
    /// for byte, never as Unicode text (where `"é"` and `"e"` + U+0301 are equal, and `W/`
    /// followed by a combining mark is no `W/` prefix of Characters).
    static func isAnotherVersion(_ partial: Validators, etag: String?, lastModified: String?) -> Bool {
        if let ours = partial.etag, let theirs = etag { return !opaqueTag(ours).elementsEqual(opaqueTag(theirs)) }
        if let ours = partial.lastModified, let theirs = lastModified { return !SameBytes.equal(ours, theirs) }
        return false
    }

    /// An entity tag's bytes without a leading `W/` (the weak indicator, RFC 9110 §8.8.3).
    static func opaqueTag(_ tag: String) -> Substring.UTF8View {
        let bytes = Substring(tag).utf8
        return bytes.starts(with: "W/".utf8) ? bytes.dropFirst(2) : bytes
    }

    /// Whether an entity tag is weak: its bytes begin with `W/`.
    static func isWeakTag(_ tag: String) -> Bool { tag.utf8.starts(with: "W/".utf8) }

    /// `bytes a-b/total` (total may be `*`; RFC 9110 §14.4): each number decimal digits only,
    /// at most 2^63 − 1, the range not reversed and inside its total; anything else is no
    /// range (nil). Total on any input.
    static func contentRange(_ value: String?) -> (start: UInt64, end: UInt64, total: UInt64?)? {
        guard let value else { return nil }
        let bytes = value.utf8
        let unit = Array("bytes".utf8)
        guard bytes.count > unit.count, zip(bytes, unit).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }  // range units: case-insensitive
        var spec = bytes.dropFirst(unit.count)
        guard spec.first == 0x20 else { return nil }
        while spec.first == 0x20 { spec = spec.dropFirst() }
        guard let slash = spec.firstIndex(of: 0x2F), let dash = spec[..<slash].firstIndex(of: 0x2D) else { return nil }
        guard let start = decimal(spec[..<dash]), let end = decimal(spec[spec.index(after: dash)..<slash]), end >= start else { return nil }
        let totalText = spec[spec.index(after: slash)...]
        if totalText.elementsEqual([0x2A]) { return (start, end, nil) }  // "*": the length is not known
        guard let total = decimal(totalText), end < total else { return nil }  // a range past the file's end is no range
        return (start, end, total)
    }

    /// What one Content-Length field says (RFC 9110 §8.6).
    enum LengthField: Equatable {
        case length(UInt64)
        /// Not a list of decimal numbers of at most 63 bits (a sign, a space inside, an
        /// empty element, a number past 2^63 − 1, nothing at all).
        case malformed
        /// A list of two different numbers (`3, 5`).
        case conflicting(UInt64, UInt64)
    }

    /// One Content-Length field's value: a decimal number of at most 63 bits; a list of
    /// equal ones (a proxy joined duplicate fields, RFC 9110 §8.6) counts as that one.
    static func lengthField(_ value: some BidirectionalCollection<UInt8>) -> LengthField {
        var length: UInt64?
        for element in value.split(separator: 0x2C, omittingEmptySubsequences: false) {
            var digits = element[...]
            while let first = digits.first, first == 0x20 || first == 0x09 { digits = digits.dropFirst() }
            while let last = digits.last, last == 0x20 || last == 0x09 { digits = digits.dropLast() }
            guard let number = decimal(digits) else { return .malformed }
            if let length, length != number { return .conflicting(length, number) }
            length = number
        }
        return length.map { .length($0) } ?? .malformed
    }

    /// `1*DIGIT` as a number of at most 2^63 − 1 (what a signed 64-bit length holds); nil
    /// for anything else, a sign or a space included.
    static func decimal(_ digits: some Collection<UInt8>) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard (0x30...0x39).contains(byte) else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(byte - 0x30))
            guard !overflow, !carry, sum <= UInt64(Int64.max) else { return nil }
            value = sum
        }
        return value
    }

    /// A header value as an error shows it: quoted, printable ASCII only, cut after 40 bytes.
    static func quoted(_ value: some Collection<UInt8>) -> String {
        var text = "\""
        for (index, byte) in value.enumerated() {
            if index == 40 { text += "…"; break }
            text.unicodeScalars.append((0x20...0x7E).contains(byte) ? Unicode.Scalar(byte) : "?")
        }
        return text + "\""
    }

    static func quoted(_ value: String?) -> String { value.map { quoted($0.utf8) } ?? "(none)" }


    /// A number as HTTP writes one, `1*DIGIT` (RFC 9110 §8.6, §10.2.3, §14.4): no sign, no
    /// blanks (`UInt64("+5")` is 5; an origin's "+5" is no number).
    static func digits<S: StringProtocol>(_ text: S) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt64(text)
    }

    /// Retry-After as delta-seconds or an HTTP-date (RFC 9110 §10.2.3), in seconds from `now`.
    static func retryAfter(_ value: String?, now: Date) -> Int64? {
        guard let value = value?.trimmingSpaces(), !value.isEmpty else { return nil }
        if let seconds = digits(value) { return Int64(clamping: seconds) }
        // The three HTTP-date forms, parsed by hand (`HTTPDate`): Foundation's DateFormatter
        // stopped the process on a value such as "Fr" + U+0301 (fuzz-response).
        if let seconds = HTTPDate.parse(value) { return max(0, seconds - Int64(now.timeIntervalSince1970.rounded(.down))) }
        return nil
    }
}
