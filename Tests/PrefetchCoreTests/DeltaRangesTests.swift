import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §9 step 3's ranged answers as `RangedAnswer` reads them: single parts and
/// `multipart/byteranges` bodies built here by hand (parts in any order, coalesced across
/// gaps, overlapping), fed in seeded random chunkings (the seed in every message;
/// `PREFETCH_TEST_SEED=N` replays one), and the answers that end the delta.
@Suite struct DeltaRangesTests {
    static let file: [UInt8] = {
        var random = SplitMix64(seed: 7)
        return (0..<12_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }()
    static let length = UInt64(12_000)
    static let tag = "\"v1\""
    static let boundary = "THIS_STRING_SEPARATES"
    static let multipartType = "multipart/byteranges; boundary=THIS_STRING_SEPARATES"

    static func head(_ status: Int = 206, etag: String? = DeltaRangesTests.tag, contentRange: String? = nil,
                     contentType: String? = nil) -> ResponseRules.Head {
        var head = ResponseRules.Head(status: status)
        head.etag = etag
        head.contentRange = contentRange
        head.contentType = contentType
        return head
    }

    /// A `multipart/byteranges` body (RFC 9110 §14.6) of `parts` of the file, in that order.
    static func multipart(_ parts: [ClosedRange<Int>], complete: Int = 12_000, closed: Bool = true) -> [UInt8] {
        var body: [UInt8] = []
        for part in parts {
            body += Array("--\(boundary)\r\nContent-Type: application/octet-stream\r\n".utf8)
            body += Array("Content-Range: bytes \(part.lowerBound)-\(part.upperBound)/\(complete)\r\n\r\n".utf8)
            body += file[part]
            body += Array("\r\n".utf8)
        }
        if closed { body += Array("--\(boundary)--\r\n".utf8) }
        return body
    }

    /// 1 to 6 ranges asked for, sorted and apart (as `DeltaBlocks.nextRequest` asks them).
    static func asked(_ random: inout SplitMix64) -> [Range<UInt64>] {
        let count = Int.random(in: 1...6, using: &random)
        var cuts = Set<UInt64>()
        while cuts.count < 2 * count { cuts.insert(UInt64.random(in: 0...length, using: &random)) }
        let sorted = cuts.sorted()
        return stride(from: 0, to: sorted.count, by: 2).map { sorted[$0]..<sorted[$0 + 1] }
    }

    /// A part that starts and ends inside the ranges asked for: inside one, or coalesced across the gaps between some.
    static func part(in asked: [Range<UInt64>], _ random: inout SplitMix64) -> ClosedRange<Int> {
        let from = Int.random(in: 0..<asked.count, using: &random)
        let to = Int.random(in: from..<asked.count, using: &random)
        var first = UInt64.random(in: asked[from], using: &random)
        var last = UInt64.random(in: asked[to], using: &random)
        if first > last { swap(&first, &last) }
        return Int(first)...Int(last)
    }

    /// Feeds `body` in chunks of random sizes. Whether every piece was taken, which of the
    /// file's bytes `keep` was told, and how many it was told wrong (not the file's at its offset).
    static func feed(_ answer: inout RangedAnswer, _ body: [UInt8], _ random: inout SplitMix64) -> (wentOn: Bool, kept: [Bool], wrong: Int) {
        var kept = [Bool](repeating: false, count: file.count)
        var wrong = 0
        var start = 0
        while start < body.count {
            let end = min(body.count, start + [1, 2, 5, 64, 1_000, 8_192, body.count][Int.random(in: 0..<7, using: &random)])
            let wentOn = body[start..<end].withUnsafeBytes { bytes in
                answer.take(body: bytes, keep: { offset, data in
                    for (i, byte) in data.enumerated() {
                        let at = Int(offset) + i
                        if at < file.count, file[at] == byte { kept[at] = true } else { wrong += 1 }
                    }
                    return true
                })
            }
            if !wentOn { return (false, kept, wrong) }
            start = end
        }
        return (true, kept, wrong)
    }

    @Test func aSinglePartInAnyChunking() {
        var random = SplitMix64(seed: DeltaMachineTests.seed)
        for index in 0..<100 {
            let asked = Self.asked(&random)
            let part = Self.part(in: asked, &random)
            let earlier = Bool.random(using: &random) ? Self.tag : nil
            let label = "seed \(DeltaMachineTests.seed) (PREFETCH_TEST_SEED), case \(index): asked \(asked), part \(part)"
            var answer = RangedAnswer(asked: asked, length: Self.length, validator: earlier)
            let reads = answer.take(head: Self.head(contentRange: "bytes \(part.lowerBound)-\(part.upperBound)/\(Self.length)"))
            #expect(reads, "\(label)")
            let (wentOn, kept, wrong) = Self.feed(&answer, Array(Self.file[part]), &random)
            #expect(wentOn && wrong == 0, "\(label)")
            #expect(kept == Self.file.indices.map { part.contains($0) }, "\(label)")
            #expect(answer.received.intervals == [UInt64(part.lowerBound)..<UInt64(part.upperBound + 1)], "\(label)")
            let verdict = answer.finish()
            #expect(verdict == .reading && answer.validator == Self.tag, "\(label): \(verdict)")
        }
    }

    @Test func multipartInAnyOrderCoalescedOrOverlappingInAnyChunking() {
        var random = SplitMix64(seed: DeltaMachineTests.seed)
        for index in 0..<100 {
            let asked = Self.asked(&random)
            var parts = (0..<Int.random(in: 1...5, using: &random)).map { _ in Self.part(in: asked, &random) }
            if Bool.random(using: &random) { parts.append(parts[0]) }  // one part twice
            parts.sort { $0.lowerBound > $1.lowerBound }  // the last first
            var union = [Bool](repeating: false, count: Self.file.count)
            for part in parts { for byte in part { union[byte] = true } }
            let label = "seed \(DeltaMachineTests.seed) (PREFETCH_TEST_SEED), case \(index): asked \(asked), parts \(parts)"
            var answer = RangedAnswer(asked: asked, length: Self.length, validator: nil)
            let reads = answer.take(head: Self.head(contentType: Self.multipartType))
            #expect(reads, "\(label)")
            let (wentOn, kept, wrong) = Self.feed(&answer, Self.multipart(parts), &random)
            #expect(wentOn && wrong == 0, "\(label)")
            #expect(kept == union, "\(label)")
            #expect(answer.received.intervals == DeltaMachineTests.runs(union), "\(label)")
            let verdict = answer.finish()
            #expect(verdict == .reading && answer.validator == Self.tag, "\(label): \(verdict)")
        }
    }

    /// What an answer amounts to once its head and its body (in pieces of 7 bytes) were taken:
    /// "reading", "whole", "invalid", "stale" or "status N".
    static func verdict(_ head: ResponseRules.Head, _ body: [UInt8], earlier: String? = nil) -> String {
        var answer = RangedAnswer(asked: [100..<200, 1_000..<1_100], length: length, validator: earlier)
        if answer.take(head: head) {
            var start = 0
            while start < body.count {
                let end = min(body.count, start + 7)
                let wentOn = body[start..<end].withUnsafeBytes { bytes in answer.take(body: bytes, keep: { _, _ in true }) }
                if !wentOn { break }
                start = end
            }
        }
        switch answer.finish() {
        case .reading: return "reading"
        case .whole: return "whole"
        case .invalid: return "invalid"
        case .stale: return "stale"
        case .status(let status): return "status \(status)"
        }
    }

    /// Asked: 100..<200 and 1000..<1100 of a file of 12 000 bytes.
    @Test func answersThatEndTheDelta() {
        let part = Array(Self.file[100...199]), range = "bytes 100-199/12000"
        #expect(Self.verdict(Self.head(contentRange: range), part) == "reading")
        #expect(Self.verdict(Self.head(contentRange: "bytes 150-1050/12000"), Array(Self.file[150...1_050])) == "reading", "coalesced")
        // Parts outside the ranges asked for.
        #expect(Self.verdict(Self.head(contentRange: "bytes 150-250/12000"), Array(Self.file[150...250])) == "invalid")
        #expect(Self.verdict(Self.head(contentRange: "bytes 300-1050/12000"), Array(Self.file[300...1_050])) == "invalid")
        #expect(Self.verdict(Self.head(contentType: Self.multipartType), Self.multipart([100...199, 1_050...1_200])) == "invalid")
        // Another version: its complete length, or its validator.
        #expect(Self.verdict(Self.head(contentRange: "bytes 100-199/12001"), part) == "stale")
        #expect(Self.verdict(Self.head(contentRange: "bytes 100-199/*"), part) == "stale")
        #expect(Self.verdict(Self.head(contentType: Self.multipartType), Self.multipart([100...199], complete: 11_999)) == "stale")
        #expect(Self.verdict(Self.head(contentRange: range), part, earlier: Self.tag) == "reading")
        #expect(Self.verdict(Self.head(etag: "\"v2\"", contentRange: range), part, earlier: Self.tag) == "stale")
        #expect(Self.verdict(Self.head(etag: nil, contentRange: range), part, earlier: Self.tag) == "stale")
        // Another status.
        #expect(Self.verdict(Self.head(200), Self.file) == "whole")
        #expect(Self.verdict(Self.head(200, etag: "\"v2\""), Self.file, earlier: Self.tag) == "whole")
        #expect(Self.verdict(Self.head(404), []) == "status 404")
        #expect(Self.verdict(Self.head(416, contentRange: "bytes */12000"), []) == "status 416")
        // Framing.
        #expect(Self.verdict(Self.head(contentRange: range), Array(part.prefix(51))) == "invalid", "cut short")
        #expect(Self.verdict(Self.head(contentRange: range), part + [0]) == "invalid", "a byte too many")
        #expect(Self.verdict(Self.head(), part) == "invalid", "no Content-Range")
        #expect(Self.verdict(Self.head(contentType: Self.multipartType), Self.multipart([100...199], closed: false)) == "invalid")
        #expect(Self.verdict(Self.head(contentType: Self.multipartType), Array(Self.multipart([100...199]).prefix(120))) == "invalid")
        let longer = Array("--\(Self.boundary)\r\nContent-Range: bytes 100-149/12000\r\n\r\n".utf8) + part + Array("\r\n--\(Self.boundary)--\r\n".utf8)
        #expect(Self.verdict(Self.head(contentType: Self.multipartType), longer) == "invalid", "a part longer than its Content-Range")
        #expect(Self.verdict(Self.head(contentType: "multipart/byteranges"), Self.multipart([100...199])) == "invalid", "no boundary")
        #expect(Self.verdict(Self.head(contentType: "multipart/mixed; boundary=\(Self.boundary)"), Self.multipart([100...199])) == "invalid")
        var gzip = Self.head(contentRange: range)
        gzip.contentEncoding = "gzip"
        #expect(Self.verdict(gzip, part) == "invalid", "Content-Encoding: gzip")
        var identity = gzip
        identity.contentEncoding = "identity"
        #expect(Self.verdict(identity, part) == "reading", "Content-Encoding: identity")
        var conflicting = Self.head(contentRange: range)
        conflicting.invalid = "two Content-Length fields that differ"
        #expect(Self.verdict(conflicting, part) == "invalid")
    }

    /// A 200 or another status is not read: the verdict says why, and nothing was received.
    @Test func aWholeAnswerOrAnotherStatusIsNotRead() {
        let cases: [(status: Int, expected: RangedAnswer.Verdict)] = [(200, .whole), (404, .status(404)), (503, .status(503))]
        for (status, expected) in cases {
            var answer = RangedAnswer(asked: [100..<200], length: Self.length, validator: Self.tag)
            let reads = answer.take(head: Self.head(status))
            let verdict = answer.finish()
            #expect(!reads && verdict == expected && answer.received.intervals.isEmpty, "HTTP \(status)")
        }
    }

    /// Without a strong ETag, the Last-Modified is the validator the 206s must all carry.
    /// NOTE: this is `RangedAnswer.validator(of:)` as written. SPEC §7's If-Range rule (as
    /// `ResumeRule.strongValidator` reads it) rules the date out after a weak ETag, and takes a
    /// Last-Modified only 60 s before the `Date`: if the code follows §7, the weak case changes.
    /// SPEC §9 step 3 with §7's If-Range rule: a strong ETag; with no ETag at all, a
    /// Last-Modified at least 60 s before the `Date`; a weak ETag rules the date out; a 206
    /// with no strong validator ties its bytes to no version and is stale.
    @Test func theValidatorFollowsTheIfRangeRule() {
        let modified = "Tue, 01 Dec 2026 10:00:00 GMT"
        var weak = Self.head(etag: "W/\"v1\"", contentRange: "bytes 100-199/12000")
        weak.lastModified = modified
        weak.date = "Tue, 01 Dec 2026 11:00:00 GMT"
        var none = weak
        none.etag = nil
        var young = none
        young.date = "Tue, 01 Dec 2026 10:00:30 GMT"
        var strong = weak
        strong.etag = Self.tag
        var neither = none
        neither.lastModified = nil
        #expect(RangedAnswer.validator(of: weak) == nil, "a weak ETag rules the date out (FAULTS 7)")
        #expect(RangedAnswer.validator(of: none) == modified && RangedAnswer.validator(of: young) == nil)
        #expect(RangedAnswer.validator(of: strong) == Self.tag && RangedAnswer.validator(of: neither) == nil)
        let bytes = Array(Self.file[100...199])
        #expect(Self.verdict(none, bytes, earlier: nil) == "reading")
        #expect(Self.verdict(weak, bytes, earlier: nil) == "stale" && Self.verdict(neither, bytes, earlier: nil) == "stale")
        var moved = none
        moved.lastModified = "Wed, 02 Dec 2026 10:00:00 GMT"
        moved.date = "Wed, 02 Dec 2026 11:00:00 GMT"
        #expect(Self.verdict(moved, bytes, earlier: modified) == "stale")
        #expect(Self.verdict(strong, bytes, earlier: modified) == "stale")
    }
}
