import Testing
@testable import PrefetchCore

/// SPEC §7's one resumable rule and the If-Range it sends (RFC 9110 §13.1.5, FAULTS 7, 8),
/// over every combination of what the response that began a partial can have said and
/// what the entry and the transfer are. Each expectation is written here from the rule's
/// sentences, not from the code.
@Suite struct ResumeRuleTests {
    enum ETagCase: CaseIterable { case strong, weak, malformed, none }
    enum DateCase: CaseIterable {
        /// No `Date` at all; the same second as Last-Modified (Apache, a file published this
        /// second); 59 s and 60 s after it; a day after; and a `Date` before it (a skewed clock).
        case absent, equal, after59, after60, later, before
    }
    enum CodingCase: CaseIterable { case identity, gzip }

    static let modified = "Tue, 01 Dec 2026 10:00:00 GMT"
    static func date(_ c: DateCase) -> String? {
        switch c {
        case .absent: nil
        case .equal: modified
        case .after59: "Tue, 01 Dec 2026 10:00:59 GMT"
        case .after60: "Tue, 01 Dec 2026 10:01:00 GMT"
        case .later: "Wed, 02 Dec 2026 10:00:00 GMT"
        case .before: "Tue, 01 Dec 2026 09:59:00 GMT"
        }
    }
    static func etag(_ c: ETagCase) -> String? {
        switch c {
        case .strong: "\"v1\""
        case .weak: "W/\"v1\""
        case .malformed: "v1"
        case .none: nil
        }
    }

    @Test func everyCombination() {
        var checked = 0, resumable = 0
        for etag in ETagCase.allCases {
            for lastModified in [true, false] {
                for date in DateCase.allCases {
                    for rangesNone in [false, true] {
                        for sha256 in [false, true] {
                            for mode in EncodingMode.allCases {
                                for coding in CodingCase.allCases {
                                    for anotherURL in [false, true] {
                                        let facts = ResponseFacts(etag: Self.etag(etag), lastModified: lastModified ? Self.modified : nil,
                                                                  date: Self.date(date), acceptRangesNone: rangesNone,
                                                                  contentEncoding: coding == .gzip ? "gzip" : nil)
                                        let verdict = ResumeRule.judge(facts, sha256Given: sha256, encoding: mode, atAnotherURL: anotherURL)
                                        let label = "etag \(etag), last-modified \(lastModified), date \(date), accept-ranges none \(rangesNone), sha256 \(sha256), \(mode), \(coding), another URL \(anotherURL)"
                                        // "the date is strong for a client: at least 60 s before the Date"
                                        let strongDate = lastModified && [.after60, .later].contains(date)
                                        // "If-Range carries only those strong validators": a strong ETag,
                                        // or with no ETag at all a strong date (a weak ETag rules the date out).
                                        let validator: String? = etag == .strong ? Self.etag(.strong)
                                            : (etag == .none && strongDate ? Self.modified : nil)
                                        // keep: "the resume must also carry … a usable validator" (sha256 alone is none)
                                        let digestChecks = sha256 && mode != .keep
                                        let expected: ResumeRule.Verdict
                                        if mode == .decode { expected = .restart(.decode) }
                                        else if rangesNone { expected = .restart(.acceptRangesNone) }
                                        else if mode == .refuse && coding == .gzip { expected = .restart(.encoded("gzip")) }
                                        else if anotherURL { expected = digestChecks ? .resume(ifRange: nil) : .restart(.anotherURL) }
                                        else if let validator { expected = .resume(ifRange: validator) }
                                        else if digestChecks { expected = .resume(ifRange: nil) }  // FAULTS 8: Range without If-Range
                                        else if mode == .keep { expected = .restart(.keepWithoutValidator) }
                                        else if etag != .none { expected = .restart(.weakETag) }
                                        else if lastModified { expected = .restart(.weakDate) }
                                        else { expected = .restart(.noValidator) }
                                        #expect(verdict == expected, "\(label)")
                                        // Never a weak ETag, never a weak date, never a date beside an ETag.
                                        if let ifRange = verdict.ifRange {
                                            #expect(!ifRange.hasPrefix("W/") && ifRange != "v1", "\(label): \(ifRange)")
                                            if ifRange == Self.modified { #expect(etag == .none && strongDate, "\(label): a weak date in If-Range") }
                                        }
                                        #expect(verdict.isResumable == (verdict.obstacle == nil))
                                        if verdict.isResumable { resumable += 1 }
                                        checked += 1
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(checked == 4 * 2 * 6 * 2 * 2 * 3 * 2 * 2)
        #expect(resumable > 0 && resumable < checked)
    }

    /// FAULTS 7 and 8 as the issue found them on Apache: a file published this second has a
    /// weak ETag and a Last-Modified equal to the Date; neither goes into If-Range.
    @Test func apachesFreshFileSendsNoIfRange() {
        let fresh = ResponseFacts(etag: "W/\"5000-60a1\"", lastModified: Self.modified, date: Self.modified)
        #expect(ResumeRule.judge(fresh, sha256Given: false, encoding: .refuse) == .restart(.weakETag))
        #expect(ResumeRule.judge(fresh, sha256Given: true, encoding: .refuse) == .resume(ifRange: nil))
        let dateOnly = ResponseFacts(lastModified: Self.modified, date: Self.modified)
        #expect(ResumeRule.judge(dateOnly, sha256Given: false, encoding: .refuse) == .restart(.weakDate))
        let minuteOld = ResponseFacts(lastModified: Self.modified, date: Self.date(.after60))
        #expect(ResumeRule.judge(minuteOld, sha256Given: false, encoding: .refuse) == .resume(ifRange: Self.modified))
    }

    @Test(arguments: [
        ("bytes", false), ("none", true), ("None", true), (" none ", true), ("bytes, none", true), ("", false), ("nonesuch", false),
    ]) func acceptRangesNone(value: String, none: Bool) {
        #expect(ResumeRule.saysNone(value) == none)
    }

    @Test func encodingsCompareAsTokens() {
        #expect(ResumeRule.continuesEncoding(partial: "gzip", response: " GZIP"))
        #expect(ResumeRule.continuesEncoding(partial: nil, response: "identity"))
        #expect(!ResumeRule.continuesEncoding(partial: "gzip", response: nil))
        #expect(!ResumeRule.continuesEncoding(partial: "gzip", response: "br"))
    }

    /// RFC 9110 §5.6.7: the three forms a recipient must accept, and nothing else.
    @Test(arguments: [
        ("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777),
        ("Sunday, 06-Nov-94 08:49:37 GMT", 784_111_777),
        ("Sun Nov  6 08:49:37 1994", 784_111_777),
        ("Tue, 01 Dec 2026 10:01:00 GMT", 1_796_119_260),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
        ("Tuesday, 01-Jan-69 00:00:00 GMT", 3_124_224_000),
    ] as [(String, Int64)]) func httpDates(text: String, seconds: Int64) {
        #expect(HTTPDate.parse(text) == seconds, "\(text)")
    }

    @Test(arguments: [
        "", "yesterday", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 31 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 06 Nov 94 08:49:37 GMT", "1994-11-06T08:49:37Z", "Sun Nov  6 08:49:37 94", "Sun, 06 Nov 1994 08:49:37 GMT extra",
    ]) func notHTTPDates(text: String) {
        #expect(HTTPDate.parse(text) == nil, "\(text)")
    }
}
