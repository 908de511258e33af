import Foundation
import Testing
@testable import PrefetchCore

/// The response rules over the whole cross product of what a partial, a cached copy, an
/// origin and a response can be (the correctness issue's table):
///
/// - the partial: none / some (400 of 1,000 bytes) / complete — of the origin's current
///   version or of an older one of the same length (the hardest case);
/// - the validators the version carries (so the response's relation to the partial's):
///   a strong ETag (same / other), a weak one, none; Last-Modified (same / other), none;
/// - the status: 200, 206, 304, 416, 429, 503, 500, 404;
/// - Content-Range: start right / early / late / absent; total known / unknown / different;
/// - Content-Encoding: identity / gzip; the body whole or cut short;
/// - `size` and `sha256` in the manifest, given or not; a cached copy, or none.
///
/// The world is played out by a model written here from FAULTS.md, not from the code: the
/// origin always sends bytes of its current version and names them with that version's
/// validators (servers may ignore ranges and If-Range, lie about lengths and ranges, or
/// encode); the client builds its request by FAULTS 7–8, then writes, restarts or refuses
/// as the rules say, and places what they finalize. Every combination must end with the
/// final file absent, the previous good copy, or byte-identical to the origin's current
/// content; and where FAULTS.md names an outcome, that outcome.
@Suite struct ResponseRulesTableTests {
    enum PartialCase: CaseIterable { case none, some, complete }
    enum Version: CaseIterable { case current, old }
    enum ETagCase: CaseIterable { case strong, weak, none }
    enum LastModifiedCase: CaseIterable { case present, none }
    enum Status: Int, CaseIterable { case ok = 200, partial = 206, notModified = 304, unsatisfiable = 416, tooMany = 429, unavailable = 503, error = 500, notFound = 404 }
    enum RangeStart: CaseIterable { case right, early, late, absent }
    enum Total: CaseIterable { case known, unknown, different }
    enum Encoding: CaseIterable { case identity, gzip }
    enum Delivery: CaseIterable { case whole, cut }

