import Foundation
import Testing
import TestSupport

/// The fault-injecting origin itself, driven by the system curl so the origin is checked against
/// an independent HTTP client before the downloader's tests rely on it.
@Suite struct TestOriginTests {
    /// 0, 1, 2, … 99 — every byte position is recognisable.
    static let numbers: [UInt8] = (0..<100).map { UInt8($0) }
    static let modified = "Sun, 29 Nov 2026 10:00:00 GMT"

    private func makeOrigin(etag: String? = "\"v1\"", lastModified: String? = modified) throws -> TestOrigin {
        let origin = try TestOrigin()
        origin.serve("/file.bin", OriginResource(Self.numbers, etag: etag, lastModified: lastModified))
        return origin
    }

    // MARK: Normal behaviour

    @Test func fullGetSendsBodyAndValidators() throws {
        let origin = try makeOrigin()
        let run = try curl([origin.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.status == 200)
        #expect(run.body == Self.numbers)
        #expect(run.header("Content-Length") == "100")
        #expect(run.header("ETag") == "\"v1\"")
        #expect(run.header("Last-Modified") == Self.modified)
        #expect(run.header("Accept-Ranges") == "bytes")
        #expect(run.header("Content-Type") == "application/octet-stream")
        #expect(run.header("Content-Encoding") == nil)
        #expect(run.header("Date")?.hasSuffix(" GMT") == true)
        #expect(origin.requests.count == 1)
        #expect(origin.requests.first?.method == "GET")
        #expect(origin.requests.first?.path == "/file.bin")
    }

    @Test func textResourceAndCompressionIgnored() throws {
        let origin = try TestOrigin()
        var page = OriginResource(text: "hello, world\n")
        page.contentType = "text/plain"
        origin.serve("/hello.txt", page)
        let run = try curl(["--compressed", origin.url("/hello.txt")])
        #expect(run.status == 200)
        #expect(String(decoding: run.body, as: UTF8.self) == "hello, world\n")
        #expect(run.header("Content-Type") == "text/plain")
        #expect(run.header("Content-Encoding") == nil)
        #expect(run.header("ETag") == nil)
        #expect(run.header("Last-Modified") == nil)
        #expect(origin.requests.first?.header("accept-encoding")?.isEmpty == false)
    }

    @Test func headSendsHeadersOnly() throws {
        let origin = try makeOrigin()
        // Two HEADs on one connection: a body after the first would garble the second response.
        let run = try curl(["-I", "-v", origin.url("/file.bin"), "-o", "/dev/null", origin.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.statuses == [200, 200])
        #expect(run.header("Content-Length") == "100")
        #expect(run.header("ETag") == "\"v1\"")
        #expect(run.stderr.contains("Re-using existing connection"))
        // With -I curl writes the header block as the "body": nothing else may follow it.
        let output = String(decoding: run.body, as: UTF8.self)
        #expect(output.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(output.hasSuffix("\r\n\r\n"))
        #expect(origin.requests.map(\.method) == ["HEAD", "HEAD"])
        #expect(origin.connectionsAccepted == 1)
    }

    @Test func unknownPathIs404() throws {
        let origin = try makeOrigin()
        let run = try curl([origin.url("/missing")])
        #expect(run.status == 404)
        #expect(run.header("Content-Type") == "text/html")
        #expect(String(decoding: run.body, as: UTF8.self).contains("404 Not Found"))
        #expect(run.header("Content-Length") == String(run.body.count))
    }

    @Test func serveReplacesAndRemoveForgets() throws {
        let origin = try makeOrigin()
        origin.serve("/file.bin", OriginResource(text: "version two", etag: "\"v2\""))
        let second = try curl([origin.url("/file.bin")])
        #expect(String(decoding: second.body, as: UTF8.self) == "version two")
        #expect(second.header("ETag") == "\"v2\"")
        origin.remove("/file.bin")
        #expect(try curl([origin.url("/file.bin")]).status == 404)
    }

    @Test func queryFallsBackToThePath() throws {
        let origin = try makeOrigin()
        let run = try curl([origin.url("/file.bin?sig=SECRET&x=1")])
        #expect(run.status == 200)
        #expect(run.body == Self.numbers)
        #expect(origin.requests.first?.path == "/file.bin?sig=SECRET&x=1")
        #expect(origin.requests(to: "/file.bin").count == 1)
        #expect(origin.requests(to: "/file.bin?sig=SECRET&x=1").count == 1)
        #expect(origin.requests(to: "/other").isEmpty)
    }

    // MARK: Ranges

    @Test func openRangeIs206() throws {
        let origin = try makeOrigin()
        let run = try curl(["-r", "40-", origin.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.status == 206)
        #expect(run.header("Content-Range") == "bytes 40-99/100")
        #expect(run.header("Content-Length") == "60")
        #expect(run.body == Array(Self.numbers[40...]))
        #expect(origin.requests.first?.header("range") == "bytes=40-")
    }

    @Test func closedSuffixAndClampedRanges() throws {
        let origin = try makeOrigin()
        let closed = try curl(["-r", "2-5", origin.url("/file.bin")])
        #expect(closed.status == 206)
        #expect(closed.header("Content-Range") == "bytes 2-5/100")
        #expect(closed.header("Content-Length") == "4")
        #expect(closed.body == [2, 3, 4, 5])

        let suffix = try curl(["-r", "-3", origin.url("/file.bin")])
        #expect(suffix.status == 206)
        #expect(suffix.header("Content-Range") == "bytes 97-99/100")
        #expect(suffix.body == [97, 98, 99])

        let clamped = try curl(["-r", "95-1000", origin.url("/file.bin")])
        #expect(clamped.status == 206)
        #expect(clamped.header("Content-Range") == "bytes 95-99/100")
        #expect(clamped.body == [95, 96, 97, 98, 99])
    }

    @Test func rangePastTheEndIs416() throws {
        let origin = try makeOrigin()
        for start in ["100", "5000"] {
            let run = try curl(["-r", "\(start)-", origin.url("/file.bin")])
            #expect(run.status == 416)
            #expect(run.header("Content-Range") == "bytes */100")
            #expect(run.header("Content-Length") == String(run.body.count))
        }
    }

    // MARK: Multi-range

    static let multipartType = "multipart/byteranges; boundary=00000000000000000001"

    /// A multipart/byteranges body as nginx frames it, over `numbers`: for each part, the bytes
    /// it carries and what its Content-Range says after `bytes `.
    static func multipart(_ parts: [(bytes: ClosedRange<Int>, says: String)]) -> [UInt8] {
        var body: [UInt8] = []
        for part in parts {
            body += Array(("\r\n--00000000000000000001\r\nContent-Type: application/octet-stream\r\n"
                + "Content-Range: bytes \(part.says)\r\n\r\n").utf8)
            body += numbers[part.bytes]
        }
        return body + Array("\r\n--00000000000000000001--\r\n".utf8)
    }

    @Test func multiRangeGetsMultipartByteranges() throws {
        let origin = try makeOrigin()
        let run = try curl(["-r", "0-1,5-6", origin.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.status == 206)
        #expect(run.header("Content-Type") == Self.multipartType)
        #expect(run.header("Content-Range") == nil)
        #expect(run.header("ETag") == "\"v1\"")
        #expect(run.header("Last-Modified") == Self.modified)
        #expect(run.header("Accept-Ranges") == "bytes")
        #expect(run.header("Content-Length") == String(run.body.count))
        #expect(run.body == Self.multipart([(0...1, "0-1/100"), (5...6, "5-6/100")]))
    }

    @Test func multiRangeDropsUnsatisfiableRangesAndHonoursIfRange() throws {
        let origin = try makeOrigin()
        let one = try curl(["-r", "90-,500-600", origin.url("/file.bin")])
        #expect(one.status == 206)
        #expect(one.header("Content-Range") == "bytes 90-99/100")
        #expect(one.body == Array(Self.numbers[90...]))
        let none = try curl(["-r", "100-,500-600", origin.url("/file.bin")])
        #expect(none.status == 416)
        #expect(none.header("Content-Range") == "bytes */100")
        let malformed = try curl(["-H", "Range: bytes=0-1,x-5", origin.url("/file.bin")])
        #expect(malformed.status == 200 && malformed.body == Self.numbers)
        let suffixFirst = try curl(["-H", "Range: bytes=-2, 0-0", origin.url("/file.bin")])
        #expect(suffixFirst.status == 206)
        #expect(suffixFirst.body == Self.multipart([(98...99, "98-99/100"), (0...0, "0-0/100")]))
        let stale = try curl(["-r", "0-1,5-6", "-H", "If-Range: \"v0\"", origin.url("/file.bin")])
        #expect(stale.status == 200 && stale.body == Self.numbers && stale.header("Content-Range") == nil)
        let current = try curl(["-r", "0-1,5-6", "-H", "If-Range: \"v1\"", origin.url("/file.bin")])
        #expect(current.status == 206 && current.header("Content-Type") == Self.multipartType)
    }

    @Test func multiRangeFaultsReshapeTheParts() throws {
        let origin = try makeOrigin()
        func multi(_ fault: OriginFault, _ ranges: String) throws -> CurlRun {
            origin.inject("/file.bin", [fault])
            let run = try curl(["-r", ranges, origin.url("/file.bin")])
            #expect(run.exitCode == 0)
            #expect(run.status == 206)
            #expect(run.header("Content-Type") == Self.multipartType)
            #expect(run.header("Content-Range") == nil)
            #expect(run.header("Content-Length") == String(run.body.count))
            return run
        }
        #expect(try multi(.partsReversed, "0-1,5-6").body == Self.multipart([(5...6, "5-6/100"), (0...1, "0-1/100")]))
        #expect(try multi(.partsCoalesced, "0-1,5-6,90-99").body
            == Self.multipart([(0...6, "0-6/100"), (90...99, "90-99/100")]))
        #expect(try multi(.partsOverlapping, "0-1,5-6,50-59").body
            == Self.multipart([(0...1, "0-1/100"), (0...6, "0-6/100"), (40...59, "40-59/100")]))
        #expect(try multi(.partsSplitOverlapping, "0-1,50-59").body
            == Self.multipart([(0...1, "0-1/100"), (50...56, "50-56/100"), (53...59, "53-59/100")]))
        #expect(try multi(.partNotAskedFor, "20-29,50-59").body
            == Self.multipart([(0...9, "0-9/100"), (20...29, "20-29/100"), (50...59, "50-59/100")]))
        #expect(try multi(.partNotAskedFor, "5-6,50-59").body
            == Self.multipart([(90...99, "90-99/100"), (5...6, "5-6/100"), (50...59, "50-59/100")]))
        #expect(try multi(.partCutShort, "0-9,50-59").body == Self.multipart([(0...9, "0-9/100"), (50...54, "50-59/100")]))
        #expect(try multi(.rangeCompleteLength(1000), "0-1,5-6").body
            == Self.multipart([(0...1, "0-1/1000"), (5...6, "5-6/1000")]))
        let retagged = try multi(.rangeETag("\"other\""), "0-1,5-6")
        #expect(retagged.header("ETag") == "\"other\"")
        #expect(retagged.body == Self.multipart([(0...1, "0-1/100"), (5...6, "5-6/100")]))
        #expect(origin.pendingFaults("/file.bin") == 0)
    }

    @Test func multiRangeFaultsOnSingleRangesAndWholeAnswers() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.wholeForMulti, .wholeForMulti, .onlyFirstRange,
                                    .rangeETag("\"other\""), .rangeETag("\"other\""),
                                    .rangeCompleteLength(1000), .partCutShort])
        let whole = try curl(["-r", "0-1,5-6", origin.url("/file.bin")])
        #expect(whole.status == 200 && whole.body == Self.numbers && whole.header("Content-Range") == nil)
        let single = try curl(["-r", "90-", origin.url("/file.bin")])
        #expect(single.status == 206 && single.header("Content-Range") == "bytes 90-99/100")
        let first = try curl(["-r", "5-6,0-1", origin.url("/file.bin")])
        #expect(first.status == 206)
        #expect(first.header("Content-Type") == "application/octet-stream")
        #expect(first.header("Content-Range") == "bytes 5-6/100")
        #expect(first.body == Array(Self.numbers[5...6]))
        let retagged = try curl(["-r", "90-", origin.url("/file.bin")])
        #expect(retagged.status == 206 && retagged.header("ETag") == "\"other\"")
        let unranged = try curl([origin.url("/file.bin")])
        #expect(unranged.status == 200 && unranged.header("ETag") == "\"v1\"")
        let longer = try curl(["-r", "90-", origin.url("/file.bin")])
        #expect(longer.header("Content-Range") == "bytes 90-99/1000")
        #expect(longer.body == Array(Self.numbers[90...]))
        let short = try curl(["-r", "90-", origin.url("/file.bin")])
        #expect(short.status == 206)
        #expect(short.header("Content-Range") == "bytes 90-99/100")
        #expect(short.header("Content-Length") == "5")
        #expect(short.body == Array(Self.numbers[90..<95]))
        #expect(origin.pendingFaults("/file.bin") == 0)
    }

    // MARK: If-Range

    @Test func ifRangeWithTheCurrentStrongETagIsHonoured() throws {
        let origin = try makeOrigin()
        let run = try curl(["-r", "90-", "-H", "If-Range: \"v1\"", origin.url("/file.bin")])
        #expect(run.status == 206)
        #expect(run.header("Content-Range") == "bytes 90-99/100")
        #expect(run.body == Array(Self.numbers[90...]))
    }

    @Test func ifRangeWithAnotherETagGetsTheFullBody() throws {
        let origin = try makeOrigin()
        origin.serve("/file.bin", OriginResource(text: "a new version", etag: "\"v2\""))
        let run = try curl(["-r", "5-", "-H", "If-Range: \"v1\"", origin.url("/file.bin")])
        #expect(run.status == 200)
        #expect(String(decoding: run.body, as: UTF8.self) == "a new version")
        #expect(run.header("ETag") == "\"v2\"")
        #expect(run.header("Content-Range") == nil)
    }

    @Test func weakETagsNeverSatisfyIfRange() throws {
        let origin = try makeOrigin(etag: "W/\"v1\"")
        let weakAsked = try curl(["-r", "90-", "-H", "If-Range: W/\"v1\"", origin.url("/file.bin")])
        #expect(weakAsked.status == 200)
        #expect(weakAsked.body == Self.numbers)
        let strongAsked = try curl(["-r", "90-", "-H", "If-Range: \"v1\"", origin.url("/file.bin")])
        #expect(strongAsked.status == 200)
        #expect(strongAsked.header("ETag") == "W/\"v1\"")
        let plainRange = try curl(["-r", "90-", origin.url("/file.bin")])
        #expect(plainRange.status == 206)
    }

    /// The `Date` a resource's answers carry (none, or a chosen age of the file), and
    /// `Accept-Ranges: none` with every Range answered by the whole file.
    @Test func dateAndAcceptRangesAsToldTo() throws {
        let origin = try TestOrigin()
        var undated = OriginResource(Self.numbers, lastModified: Self.modified)
        undated.date = .none
        var aged = OriginResource(Self.numbers, lastModified: Self.modified)
        aged.date = .afterLastModified(59)
        var whole = OriginResource(Self.numbers, etag: "\"w\"")
        whole.acceptRangesNone = true
        origin.serve("/undated.bin", undated)
        origin.serve("/aged.bin", aged)
        origin.serve("/whole.bin", whole)
        #expect(try curl([origin.url("/undated.bin")]).header("Date") == nil)
        #expect(try curl([origin.url("/aged.bin")]).header("Date") == "Sun, 29 Nov 2026 10:00:59 GMT")
        let ranged = try curl(["-r", "90-", "-H", "If-Range: \"w\"", origin.url("/whole.bin")])
        #expect(ranged.status == 200 && ranged.body == Self.numbers && ranged.header("Accept-Ranges") == "none")
    }

    /// Apache's rules for a file published this second: a weak ETag and a Last-Modified equal
    /// to the Date; a date in If-Range is answered with the whole file until the file is 60 s
    /// old, its (then strong) ETag with the range.
    @Test func apacheAsItServesAFreshFile() throws {
        let origin = try TestOrigin()
        var fresh = OriginResource(Self.numbers, etag: "\"a\"")
        fresh.apache = .publishedAtFirstRequest
        var old = OriginResource(Self.numbers, etag: "\"o\"")
        old.apache = .modified(time(nil) - 3600)
        origin.serve("/fresh.bin", fresh)
        origin.serve("/old.bin", old)
        let first = try curl([origin.url("/fresh.bin")])
        let lastModified = try #require(first.header("Last-Modified"))
        #expect(first.header("ETag") == "W/\"a\"" && lastModified == first.header("Date"), "\(first.responses.last?.headers ?? [])")
        let dated = try curl(["-r", "90-", "-H", "If-Range: \(lastModified)", origin.url("/fresh.bin")])
        #expect(dated.status == 200 && dated.body == Self.numbers)
        let oldHead = try curl([origin.url("/old.bin")])
        #expect(oldHead.header("ETag") == "\"o\"")
        let oldDated = try curl(["-r", "90-", "-H", "If-Range: \(try #require(oldHead.header("Last-Modified")))", origin.url("/old.bin")])
        #expect(oldDated.status == 206)
        #expect(try curl(["-r", "90-", "-H", "If-Range: \"o\"", origin.url("/old.bin")]).status == 206)
    }

    @Test func ifRangeWithAnHTTPDate() throws {
        let origin = try makeOrigin()
        let same = try curl(["-r", "98-", "-H", "If-Range: \(Self.modified)", origin.url("/file.bin")])
        #expect(same.status == 206)
        #expect(same.body == [98, 99])
        let other = try curl(["-r", "98-", "-H", "If-Range: Sat, 28 Nov 2026 10:00:00 GMT", origin.url("/file.bin")])
        #expect(other.status == 200)
        #expect(other.body == Self.numbers)
        let noValidators = try TestOrigin()
        noValidators.serve("/bare", OriginResource(Self.numbers))
        let bare = try curl(["-r", "98-", "-H", "If-Range: \(Self.modified)", noValidators.url("/bare")])
        #expect(bare.status == 200)
    }

    // MARK: Revalidation

    @Test func ifNoneMatchGives304() throws {
        let origin = try makeOrigin()
        let matching = try curl(["-H", "If-None-Match: \"v1\"", origin.url("/file.bin")])
        #expect(matching.exitCode == 0)
        #expect(matching.status == 304)
        #expect(matching.header("ETag") == "\"v1\"")
        #expect(matching.body.isEmpty)
        let weakly = try curl(["-H", "If-None-Match: \"x\", W/\"v1\"", origin.url("/file.bin")])
        #expect(weakly.status == 304)
        let other = try curl(["-H", "If-None-Match: \"v0\"", origin.url("/file.bin")])
        #expect(other.status == 200)
        #expect(other.body == Self.numbers)
    }

    @Test func ifModifiedSinceGives304() throws {
        let origin = try makeOrigin()
        let same = try curl(["-H", "If-Modified-Since: \(Self.modified)", origin.url("/file.bin")])
        #expect(same.status == 304)
        #expect(same.body.isEmpty)
        let later = try curl(["-H", "If-Modified-Since: Mon, 30 Nov 2026 00:00:00 GMT", origin.url("/file.bin")])
        #expect(later.status == 304)
        let earlier = try curl(["-H", "If-Modified-Since: Sun, 29 Nov 2026 09:59:59 GMT", origin.url("/file.bin")])
        #expect(earlier.status == 200)
        #expect(earlier.body == Self.numbers)
        // If-None-Match wins over If-Modified-Since.
        let both = try curl(["-H", "If-None-Match: \"v0\"", "-H", "If-Modified-Since: \(Self.modified)",
                             origin.url("/file.bin")])
        #expect(both.status == 200)
    }

    // MARK: Faults

    @Test func cutAfterSendsAShortBody() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.cutAfter(40)])
        let run = try curl([origin.url("/file.bin")])
        #expect(run.exitCode == 18)
        #expect(run.status == 200)
        #expect(run.header("Content-Length") == "100")
        #expect(run.body == Array(Self.numbers[..<40]))
        #expect(origin.pendingFaults("/file.bin") == 0)
        let next = try curl([origin.url("/file.bin")])
        #expect(next.exitCode == 0)
        #expect(next.body == Self.numbers)
    }

    @Test func cutAfterInsideARange() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.cutAfter(10)])
        let run = try curl(["-r", "40-", origin.url("/file.bin")])
        #expect(run.exitCode == 18)
        #expect(run.status == 206)
        #expect(run.header("Content-Range") == "bytes 40-99/100")
        #expect(run.header("Content-Length") == "60")
        #expect(run.body == Array(Self.numbers[40..<50]))
    }

    @Test func ignoreRangeAnswers200() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.ignoreRange])
        let run = try curl(["-r", "40-", "-H", "If-Range: \"v1\"", origin.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.status == 200)
        #expect(run.header("Content-Range") == nil)
        #expect(run.body == Self.numbers)
    }

    @Test func statusWithRetryAfterThenNormal() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.status(503, body: "busy\n", headers: [("Retry-After", "2")]),
                                    .status(429, headers: [("Retry-After", "Sun, 29 Nov 2026 10:05:00 GMT")]),
                                    .status(500)])
        #expect(origin.pendingFaults("/file.bin") == 3)
        let first = try curl([origin.url("/file.bin")])
        #expect(first.exitCode == 0)
        #expect(first.status == 503)
        #expect(first.header("Retry-After") == "2")
        #expect(String(decoding: first.body, as: UTF8.self) == "busy\n")
        #expect(first.header("ETag") == nil)
        let second = try curl([origin.url("/file.bin")])
        #expect(second.status == 429)
        #expect(second.header("Retry-After") == "Sun, 29 Nov 2026 10:05:00 GMT")
        #expect(second.header("Content-Length") == "0")
        #expect(try curl([origin.url("/file.bin")]).status == 500)
        let normal = try curl([origin.url("/file.bin")])
        #expect(normal.status == 200)
        #expect(normal.body == Self.numbers)
    }

    @Test func statusOnAnUnservedPathAndCustomHeaders() throws {
        let origin = try TestOrigin()
        origin.inject("/nothing", [.status(200, body: "<html>error</html>", headers: [("Content-Type", "text/html")])])
        let run = try curl([origin.url("/nothing")])
        #expect(run.status == 200)
        #expect(run.header("Content-Type") == "text/html")
        #expect(String(decoding: run.body, as: UTF8.self) == "<html>error</html>")
        #expect(try curl([origin.url("/nothing")]).status == 404)
    }

    @Test func redirectSendsLocation() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.redirect("file:///etc/passwd"),
                                    .redirect("ftp://example.com/x", status: 301),
                                    .redirect(origin.url("/elsewhere"), status: 308)])
        let first = try curl([origin.url("/file.bin")])
        #expect(first.status == 302)
        #expect(first.header("Location") == "file:///etc/passwd")
        let second = try curl([origin.url("/file.bin")])
        #expect(second.status == 301)
        #expect(second.header("Location") == "ftp://example.com/x")
        origin.serve("/elsewhere", OriginResource(text: "moved here"))
        let followed = try curl(["-L", origin.url("/file.bin")])
        #expect(followed.statuses == [308, 200])
        #expect(String(decoding: followed.body, as: UTF8.self) == "moved here")
        #expect(origin.requests.map(\.path) == ["/file.bin", "/file.bin", "/file.bin", "/elsewhere"])
    }

    @Test func redirectLoopIsBoundedByTheClient() throws {
        let origin = try makeOrigin()
        origin.inject("/loop", Array(repeating: .redirect(origin.url("/loop")), count: 10))
        let run = try curl(["-L", "--max-redirs", "3", origin.url("/loop")])
        #expect(run.exitCode == 47)       // CURLE_TOO_MANY_REDIRECTS
        #expect(origin.requests(to: "/loop").count == 4)
        #expect(origin.pendingFaults("/loop") == 6)
    }

    @Test func chunkedWithoutLength() throws {
        let big = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let origin = try TestOrigin()
        origin.serve("/big", OriginResource(big, etag: "\"big\""))
        origin.inject("/big", [.chunkedNoLength, .chunkedNoLength])
        let run = try curl([origin.url("/big")])
        #expect(run.exitCode == 0)
        #expect(run.status == 200)
        #expect(run.header("Transfer-Encoding") == "chunked")
        #expect(run.header("Content-Length") == nil)
        #expect(run.body.count == big.count)
        #expect(run.body.elementsEqual(big))     // a Bool: a 100 kB array diff would take seconds to print
        let ranged = try curl(["-r", "99990-", origin.url("/big")])
        #expect(ranged.status == 206)
        #expect(ranged.header("Content-Range") == "bytes 99990-99999/100000")
        #expect(ranged.header("Transfer-Encoding") == "chunked")
        #expect(ranged.body == Array(big[99_990...]))
    }

    @Test func htmlInsteadOfContent() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.htmlInsteadOfContent])
        let run = try curl(["-r", "10-", "-H", "If-None-Match: \"v1\"", origin.url("/file.bin")])
        #expect(run.status == 200)
        #expect(run.header("Content-Type")?.hasPrefix("text/html") == true)
        #expect(run.header("ETag") == "\"portal\"")
        #expect(run.header("Content-Length") == String(run.body.count))
        #expect(String(decoding: run.body, as: UTF8.self).contains("<html>"))
        #expect(run.body != Self.numbers)
    }

    @Test func announceLengthLies() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.announceLength(150), .announceLength(30)])
        let longer = try curl([origin.url("/file.bin")])
        #expect(longer.exitCode == 18)
        #expect(longer.header("Content-Length") == "150")
        #expect(longer.body == Self.numbers)
        let shorter = try curl([origin.url("/file.bin")])
        #expect(shorter.exitCode == 0)
        #expect(shorter.header("Content-Length") == "30")
        #expect(shorter.body == Array(Self.numbers[..<30]))
    }

    @Test func trickleIsSlowButComplete() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.trickle(bytesPerSecond: 200)])
        let run = try curl([origin.url("/file.bin")])
        #expect(run.exitCode == 0)
        #expect(run.body == Self.numbers)
        #expect(run.seconds >= 0.35)      // 100 bytes at 200 B/s, in 20-byte steps: ≥ 0.4 s
    }

    @Test func stallAfterKeepsTheSocketSilent() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.stallAfter(25, seconds: 10)])
        let run = try curl(["--max-time", "1", origin.url("/file.bin")])
        #expect(run.exitCode == 28)       // CURLE_OPERATION_TIMEDOUT
        #expect(run.status == 200)
        #expect(run.body == Array(Self.numbers[..<25]))
        #expect(run.seconds < 5)
    }

    @Test func stallEndsWithAClose() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.stallAfter(25, seconds: 0.5)])
        let run = try curl([origin.url("/file.bin")])
        #expect(run.exitCode == 18)
        #expect(run.body == Array(Self.numbers[..<25]))
        #expect(run.seconds >= 0.45)
    }

    @Test func delayWaitsThenAnswers() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.delay(seconds: 0.6)])
        let run = try curl([origin.url("/file.bin")])
        #expect(run.status == 200)
        #expect(run.body == Self.numbers)
        #expect(run.seconds >= 0.55)
        #expect(origin.requests.count == 1)    // recorded before the delay ended
    }

    @Test func weakETagFaultDefeatsIfRangeOnce() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.weakETag])
        let weak = try curl(["-r", "90-", "-H", "If-Range: \"v1\"", origin.url("/file.bin")])
        #expect(weak.status == 200)
        #expect(weak.header("ETag") == "W/\"v1\"")
        #expect(weak.body == Self.numbers)
        let strong = try curl(["-r", "90-", "-H", "If-Range: \"v1\"", origin.url("/file.bin")])
        #expect(strong.status == 206)
        #expect(strong.header("ETag") == "\"v1\"")
    }

    // MARK: Connections

    @Test func keepAliveReusesTheConnection() throws {
        let origin = try makeOrigin()
        origin.serve("/second", OriginResource(text: "two"))
        let run = try curl(["-v", origin.url("/file.bin"), "-o", "/dev/null", origin.url("/second")])
        #expect(run.exitCode == 0)
        #expect(run.statuses == [200, 200])
        #expect(run.stderr.contains("Re-using existing connection"))
        let seen = origin.requests
        #expect(seen.map(\.path) == ["/file.bin", "/second"])
        #expect(seen.count == 2 && seen[0].connection == seen[1].connection)
        #expect(origin.connectionsAccepted == 1)
    }

    @Test func connectionCloseIsHonoured() throws {
        let origin = try makeOrigin()
        let run = try curl(["-H", "Connection: close", origin.url("/file.bin"), "-o", "/dev/null", origin.url("/file.bin")])
        #expect(run.statuses == [200, 200])
        #expect(run.header("Connection") == "close")
        let seen = origin.requests
        #expect(seen.count == 2 && seen[0].connection != seen[1].connection)
        #expect(origin.connectionsAccepted == 2)
    }

    @Test func faultsThatHangUpDoNotReuseTheConnection() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.cutAfter(5)])
        origin.serve("/second", OriginResource(text: "two"))
        let run = try curl([origin.url("/file.bin"), "-o", "/dev/null", origin.url("/second")])
        #expect(run.statuses == [200, 200])
        #expect(origin.connectionsAccepted == 2)
        #expect(origin.requests.map(\.path) == ["/file.bin", "/second"])
    }

    @Test func requestsRecordHeaders() throws {
        let origin = try makeOrigin()
        _ = try curl(["-r", "5-", "-H", "If-Range: \"v1\"", "-H", "X-Custom: Hello", "-H", "Authorization: Bearer abc",
                      origin.url("/file.bin")])
        let request = try #require(origin.requests(to: "/file.bin").first)
        #expect(request.method == "GET")
        #expect(request.header("range") == "bytes=5-")
        #expect(request.header("if-range") == "\"v1\"")
        #expect(request.header("X-CUSTOM") == "Hello")
        #expect(request.headers["authorization"] == "Bearer abc")
        #expect(request.headers["host"] == "127.0.0.1:\(origin.port)")
        #expect(request.headers.keys.allSatisfy { $0 == $0.lowercased() })
    }

    @Test func stopUnblocksATransferAndRefusesNewOnes() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.stallAfter(10, seconds: 30)])
        let started = Date()
        let pending = try CurlProcess(["--no-buffer", origin.url("/file.bin")], maxTime: 20)
        // Stopped once curl holds the 10 bytes sent before the stall (unbuffered, so its file shows them).
        let body = pending.folder.appendingPathComponent("body").path
        for _ in 0..<500 where ((try? FileManager.default.attributesOfItem(atPath: body)[.size] as? Int) ?? 0) < 10 { usleep(10_000) }
        origin.stop()
        let run = try pending.finish()
        #expect(run.exitCode == 18)
        #expect(run.body == Array(Self.numbers[..<10]))
        #expect(Date().timeIntervalSince(started) < 5)
        let refused = try curl(["--connect-timeout", "2", origin.url("/file.bin")])
        #expect(refused.exitCode == 7)      // CURLE_COULDNT_CONNECT
        origin.stop()                        // idempotent
    }

    @Test func releasingTheOriginStopsIt() throws {
        weak var released: TestOrigin?
        var port = 0
        do {
            let origin = try makeOrigin()
            released = origin
            port = origin.port
            #expect(try curl([origin.url("/file.bin")]).status == 200)
        }
        #expect(released == nil)
        let refused = try curl(["--connect-timeout", "2", "http://127.0.0.1:\(port)/file.bin"])
        #expect(refused.exitCode == 7)
    }

    @Test func concurrentRequestsAreServedInParallel() throws {
        let origin = try makeOrigin()
        origin.inject("/file.bin", [.delay(seconds: 0.8), .delay(seconds: 0.8), .delay(seconds: 0.8)])
        let runs = try (0..<3).map { _ in try CurlProcess([origin.url("/file.bin")], maxTime: 20) }
        let results = try runs.map { try $0.finish() }
        #expect(results.allSatisfy { $0.status == 200 && $0.body == Self.numbers })
        #expect(origin.peakActiveRequests == 3)       // all three were inside their delay at once
        #expect(origin.peakOpenConnections == 3)
    }
}

