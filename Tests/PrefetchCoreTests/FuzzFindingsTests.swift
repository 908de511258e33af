import Foundation
import Testing
@testable import PrefetchCore

/// What the fuzz targets found (scripts/fuzz; docs/RELIABILITY.md, "Fuzzing"), each input
/// as the fuzzer reduced it, with the right answer. A new finding is a new row.
@Suite struct FuzzFindingsTests {
    // MARK: Diagnostics name a place inside the input, and quote the line they name

    enum Loader: Sendable { case manifest, config }

    struct Place: CustomTestStringConvertible, Sendable {
        let loader: Loader
        let bytes: [UInt8]
        /// The first diagnostic as `validate` prints it: headline, quoted line, caret.
        let rendered: String
        let finding: String
        var testDescription: String { finding }
    }

    static let places: [Place] = [
        Place(loader: .config, bytes: Array("[".utf8),
              rendered: "c.yaml:1:2: error: did not find expected node content (while parsing a flow node)\n[\n ^\n",
              finding: "fuzz-config: a file ending without a line break had its error on the line after the last (2:1)"),
        Place(loader: .config, bytes: Array("verify_ev1e30: \u{85}1s?".utf8),
              rendered: "c.yaml:2:4: error: could not find expected ':' (while scanning a simple key)\n1s?\n   ^\n",
              finding: "fuzz-config: after a NEL line break, the end of the file was put on a third line of two"),
        Place(loader: .manifest, bytes: Array("tI\r\r".utf8),
              rendered: "t.yaml:1:1: error: a feed must be a mapping of keys to values, found a string\ntI\n^\n",
              finding: "fuzz-manifest: a lone CR was quoted as part of the line (the terminal returns to column 1)"),
        Place(loader: .manifest, bytes: Array("name: a\rresources: 5\r".utf8),
              rendered: "t.yaml:2:12: error: resources must be a list, found a number\nresources: 5\n           ^\n",
              finding: "a file with CR line ends: libyaml's line 2 was not found to quote"),
        Place(loader: .manifest, bytes: Array("resources:\n  - url: https://e.com/a\u{2028}    path: 5/\n".utf8),
              rendered: "t.yaml:3:13: error: a path cannot end with '/'\n    path: 5/\n            ^\n",
              finding: "a line separator (U+2028) breaks the line for libyaml, so for the quote too"),
        Place(loader: .manifest, bytes: Array("conditions: { metered_budget: 300\n\rKiB/day }\nresources: []\n".utf8),
              rendered: "t.yaml:1:31: error: unknown size unit '\\nKiB'; use B, KiB, MiB, GiB, TiB, PiB or kB, MB, GB, TB, PB\n"
                  + "conditions: { metered_budget: 300\n" + String(repeating: " ", count: 30) + "^\n",
              finding: "fuzz-manifest: a plain scalar folds a blank line into '\\n', and the message quoting it was two lines"),
        Place(loader: .manifest, bytes: Array("timezone: \"Europe/\\e[2JBerlin\"\nresources: []\n".utf8),
              rendered: "t.yaml:1:11: error: unknown time zone 'Europe/\\u{1B}[2JBerlin'; use an IANA name such as Europe/Berlin\n"
                  + "timezone: \"Europe/\\e[2JBerlin\"\n          ^\n",
              finding: "an escape sequence (\\e in a quoted value) was printed to the terminal inside the message"),
    ]