    static let length = 1000
    static func content(_ version: Version) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: ($0 &* (version == .current ? 31 : 17)) &+ (version == .current ? 7 : 3)) }
    }
    static let current = content(.current), old = content(.old)
    static func sha(_ bytes: [UInt8]) -> String { SHA256.hex(SHA256.digest(bytes)) }

    /// A version's validators, as its server names it.
    static func validators(_ version: Version, _ etag: ETagCase, _ lastModified: LastModifiedCase) -> Validators {
        let tag = version == .current ? "c1" : "o1"
        return Validators(etag: etag == .none ? nil : (etag == .weak ? "W/\"\(tag)\"" : "\"\(tag)\""),
                          lastModified: lastModified == .none ? nil
                              : (version == .current ? "Tue, 01 Dec 2026 10:00:00 GMT" : "Sun, 01 Nov 2026 10:00:00 GMT"))
    }

    struct Outcome { var final: [UInt8]?; var placed: Bool; var end: ResponseRules.OnEnd?; var head: ResponseRules.OnHead; var asked: ResponseRules.Request }

    @Test func everyCombinationIsHandledCorrectlyOrRefusedSafely() {
        var combinations = 0, placedCurrent = 0
        for partial in PartialCase.allCases {
            for version in Version.allCases where !(partial == .none && version == .old) {
                for etag in ETagCase.allCases {
                    for lastModified in LastModifiedCase.allCases {
                        for status in Status.allCases {
                            let bodied = status == .ok || status == .partial || status == .unsatisfiable
                            for start in bodied ? RangeStart.allCases : [.absent] {
                                for total in bodied ? Total.allCases : [.known] {
                                    for encoding in bodied ? Encoding.allCases : [.identity] {
                                        for delivery in bodied && status != .unsatisfiable ? Delivery.allCases : [.whole] {
                                            for sizeGiven in [false, true] {
                                                for shaGiven in [false, true] {
                                                    for cached in [false, true] {
                                                        combinations += 1
                                                        let label = "partial \(partial) of \(version), etag \(etag), last-modified \(lastModified), \(status.rawValue), range \(start), total \(total), \(encoding), \(delivery), size \(sizeGiven), sha256 \(shaGiven), cached \(cached)"
                                                        let outcome = Self.play(partial: partial, version: version, etag: etag, lastModified: lastModified,
                                                                                status: status, start: start, total: total, encoding: encoding, delivery: delivery,
                                                                                sizeGiven: sizeGiven, shaGiven: shaGiven, cached: cached)
                                                        if outcome.placed && outcome.final == Self.current { placedCurrent += 1 }
                                                        Self.check(outcome, label: label, partial: partial, version: version, etag: etag,
                                                                   lastModified: lastModified, status: status, start: start, total: total,
                                                                   encoding: encoding, delivery: delivery, sizeGiven: sizeGiven, shaGiven: shaGiven, cached: cached)
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(combinations > 20_000, "\(combinations)")
        #expect(placedCurrent > 1_000, "the honest exchanges place the file: \(placedCurrent)")
        print("response rules table: \(combinations) combinations, \(placedCurrent) of them place the current version")
    }

    /// One exchange, played out.
    static func play(partial: PartialCase, version: Version, etag: ETagCase, lastModified: LastModifiedCase, status: Status,
                     start: RangeStart, total: Total, encoding: Encoding, delivery: Delivery, sizeGiven: Bool, shaGiven: Bool,
                     cached: Bool) -> Outcome {
        let onDisk: [UInt8] = switch partial {
        case .none: []
        case .some: Array(content(version).prefix(400))
        case .complete: content(version)
        }
        let recorded = validators(version, etag, lastModified)
        let serverValidators = validators(.current, etag, lastModified)
        // The request, by the rules (checked against FAULTS 7–8 in `check`).
        let plan = ResponseRules.resume(trusted: UInt64(onDisk.count), validators: recorded, sha256Given: shaGiven)
        let cachedCopy: [UInt8]? = cached ? old : nil  // the previous good copy, of the old version
        let cachedValidators = validators(.old, etag, lastModified)
        let revalidating = plan.from == 0 && cached && (cachedValidators.etag != nil || cachedValidators.lastModified != nil)
        let size: UInt64? = sizeGiven ? UInt64(length) : nil
        let asked = ResponseRules.Request(resumeFrom: plan.from, partialValidators: plan.from > 0 ? recorded : Validators(),
                                          partialTotal: plan.from > 0 ? UInt64(length) : nil,
                                          revalidating: revalidating ? cachedValidators : nil,
                                          size: size, cap: size ?? (16 << 30), capName: sizeGiven ? "size 1000 bytes" : "the global max_size")
        // The response: the origin's current version, as the dimension makes the server behave.
        var head = ResponseRules.Head(status: status.rawValue, etag: serverValidators.etag, lastModified: serverValidators.lastModified)
        var body: [UInt8] = []
        let encoded: [UInt8] = current.reversed()  // stands for the gzip stream: other bytes than the file
        switch status {
        case .ok:
            body = encoding == .gzip ? encoded : current
            head.contentLength = total == .known ? UInt64(body.count) : total == .different ? UInt64(body.count + 10) : nil
        case .partial:
            let from = Int(plan.from)
            let first = start == .early ? max(0, from - 100) : start == .late ? from + 100 : from
            if start != .absent {
                let totalText = total == .known ? "\(length)" : total == .different ? "\(length + 10)" : "*"
                head.contentRange = "bytes \(first)-\(length - 1)/\(totalText)"
            }
            let slice = Array(current[min(first, length)...])
            body = encoding == .gzip ? Array(slice.reversed()) : slice
            head.contentLength = UInt64(body.count)
        case .unsatisfiable:
            if start != .absent { head.contentRange = total == .known ? "bytes */\(length)" : total == .different ? "bytes */\(length + 10)" : "bytes */*" }
        case .notModified, .tooMany, .unavailable, .error, .notFound:
            head.retryAfter = status == .tooMany || status == .unavailable ? "7" : nil
        }
        if encoding == .gzip, status == .ok || status == .partial { head.contentEncoding = "gzip" }
        if delivery == .cut { body = Array(body.prefix(body.count / 2)) }
        // The client carries the head's decision out.
        var file = onDisk
        let decision = ResponseRules.onHead(asked, head)
        var refused = false
        switch decision {
        case .append: file = Array(onDisk.prefix(Int(plan.from))) + body
        case .restart: file = body
        case .refuse: refused = true
        case .noBody: break
        case .cachedCopy: return Outcome(final: cachedCopy, placed: false, end: nil, head: decision, asked: asked)
        }
        // The cap cuts a body off as it arrives (the write callback), whatever was announced.
        if !refused, file.count > Int(asked.cap) { return Outcome(final: cachedCopy, placed: false, end: nil, head: decision, asked: asked) }
        if refused { return Outcome(final: cachedCopy, placed: false, end: nil, head: decision, asked: asked) }
        let end = ResponseRules.onEnd(asked, head, onDisk: UInt64(file.count), cleanly: delivery == .whole, cut: "cut", now: Date())
        switch end {
        case .finalize:
            if ResponseRules.checkDigest(sha(file), expected: shaGiven ? sha(current) : nil, status: status.rawValue) != nil {
                return Outcome(final: cachedCopy, placed: false, end: end, head: decision, asked: asked)
            }
            return Outcome(final: file, placed: true, end: end, head: decision, asked: asked)
        case .notModified, .redirect, .failed:
            return Outcome(final: cachedCopy, placed: false, end: end, head: decision, asked: asked)
        }
    }

    /// The invariant, then what FAULTS.md says of each case.
    static func check(_ o: Outcome, label: String, partial: PartialCase, version: Version, etag: ETagCase, lastModified: LastModifiedCase,
                      status: Status, start: RangeStart, total: Total, encoding: Encoding, delivery: Delivery, sizeGiven: Bool,
                      shaGiven: Bool, cached: Bool) {
        let previous: [UInt8]? = cached ? old : nil
        // Absent, the previous good copy, or byte-identical to the origin's current content.
        #expect(o.final == nil || o.final == previous || o.final == current, "\(label): placed bytes that are neither")
        if o.placed { #expect(o.final == current, "\(label): placed something other than the current version") }

        // FAULTS 7, 8: If-Range only with a strong ETag, else Last-Modified; a resume without
        // any validator only with a sha256; never a weak ETag.
        let resumed = o.asked.resumeFrom > 0
        let strong = etag == .strong, dated = lastModified == .present
        if partial == .none { #expect(!resumed, "\(label): resumed nothing") }
        if partial != .none { #expect(resumed == (strong || dated || shaGiven), "\(label): FAULTS 7/8 resume rule") }
        let plan = ResponseRules.resume(trusted: 400, validators: validators(version, etag, lastModified), sha256Given: shaGiven)
        if let ifRange = plan.ifRange { #expect(!ifRange.hasPrefix("W/"), "\(label): a weak ETag in If-Range") }

        // The cached copy here is always the old version: a response is never taken for it.
        if case .cachedCopy = o.head { Issue.record("\(label): the current version was taken for the cached copy") }
        // FAULTS 5: a 200 to a ranged request restarts the file from zero, never appends.
        if status == .ok, case .append = o.head { Issue.record("\(label): a 200 was appended") }
        // FAULTS 6: a 206 of another version than the partial's is never appended.
        if status == .partial, resumed, version == .old, case .append = o.head, strong || dated {
            Issue.record("\(label): a range of another version was appended")
        }
        // FAULTS 10, 11: a 304 keeps the cached copy (it is a revalidation), never completes a partial.
        if status == .notModified {
            #expect(!o.placed, "\(label): a 304 placed a file")
            if o.asked.revalidating != nil, case .notModified = o.end {} else if o.asked.revalidating != nil {
                Issue.record("\(label): a 304 to a revalidation did not keep the copy")
            }
            if resumed, case .notModified = o.end { Issue.record("\(label): a 304 counted as complete for a partial") }
        }
        // FAULTS 9: 416 with bytes */L, L the bytes on disk, of the same version: finalized.
        if status == .unsatisfiable, partial == .complete, resumed, version == .current, start != .absent, total == .known {
            #expect(o.placed, "\(label): a 416 over the whole file on disk did not finalize it")
        }
        // FAULTS 12, 17: a cut body is kept for resume, not placed (unless it was refused before).
        if delivery == .cut, case .failed(let failure) = o.end { #expect(!failure.discardPartial && failure.kind == .transient, "\(label): a cut body") }
        if delivery == .cut { #expect(!o.placed, "\(label): a cut body was placed") }
        // FAULTS 14: an error status's body never lands.
        if [.tooMany, .unavailable, .error, .notFound].contains(status) {
            #expect(!o.placed, "\(label): an error page was placed")
            if case .noBody = o.head {} else { Issue.record("\(label): an error status was given a body to write") }
        }
        // FAULTS 15: an encoded body is never the file.
        if encoding == .gzip, status == .ok || status == .partial { #expect(!o.placed, "\(label): a gzip body was placed") }
        // FAULTS 16: 429/503 are retried (honouring Retry-After), 500 too; 404 is not.
        switch (status, o.end) {
        case (.tooMany, .failed(let f)), (.unavailable, .failed(let f)): #expect(f.kind == .transient && f.retryAfter == 7, "\(label)")
        case (.error, .failed(let f)): #expect(f.kind == .transient, "\(label)")
        case (.notFound, .failed(let f)): #expect(f.kind == .permanent, "\(label)")
        case (.tooMany, _), (.unavailable, _), (.error, _), (.notFound, _): Issue.record("\(label): an error status did not fail")
        default: break
        }
        // Handled correctly, not only safely: an honest whole answer places the current version.
        let honest200 = status == .ok && !resumed && encoding == .identity && delivery == .whole && total != .different
        let honest206 = status == .partial && start == .right && encoding == .identity && delivery == .whole && total != .different
            && (!resumed || version == .current) && (total == .known || sizeGiven)
            && !(resumed && partial == .complete)  // nothing is left to send: an honest server answers 416
        if honest200 || honest206 { #expect(o.placed, "\(label): an honest answer was not placed") }
        let ranged200 = status == .ok && resumed && encoding == .identity && delivery == .whole && total != .different
        if ranged200 { #expect(o.placed, "\(label): a 200 to a resume did not restart cleanly and place the new version") }
    }
}

/// SPEC §7 "Responses": the head's own rules over every combination of what a server can
/// put in Content-Length (valid, wrong, duplicated, listed, overflowing, signed, not a
/// number) and Content-Range (right, reversed, negative, past 2^63, past its total, signed,
/// malformed, not continuing the partial), for each status, a partial or none, a cached copy
/// or none, the body whole or cut. The head is told line by line, as libcurl hands it over,
/// and judged as it ends (`onHeadLine`), then as the body begins (`onHead`) and at the end
/// (`onEnd`). The model, written from SPEC §7 and RFC 9110/9112: an invalid Content-Length
/// makes the response invalid for every status (nothing written, one transient failure that
/// neither holds nor clears the origin's hold); a 206 whose range cannot be is never appended
/// to and restarts from zero; everything else is as before — and the final file is always
/// absent, the previous copy, or the origin's current bytes.
extension ResponseRulesTableTests {
    enum LengthForm: CaseIterable {
        case absent, exact, exactTwice, exactList, leadingZeros, wrong, maxInt63
        case overflow, pow63, negative, plus, words, empty, innerSpace, twoFields, list, emptyElement

        /// RFC 9110 §8.6: one decimal number of at most 63 bits, or a list of equal ones.
        var valid: Bool { [.absent, .exact, .exactTwice, .exactList, .leadingZeros, .wrong, .maxInt63].contains(self) }

        /// The Content-Length lines for a body of `n` bytes.
        func lines(_ n: Int) -> [String] {
            let values: [String] = switch self {
            case .absent: []
            case .exact: ["\(n)"]
            case .exactTwice: ["\(n)", "\(n)"]
            case .exactList: ["\(n), \(n)"]
            case .leadingZeros: ["000\(n)"]
            case .wrong: ["\(n + 10)"]
            case .maxInt63: ["9223372036854775807"]
            case .overflow: ["99999999999999999999999999"]
            case .pow63: ["9223372036854775808"]
            case .negative: ["-\(n)"]
            case .plus: ["+\(n)"]
            case .words: ["ten"]
            case .empty: [""]
            case .innerSpace: ["1 0"]
            case .twoFields: ["\(n)", "\(n + 1)"]
            case .list: ["\(n), \(n + 1)"]
            case .emptyElement: ["\(n),"]
            }
            return values.map { "Content-Length: \($0)" }
        }
    }

    enum RangeForm: CaseIterable {
        case absent, right, unknownTotal, upperUnit, wrongStart
        case reversed, negative, pastPow63, beyondTotal, endIsTotal, signed, noSpace, garbage

        /// A range that can be (RFC 9110 §14.4), whether or not it continues the partial.
        var valid: Bool { [.right, .unknownTotal, .upperUnit, .wrongStart].contains(self) }

        /// The Content-Range for a body from byte `from` of the 1,000.
        func value(from: Int) -> String? {
            switch self {
            case .absent: nil
            case .right: "bytes \(from)-999/1000"
            case .unknownTotal: "bytes \(from)-999/*"
            case .upperUnit: "BYTES \(from)-999/1000"
            case .wrongStart: "bytes \(from == 0 ? 400 : 0)-999/1000"
            case .reversed: "bytes 999-\(from)/1000"
            case .negative: "bytes -\(from)-999/1000"
            case .pastPow63: "bytes \(from)-9223372036854775808/9223372036854775809"
            case .beyondTotal: "bytes \(from)-999/900"
            case .endIsTotal: "bytes \(from)-1000/1000"
            case .signed: "bytes +\(from)-999/1000"
            case .noSpace: "bytes=\(from)-999/1000"
            case .garbage: "bytes x-y/z"
            }
        }
    }

    static let headStatuses = [200, 206, 304, 302, 416, 503, 404]

    @Test func everyLengthRangeAndStatusIsJudgedOnItsHead() {
        var combinations = 0, placed = 0, invalid = 0
        for length in LengthForm.allCases {
            for range in RangeForm.allCases {
                for status in Self.headStatuses {
                    for resumed in [false, true] {
                        for cached in [false, true] {
                            for cut in [false, true] {
                                combinations += 1
                                let label = "Content-Length \(length), Content-Range \(range), \(status), resumed \(resumed), cached \(cached), cut \(cut)"
                                let outcome = Self.playHead(length: length, range: range, status: status, resumed: resumed, cached: cached, cut: cut)
                                if outcome.placed { placed += 1 }
                                if outcome.failure?.invalidResponse == true { invalid += 1 }
                                Self.checkHead(outcome, label: label, length: length, range: range, status: status, resumed: resumed,
                                               cached: cached, cut: cut)
                            }
                        }
                    }
                }
            }
        }
        #expect(combinations == LengthForm.allCases.count * RangeForm.allCases.count * Self.headStatuses.count * 8)
        #expect(placed > 100 && invalid > 1_000, "placed \(placed), invalid \(invalid)")
        print("response head table: \(combinations) combinations, \(placed) placed, \(invalid) invalid")
    }

    struct HeadOutcome {
        var final: [UInt8]?
        var placed = false
        var written: [UInt8]?
        /// Where the exchange was stopped or failed.
        var failure: TransferFailure?
        var stoppedAtHead = false
        var appended = false
        var redirect = false
        var notModified = false
    }

    static func playHead(length: LengthForm, range: RangeForm, status: Int, resumed: Bool, cached: Bool, cut: Bool) -> HeadOutcome {
        let from = resumed ? 400 : 0
        let onDisk = Array(current.prefix(from))
        let partialValidators = Validators(etag: "\"c1\"")
        let cachedValidators = Validators(etag: "\"o1\"")
        let previous: [UInt8]? = cached ? old : nil
        let asked = ResponseRules.Request(resumeFrom: UInt64(from), partialValidators: resumed ? partialValidators : Validators(),
                                          partialTotal: resumed ? UInt64(length_) : nil, revalidating: cached && !resumed ? cachedValidators : nil,
                                          size: nil, cap: 16 << 30, capName: "the global max_size")
        var body: [UInt8] = switch status {
        case 200: current
        case 206: Array(current[from...])
        default: Array("<html>error</html>".utf8)
        }
        var lines = ["HTTP/1.1 \(status) X", "ETag: \"c1\""] + length.lines(body.count)
        if let value = range.value(from: from) { lines.append("Content-Range: \(value)") }
        if status == 302 { lines.append("Location: https://e.com/b.bin") }
        lines.append("")
        var head = ResponseRules.Head(status: 0)
        var outcome = HeadOutcome(final: previous)
        for line in lines {
            var bytes = Array((line + "\r\n").utf8)
            let ended = bytes.withUnsafeMutableBytes { head.take(line: UnsafeRawBufferPointer($0)) }
            if let failure = ResponseRules.onHeadLine(head, ended: ended) {
                outcome.failure = failure
                outcome.stoppedAtHead = true
                // The later judges refuse such a head too (defence in depth).
                if case .refuse = ResponseRules.onHead(asked, head) {} else if head.invalid != nil { Issue.record("onHead took an invalid head") }
                return outcome
            }
        }
        if cut { body = Array(body.prefix(body.count / 2)) }
        var file = onDisk
        if (200..<300).contains(status) {
            switch ResponseRules.onHead(asked, head) {
            case .append:
                outcome.appended = true
                file = onDisk + body
            case .restart: file = body
            case .refuse(let failure):
                outcome.failure = failure
                return outcome
            case .noBody: break
            case .cachedCopy: return outcome
            }
        }
        outcome.written = file
        switch ResponseRules.onEnd(asked, head, onDisk: UInt64(file.count), cleanly: !cut, cut: "cut", now: Date()) {
        case .finalize:
            outcome.final = file
            outcome.placed = true
        case .notModified: outcome.notModified = true
        case .redirect: outcome.redirect = true
        case .failed(let failure): outcome.failure = failure
        }
        return outcome
    }

    private static let length_ = length

    static func checkHead(_ o: HeadOutcome, label: String, length: LengthForm, range: RangeForm, status: Int, resumed: Bool, cached: Bool, cut: Bool) {
        let previous: [UInt8]? = cached ? old : nil
        #expect(o.final == nil || o.final == previous || o.final == current, "\(label): placed bytes that are neither")
        if o.placed { #expect(o.final == current, "\(label): placed something other than the current version") }

        // RFC 9112 §6.3: an invalid Content-Length makes the response invalid, whatever its status.
        if !length.valid {
            #expect(o.stoppedAtHead && !o.placed && o.written == nil, "\(label): an invalid Content-Length was not refused at its head")
            #expect(o.failure?.invalidResponse == true && o.failure?.kind == .transient && o.failure?.holdsOrigin == nil
                    && o.failure?.discardPartial == false, "\(label): \(String(describing: o.failure))")
            #expect(o.failure?.message.contains("Content-Length") == true, "\(label): the error does not name Content-Length")
            return
        }
        #expect(!o.stoppedAtHead, "\(label): a valid head was refused: \(String(describing: o.failure))")

        // A 206: a range that cannot be is never appended to, and the partial restarts from zero.
        if status == 206 {
            if !range.valid {
                #expect(!o.appended && !o.placed, "\(label): appended to an impossible range")
                #expect(o.failure?.invalidResponse == true && o.failure?.discardPartial == true && o.failure?.kind == .transient,
                        "\(label): \(String(describing: o.failure))")
                return
            }
            if range == .wrongStart {
                #expect(!o.appended && o.failure?.discardPartial == true, "\(label): a range that does not continue the partial")
                return
            }
            if !cut, range != .unknownTotal { #expect(o.placed, "\(label): an honest 206 was not placed") }
        }
        if status == 200 {
            #expect(!o.appended, "\(label): a 200 was appended")
            let honest = [.absent, .exact, .exactTwice, .exactList, .leadingZeros].contains(length)
            if honest, !cut { #expect(o.placed, "\(label): an honest 200 was not placed") }
            if length == .maxInt63 { #expect(o.failure?.kind == .mismatch && o.written == nil, "\(label): a length over the cap was not refused at once") }
            if length == .wrong { #expect(!o.placed, "\(label): a body shorter than its Content-Length was placed") }
        }
        if cut { #expect(!o.placed, "\(label): a cut body was placed") }
        // A valid response's failure says nothing invalid; the status rules apply.
        if let failure = o.failure, !(status == 206 && (!range.valid)) {
            #expect(!failure.invalidResponse, "\(label): a valid response taken as invalid: \(failure.message)")
        }
        switch status {
        case 503: #expect(o.failure?.holdsOrigin == "HTTP 503", "\(label)")
        case 302: #expect(o.redirect, "\(label)")
        case 304: #expect(o.notModified == (cached && !resumed), "\(label)")
        case 404: #expect(o.failure?.kind == .permanent, "\(label)")
        default: break
        }
    }

    /// A redirect's Location: up to 8 KiB is followed; one byte more ends the chain with an
    /// invalid response (transient, no word on the origin). Other statuses ignore it.
    @Test(arguments: [301, 302, 303, 307, 308, 304, 200])
    func aLocationOver8KiBEndsTheChain(status: Int) {
        for size in [0, 1, 8191, 8192, 8193, 100_000] {
            var head = ResponseRules.Head(status: 0)
            var verdict: TransferFailure?
            for line in ["HTTP/1.1 \(status) X", "Location: " + String(repeating: "a", count: size), ""] {
                var bytes = Array((line + "\r\n").utf8)
                let ended = bytes.withUnsafeMutableBytes { head.take(line: UnsafeRawBufferPointer($0)) }
                verdict = verdict ?? ResponseRules.onHeadLine(head, ended: ended)
            }
            let refused = (300..<400).contains(status) && status != 304 && size > 8192
            #expect((verdict != nil) == refused, "\(status) with a Location of \(size) bytes: \(String(describing: verdict))")
            if refused { #expect(verdict?.invalidResponse == true && verdict?.kind == .transient && verdict?.message.contains("Location") == true) }
            #expect(head.location == (size <= 8192 ? String(repeating: "a", count: size) : nil) && head.locationLength == size)
        }
    }

    /// The head's size: 256 KiB of lines (interim 1xx heads included) is taken; the line
    /// that passes it stops the exchange at once, ended or not.
    @Test func aHeadOver256KiBIsRefusedAtTheLineThatPassesIt() {
        for interim in [false, true] {
            var head = ResponseRules.Head(status: 0)
            var lines = interim ? ["HTTP/1.1 100 Continue", ""] : []
            lines += ["HTTP/1.1 200 OK"]
            var stoppedAt: Int?
            var total = 0
            for index in 0..<400 {
                lines.append("X-Padding-\(index): " + String(repeating: "b", count: 1000))
            }
            lines.append("")
            for (index, line) in lines.enumerated() {
                var bytes = Array((line + "\r\n").utf8)
                total += bytes.count
                let ended = bytes.withUnsafeMutableBytes { head.take(line: UnsafeRawBufferPointer($0)) }
                if let failure = ResponseRules.onHeadLine(head, ended: ended) {
                    #expect(failure.invalidResponse && failure.message.contains("256 KiB"))
                    stoppedAt = index
                    break
                }
            }
            #expect(stoppedAt != nil && total > 256 << 10 && total - 1100 <= 256 << 10, "interim \(interim): stopped at \(String(describing: stoppedAt)), \(total) bytes")
        }
    }

    /// The header rules on random bytes (what the fuzz target feeds them): lines of any bytes,
    /// CR/LF or not, never trap; a Content-Length is kept only when every field is valid and
    /// agrees, as an independent reference (strings, not bytes) says; `contentRange` accepts
    /// only what the reference accepts. Seeded (`PREFETCH_HEAD_SEED` replays a run).
    @Test func randomHeadBytesAgreeWithAReference() {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_HEAD_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        print("randomHeadBytesAgreeWithAReference: PREFETCH_HEAD_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        func pick<T>(_ values: [T]) -> T { values[Int(random.next(below: UInt64(values.count)))] }
        let alphabet = Array("0123456789 ,\t-+*/bytesBYTES:xX\r\n\u{0}".utf8) + [0xFF, 0xC3, 0x80]
        func noise(_ count: Int) -> [UInt8] { (0..<count).map { _ in pick(alphabet) } }
        func number() -> String {
            pick(["0", "7", "1000", "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
                  "99999999999999999999", "-1", "+5", "", " 3", "3 ", "0x10", "007"])
        }
        for round in 0..<20_000 {
            let context = "seed \(seed) round \(round)"
            var values: [[UInt8]] = []
            for _ in 0..<(1 + Int(random.next(below: 3))) {
                let value: [UInt8] = switch random.next(below: 4) {
                case 0: noise(Int(random.next(below: 24)))
                case 1: Array(number().utf8)
                case 2: Array("\(number()),\(pick(["", " "]))\(number())".utf8)
                default: Array(pick(["3", "3, 3", "3,3", "3 ,\t3", "3,", ",3", "3, 5"]).utf8)
                }
                values.append(value)
            }
            var head = ResponseRules.Head(status: 0)
            var status = Array("HTTP/1.1 200 OK\r\n".utf8)
            _ = status.withUnsafeMutableBytes { head.take(line: UnsafeRawBufferPointer($0)) }
            for value in values {
                var line = Array("Content-Length:".utf8) + (Bool.random(using: &random) ? [0x20] : []) + value + (Bool.random(using: &random) ? [0x0D, 0x0A] : [])
                _ = line.withUnsafeMutableBytes { head.take(line: UnsafeRawBufferPointer($0)) }
            }
            let expected = Self.referenceLength(values)
            #expect(head.contentLength == expected && (head.invalid == nil) == (expected != nil), "\(context): \(values.map { String(decoding: $0, as: UTF8.self) })")
            // Any bytes as any line.
            var line = noise(Int(random.next(below: 40)))
            if Bool.random(using: &random) { line = Array(pick(["Content-Range: ", "Location: ", "HTTP/1.1 ", "content-length:"]).utf8) + line }
            _ = line.withUnsafeMutableBytes { head.take(line: UnsafeRawBufferPointer($0)) }
            _ = ResponseRules.onHeadLine(head, ended: Bool.random(using: &random))
            // Content-Range against its reference.
            let range = String(decoding: pick([noise(Int(random.next(below: 30))),
                                               Array("bytes \(number())-\(number())/\(pick([number(), "*"]))".utf8)]), as: UTF8.self)
            let parsed = ResponseRules.contentRange(range)
            let reference = Self.referenceRange(range)
            #expect(parsed?.start == reference?.start && parsed?.end == reference?.end && parsed?.total == reference?.total
                    && (parsed == nil) == (reference == nil), "\(context): Content-Range \(range.debugDescription)")
        }
    }

    /// RFC 9110 §8.6 with strings: each field (its line's CR LF gone) a list of `1*DIGIT`
    /// (OWS around), every number equal and at most 2^63 − 1 (compared as digit strings, no
    /// arithmetic).
    static func referenceLength(_ fields: [[UInt8]]) -> UInt64? {
        var seen: String?
        for field in fields {
            var field = field
            while let last = field.last, last == 0x0D || last == 0x0A { field.removeLast() }
            guard let text = String(validating: field, as: UTF8.self) else { return nil }
            for element in text.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = element.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                guard !digits.isEmpty, digits.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
                let bare = String(digits.drop { $0 == "0" }).isEmpty ? "0" : String(digits.drop { $0 == "0" })
                guard bare.count < 19 || (bare.count == 19 && bare <= "9223372036854775807") else { return nil }
                if let seen, seen != bare { return nil }
                seen = bare
            }
        }
        return seen.map { UInt64($0)! }
    }

    /// RFC 9110 §14.4 with strings: `bytes SP first-last/(total|*)`, digits only, at most
    /// 2^63 − 1, first ≤ last < total.
    static func referenceRange(_ value: String) -> (start: UInt64, end: UInt64, total: UInt64?)? {
        guard value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).drop { $0 == " " }
        let parts = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        func number(_ text: Substring) -> UInt64? {
            guard !text.isEmpty, text.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
            let bare = String(text.drop { $0 == "0" })
            guard bare.count < 19 || (bare.count == 19 && bare <= "9223372036854775807") else { return nil }
            return bare.isEmpty ? 0 : UInt64(bare)
        }
        guard bounds.count == 2, let start = number(bounds[0]), let end = number(bounds[1]), start <= end else { return nil }
        if parts[1] == "*" { return (start, end, nil) }
        guard let total = number(parts[1]), end < total else { return nil }
        return (start, end, total)
    }
}
