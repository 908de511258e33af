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

    /// The resume a partial of `trusted` bytes with these validators gets (`ResumeRule`),
    /// its `Date` a day after its Last-Modified (a strong date: §7's rule is `ResumeRuleTests`' subject).
    static func resume(trusted: UInt64, validators: Validators, sha256Given: Bool) -> (from: UInt64, ifRange: String?) {
        guard trusted > 0 else { return (0, nil) }
        let facts = ResponseFacts(etag: validators.etag, lastModified: validators.lastModified, date: "Wed, 02 Dec 2026 10:00:00 GMT")
        switch ResumeRule.judge(facts, sha256Given: sha256Given, encoding: .refuse) {
        case .resume(let ifRange): return (trusted, ifRange)
        case .restart: return (0, nil)
        }
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
        let plan = resume(trusted: UInt64(onDisk.count), validators: recorded, sha256Given: shaGiven)
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

        // FAULTS 7, 8: If-Range only with a strong ETag, else (no ETag at all) a strong
        // Last-Modified; a resume without a usable validator only with a sha256; never a weak ETag.
        let resumed = o.asked.resumeFrom > 0
        let strong = etag == .strong, dated = lastModified == .present
        if partial == .none { #expect(!resumed, "\(label): resumed nothing") }
        if partial != .none { #expect(resumed == (strong || (dated && etag == .none) || shaGiven), "\(label): FAULTS 7/8 resume rule") }
        let plan = Self.resume(trusted: 400, validators: validators(version, etag, lastModified), sha256Given: shaGiven)
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