    /// A control character of a quoted line is shown as U+FFFD, one for one, so the caret
    /// stays under its column (libyaml refuses such a file; its error quotes the line).
    @Test func quotedLinesShowNoControlCharacters() {
        let source = SourceText(bytes: Array("resources: 5 # \u{1B}[31m\n".utf8))
        let diagnostic = Diagnostic(.error, file: "t.yaml", at: SourceLocation(line: 1, column: 16), "control characters are not allowed")
        #expect(DiagnosticRenderer(sources: ["t.yaml": source]).render(diagnostic)
                == "t.yaml:1:16: error: control characters are not allowed\nresources: 5 # \u{FFFD}[31m\n" + String(repeating: " ", count: 15) + "^\n")
    }

    @Test(arguments: places)
    func diagnosticsQuoteTheLineTheyName(_ c: Place) throws {
        let file = c.loader == .manifest ? "t.yaml" : "c.yaml"
        let diagnostics = c.loader == .manifest
            ? FeedDecoder(config: Config()).decode(c.bytes, file: file).diagnostics
            : ConfigLoader.decode(c.bytes, file: file).1
        let first = try #require(diagnostics.first)
        #expect(DiagnosticRenderer(sources: [file: SourceText(bytes: c.bytes)]).render(first) == c.rendered)
    }

    // MARK: Response heads

    struct HeadCase: CustomTestStringConvertible, Sendable {
        let lines: [String]
        let expected: ResponseRules.Head
        let finding: String
        var testDescription: String { finding }
    }

    static let heads: [HeadCase] = [
        HeadCase(lines: ["HTTP/1.1 200 OK\r\n", "Content\rLength: 5\r\n"], expected: ResponseRules.Head(status: 200),
                 finding: "fuzz-response: a CR inside a header name was folded to '-' (Content\\rLength read as Content-Length)"),
        HeadCase(lines: ["HTTP/1.1 200 OK\r\n", "content\rencoding:\r\n"], expected: ResponseRules.Head(status: 200),
                 finding: "fuzz-response: content\\rencoding read as Content-Encoding"),
        HeadCase(lines: ["HTTP/1.1 206 Partial Content\r\n", "Content\rRange: bytes 0-4/5\r\n"], expected: ResponseRules.Head(status: 206),
                 finding: "content\\rrange read as Content-Range"),
        HeadCase(lines: ["HTTP/1.1 200 OK\r\n", "CONTENT-LENGTH: 5\r\n", "etag:\t\"x\" \r\n", "X-Other: 1\r\n"],
                 expected: ResponseRules.Head(status: 200, etag: "\"x\"", contentLength: 5),
                 finding: "names in any case, blanks around the value dropped (the rule the fix keeps)"),
    ]

    @Test(arguments: heads)
    func headerNamesMatchExactly(_ c: HeadCase) {
        var head = ResponseRules.Head(status: 0)
        for line in c.lines {
            _ = Array(line.utf8).withUnsafeBytes { head.take(line: $0) }
        }
        var expected = c.expected
        expected.size = c.lines.reduce(0) { $0 + $1.utf8.count }  // every byte of the head counts (its 256 KiB limit)
        #expect(head == expected)
    }

    // MARK: Value errors point at a character of the value

    @Test(arguments: [
        ("a" + String(repeating: "\u{e9}", count: 40), 32, "fuzz-values: the 64-byte limit's offset was a byte count (64) past the 41 characters"),
        ("ae\u{301}b", 1, "a combining mark's byte offset (2) named the character after it"),
        ("caf\u{e9}", 3, "ASCII before the bad character: bytes and characters agree"),
    ])
    func feedNameOffsetsCountCharacters(_ name: String, _ offset: Int, _ finding: String) throws {
        let problem = try #require(FeedName.problem(name))
        #expect(problem.offset == offset, "\(finding)")
        #expect(problem.offset <= name.count)
    }

    // MARK: Paths stay inside the feed's folder

    @Test(arguments: [
        ("../\u{301}x", 0, "'..'", "fuzz-values (its cousin a\u{6dd}/): split by Character, '/' + a combining mark is no '/', so '..' went through: CACHE/<feed>/../\u{301}x is outside the feed"),
        ("a/\u{6dd}/../b", 3, "'..'", "a prepended mark (U+06DD) took the next '/' into its character and hid the '..' after it"),
        ("a\u{6dd}/", 2, "cannot end with '/'", "fuzz-values: a trailing '/' after a prepended mark"),
        ("/\u{301}etc", 0, "not absolute", "a leading '/' with a combining mark on it"),
        (".prefetch\u{301}x", 0, "'.prefetch'", "prefetch's own names, with a combining mark on the 'h'"),
    ])
    func pathsAreCheckedOnBytes(_ path: String, _ offset: Int, _ phrase: String, _ finding: String) throws {
        let problem = try #require(RelativePath.problem(path), "\(finding)")
        #expect(problem.message.contains(phrase), "\(finding): \(problem.message)")
        #expect(problem.offset == offset, "\(finding)")
    }

    // MARK: A URL's last segment is what follows its last '/' byte

    @Test func theLastSegmentFollowsTheLastSlashByte() throws {
        // fuzz-values: "/\u{301}" is no Character "/", so the segment began at an earlier '/'.
        #expect(try ResourceURL.parse("https://e.com/a/\u{301}").lastSegment() == "\u{301}")
        #expect(try ResourceURL.parse("https://e.com/a/b\u{301}").lastSegment() == "b\u{301}")
        #expect(try ResourceURL.parse("https://e.com/a/\u{301}/").lastSegment() == nil)
        // Its decoded '/' is found as a byte too: the default path would be a folder and a file.
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array("resources:\n  - url: https://e.com/a%2F\u{301}\n".utf8), file: "t.yaml")
        #expect(feed == nil)
        #expect(diagnostics.map(\.headline) == ["t.yaml:2:10: error: the URL's last segment 'a/\u{301}' holds an encoded '/'; add a 'path'"])
    }

    // MARK: A query is never shown

    @Test func theQueryIsElidedAfterAnyQuestionMark() throws {
        // fuzz-values: "?\u{317}" is no Character "?", so the whole URL, token and all, was shown.
        #expect(try ResourceURL.parse("https://e.com/a?\u{317}token=SECRET").redacted == "https://e.com/a?…")
        #expect(try ResourceURL.parse("https://e.com/a\u{317}?token=SECRET").redacted == "https://e.com/a\u{317}?…")
        #expect(try ResourceURL.parse("https://e.com/a#?x").redacted == "https://e.com/a#?x")  // a fragment, no query
    }

    // MARK: Every schedule accepted fires, however far away its next day is

    @Test(arguments: [
        ("0 0 */31 2 3", 1_675_209_600, 2_022_364_800,
         "fuzz-cron: February 1st that is a Wednesday (a day field begins with '*': both must match), 2023 then 2034, past the 9-year search"),
        ("0 0 29 2 */7", 3_728_851_200, 4_991_068_800, "February 29th that is a Sunday: 2088, then 2128 (2100 has no leap day)"),
    ] as [(String, Int64, Int64, String)])
    func rareSchedulesFindTheirNextRelease(_ expression: String, _ release: Int64, _ following: Int64, _ finding: String) throws {
        let schedule = CronSchedule(try CronExpression.parse(expression), clock: ZoneClock(TimeZone(identifier: "UTC")!))
        #expect(schedule.next(after: release) == following, "\(finding)")
        #expect(schedule.previous(atOrBefore: following - 1) == release, "\(finding)")
        #expect(schedule.next(after: release - 1) == release, "\(finding)")
    }

    // MARK: HTTP numbers are digits (RFC 9110: 1*DIGIT)

    @Test func httpNumbersHaveNoSign() {
        let now = Date(timeIntervalSince1970: 1_780_000_000)
        // fuzz-response: Retry-After "+20" was read as 20 seconds.
        #expect(ResponseRules.retryAfter("+20", now: now) == nil)
        #expect(ResponseRules.retryAfter(" 20 ", now: now) == 20)
        #expect(ResponseRules.retryAfter("18446744073709551615", now: now) == Int64.max)
        // fuzz-response: DateFormatter stopped the process (a fatal error in Foundation) on
        // "Fr" + a combining acute; the three date forms are read by hand now.
        #expect(ResponseRules.retryAfter("Fr\u{301}", now: now) == nil)
        #expect(ResponseRules.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == 0)
        #expect(ResponseRules.retryAfter("Thu, 28 May 2026 20:26:50 GMT", now: now) == 10)
        #expect(ResponseRules.retryAfter("Thursday, 28-May-26 20:26:50 GMT", now: now) == 10)
        #expect(ResponseRules.retryAfter("Thu May 28 20:26:50 2026", now: now) == 10)
        // fuzz-response (CI, stop 25): "2Sun Nov  6 08:49:37 1994" was read as asctime, its day
        // name unchecked, so a value starting with a digit became a date. A day name is one of
        // the seven (any case), in the form's length, or the value is no date.
        #expect(ResponseRules.retryAfter("2Sun Nov  6 08:49:37 1994", now: now) == nil)
        #expect(ResponseRules.retryAfter("Xyz, 28 May 2026 20:26:50 GMT", now: now) == nil)
        #expect(ResponseRules.retryAfter("Thursdayy, 28-May-26 20:26:50 GMT", now: now) == nil)
        #expect(ResponseRules.retryAfter("Thursday May 28 20:26:50 2026", now: now) == nil)
        #expect(ResponseRules.retryAfter("thu, 28 May 2026 20:26:50 GMT", now: now) == 10)
        for name in ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] {  // the name need not match the date
            #expect(ResponseRules.retryAfter("\(name) May 28 20:26:50 2026", now: now) == 10)
        }
        // fuzz-response (CI, stop 41): a leap second, "23:59:60" (RFC 9110 allows second 60),
        // was read as the next day's 00:00:00; it is the last second of its day, as in a manifest
        // Timestamp (the date named, never the day after it).
        #expect(ResponseRules.retryAfter("Thu, 28 May 2026 20:26:60 GMT", now: now) == 19)
        #expect(HTTPDate.parse("Fri, 31 Dec 2027 23:59:60 GMT") == HTTPDate.parse("Fri, 31 Dec 2027 23:59:59 GMT"))
        #expect(HTTPDate.parse("Friday, 31-Dec-27 23:59:60 GMT") == HTTPDate.parse("Fri, 31 Dec 2027 23:59:59 GMT"))
        #expect(HTTPDate.parse("Fri Dec 31 23:59:60 2027") == HTTPDate.parse("Fri, 31 Dec 2027 23:59:59 GMT"))
        #expect(HTTPDate.parse("Fri, 31 Dec 2027 23:59:61 GMT") == nil)
        // The same rule for Content-Range and Content-Length, which fuzz-response checks against.
        #expect(ResponseRules.contentRange("bytes +0-4/5") == nil)
        #expect(ResponseRules.contentRange("bytes 0-+4/5") == nil)
        #expect(ResponseRules.contentRange("bytes 0-4/+5") == nil)
        #expect(ResponseRules.contentRange("bytes 0-4/5").map { [$0.start, $0.end, $0.total] } == [0, 4, 5])
        var head = ResponseRules.Head(status: 200)
        _ = Array("Content-Length: +5\r\n".utf8).withUnsafeBytes { head.take(line: $0) }
        #expect(head.contentLength == nil && head.invalid != nil)  // RFC 9112 §6.3: the response is invalid
        head = ResponseRules.Head(status: 200)
        _ = Array("Content-Length: 5\r\n".utf8).withUnsafeBytes { head.take(line: $0) }
        #expect(head.contentLength == 5 && head.invalid == nil)
    }

    // MARK: Validators are octets, not Unicode text

    @Test func entityTagsCompareByteForByte() {
        // fuzz-response (CI, stop 23): an ETag beginning with U+059E, a combining mark, and its
        // weak form differed: "W/" + tag joins "/" and the mark into one Character, so
        // dropping two Characters dropped the mark too.
        let tag = "\u{059E}x bytes 1-922337203685"
        #expect(!ResponseRules.isAnotherVersion(Validators(etag: tag), etag: "W/" + tag, lastModified: nil))
        #expect(!ResponseRules.isAnotherVersion(Validators(etag: "W/" + tag), etag: tag, lastModified: nil))
        // Canonically equivalent text is not the same tag, nor the same date field.
        #expect(ResponseRules.isAnotherVersion(Validators(etag: "\"\u{E9}\""), etag: "\"e\u{301}\"", lastModified: nil))
        #expect(ResponseRules.isAnotherVersion(Validators(lastModified: "\u{E9}"), etag: nil, lastModified: "e\u{301}"))
        #expect(!ResponseRules.isAnotherVersion(Validators(etag: "\"a\""), etag: "W/\"a\"", lastModified: nil))
        #expect(ResponseRules.isAnotherVersion(Validators(etag: "\"a\""), etag: "\"b\"", lastModified: nil))
    }
}