// MARK: - curl driver

private struct CurlResponse {
    let status: Int
    let headers: [(String, String)]

    func header(_ name: String) -> String? {
        headers.last { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}

private struct CurlRun {
    let exitCode: Int32
    let responses: [CurlResponse]
    /// The body of the first URL.
    let body: [UInt8]
    let stderr: String
    let seconds: Double

    var status: Int? { responses.last?.status }
    var statuses: [Int] { responses.map(\.status) }
    /// A header of the last response.
    func header(_ name: String) -> String? { responses.last?.header(name) }
}

/// One `curl` process with its output in files (`-D` headers, `-o` body, `-v` to stderr).
private final class CurlProcess {
    private let scratch: TemporaryFolder
    var folder: URL { scratch.url }
    let process = Process()
    let started = Date()
    private let handles: [FileHandle]

    init(_ arguments: [String], maxTime: Int) throws {
        scratch = try TemporaryFolder()
        let folder = scratch.url
        for name in ["headers", "body", "stdout", "stderr"] {
            try Data().write(to: folder.appendingPathComponent(name))
        }
        let stdout = try FileHandle(forWritingTo: folder.appendingPathComponent("stdout"))
        let stderr = try FileHandle(forWritingTo: folder.appendingPathComponent("stderr"))
        handles = [stdout, stderr]
        var full = ["-q", "-s", "--noproxy", "*",
                    "-D", folder.appendingPathComponent("headers").path,
                    "-o", folder.appendingPathComponent("body").path]
        if !arguments.contains("--max-time") { full += ["--max-time", String(maxTime)] }
        full += arguments
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = full
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": folder.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
    }

    func finish() throws -> CurlRun {
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        for handle in handles { try? handle.close() }
        let headerText = try String(contentsOf: folder.appendingPathComponent("headers"), encoding: .utf8)
        let body = try [UInt8](Data(contentsOf: folder.appendingPathComponent("body")))
        let stderr = try String(contentsOf: folder.appendingPathComponent("stderr"), encoding: .utf8)
        return CurlRun(exitCode: process.terminationStatus, responses: Self.parse(headerText), body: body,
                       stderr: stderr, seconds: seconds)
    }

    /// Splits curl's `-D` dump into responses (one per status line).
    static func parse(_ text: String) -> [CurlResponse] {
        var responses: [CurlResponse] = []
        var status: Int?
        var headers: [(String, String)] = []
        // CRLF is a single Character in Swift, so split on both forms.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            if line.hasPrefix("HTTP/") {
                if let status { responses.append(CurlResponse(status: status, headers: headers)) }
                status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                headers = []
            } else if let colon = line.firstIndex(of: ":") {
                headers.append((String(line[..<colon]),
                                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
        }
        if let status { responses.append(CurlResponse(status: status, headers: headers)) }
        return responses
    }
}

/// Runs curl to completion (a `--max-time` of 20 s unless one is given, so nothing hangs).
private func curl(_ arguments: [String]) throws -> CurlRun {
    try CurlProcess(arguments, maxTime: 20).finish()
}
