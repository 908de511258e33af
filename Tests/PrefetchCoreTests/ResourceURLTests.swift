import Foundation
import Testing
@testable import PrefetchCore

/// Resource URLs (http/https only, queries elided when shown), default paths from the
/// URL's last segment, resource `path` safety, feed names and `${VAR}` header templates.
@Suite struct ResourceURLTests {
    struct Valid: CustomTestStringConvertible, Sendable {
        let text: String
        let scheme: String
        let host: String
        let port: Int
        let path: String
        var query: String? = nil
        var redacted: String? = nil
        var testDescription: String { text }
    }

    static let valid: [Valid] = [
        Valid(text: "https://cdn.example.com/loop/intro.mp4", scheme: "https", host: "cdn.example.com", port: 443,
              path: "/loop/intro.mp4"),
        Valid(text: "http://example.com", scheme: "http", host: "example.com", port: 80, path: "/"),
        Valid(text: "http://example.com/", scheme: "http", host: "example.com", port: 80, path: "/"),
        Valid(text: "HTTPS://Example.COM:8443/A.bin", scheme: "https", host: "example.com", port: 8443, path: "/A.bin"),
        Valid(text: "http://127.0.0.1:65535/x", scheme: "http", host: "127.0.0.1", port: 65_535, path: "/x"),
        Valid(text: "https://example.com:443/a", scheme: "https", host: "example.com", port: 443, path: "/a"),
        Valid(text: "http://[::1]:8080/feed/a.bin", scheme: "http", host: "[::1]", port: 8_080, path: "/feed/a.bin"),
        Valid(text: "https://example.com:/a", scheme: "https", host: "example.com", port: 443, path: "/a"),
        Valid(text: "https://[2001:DB8::1]/a", scheme: "https", host: "[2001:db8::1]", port: 443, path: "/a"),
        Valid(text: "https://example.com/a%20b.mp4", scheme: "https", host: "example.com", port: 443, path: "/a%20b.mp4"),
        Valid(text: "https://example.com/a.mp4?sig=abc&exp=1", scheme: "https", host: "example.com", port: 443,
              path: "/a.mp4", query: "sig=abc&exp=1", redacted: "https://example.com/a.mp4?…"),
        Valid(text: "https://example.com/a.mp4#t=10", scheme: "https", host: "example.com", port: 443, path: "/a.mp4"),
        Valid(text: "https://example.com/a.mp4?x=1#frag", scheme: "https", host: "example.com", port: 443,
              path: "/a.mp4", query: "x=1", redacted: "https://example.com/a.mp4?…"),
        Valid(text: "https://example.com?token=s3cret", scheme: "https", host: "example.com", port: 443,
              path: "/", query: "token=s3cret", redacted: "https://example.com?…"),
        Valid(text: "http://[::1]:8080/a?k=v", scheme: "http", host: "[::1]", port: 8_080,
              path: "/a", query: "k=v", redacted: "http://[::1]:8080/a?…"),
    ]

    @Test(arguments: valid)
    func parsesValid(_ c: Valid) throws {
        let url = try ResourceURL.parse(c.text)
        #expect(url.text == c.text)
        #expect(url.scheme == c.scheme)
        #expect(url.host == c.host)
        #expect(url.port == c.port)
        #expect(url.path == c.path)
        #expect(url.query == c.query)
        #expect(url.redacted == (c.redacted ?? c.text))
        #expect(url.description == url.redacted)
        #expect(url.origin == "\(c.scheme)://\(c.host):\(c.port)")
    }

    /// The short way a plain URL is read agrees with the long way on every URL: on seeded
    /// random texts made of the parts that decide between them (scheme case, `@`, `[`, ports
    /// in and out of range, a second `:`, upper case, spaces, non-ASCII, `?` and `#` in every
    /// order). `PREFETCH_URL_SEED` replays a seed.
    @Test func theShortWayAgreesWithTheLongWay() {
        let seed = ProcessInfo.processInfo.environment["PREFETCH_URL_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
        print("ResourceURLTests: PREFETCH_URL_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        let schemes = ["https://", "http://", "HTTPS://", "Http://", "ftp://", "https:/", "https:", ""]
        let hosts = ["cdn.example.com", "Cdn.example.com", "h", "", "u@h", "[::1]", "h.example:8443", "h:", "h:0", "h:65536", "h:99999999999",
                     "h:1:2", "h:x", "é.example", "h h", "storage.example.io:443"]
        let rests = ["", "/", "/a/b.bin", "/a%20b", "/a b", "?q=1", "/x?sig=abc#frag", "#f", "/é", "/a?b?c", "/\u{7f}", "/%2F", "/x#a?b"]
        var plain = 0
        for round in 0..<3000 {
            let text = schemes[Int(random.next() % UInt64(schemes.count))] + hosts[Int(random.next() % UInt64(hosts.count))]
                + rests[Int(random.next() % UInt64(rests.count))] + (random.next() % 4 == 0 ? rests[Int(random.next() % UInt64(rests.count))] : "")
            var interned: StringInterner? = StringInterner()
            var full: StringInterner? = StringInterner()
            let short = Result { () throws(ValueError) in try ResourceURL.parse(text, hosts: &interned) }
            let long = Result { () throws(ValueError) in try ResourceURL.parseInFull(text, hosts: &full) }
            switch (short, long) {
            case (.success(let a), .success(let b)):
                #expect(a == b, "seed \(seed), round \(round): \(text)")
                plain += 1
            case (.failure(let a), .failure(let b)):
                #expect(a.message == b.message && a.offset == b.offset, "seed \(seed), round \(round): \(text)")
            default:
                Issue.record("seed \(seed), round \(round): \(text): \(short) against \(long)")
            }
        }
        #expect(plain > 300)
    }

    @Test func redactedNeverShowsQueryValues() throws {
        let url = try ResourceURL.parse("https://cdn.example.com/v.mp4?X-Amz-Signature=deadbeef&X-Amz-Expires=60")
        #expect(!url.redacted.contains("deadbeef"))
        #expect(!"\(url)".contains("deadbeef"))
        #expect(url.redacted == "https://cdn.example.com/v.mp4?…")
    }

    @Test func originDistinguishesSchemeHostAndPort() throws {
        let a = try ResourceURL.parse("https://example.com/a")
        #expect(a.origin == "https://example.com:443")
        #expect(try ResourceURL.parse("https://EXAMPLE.com:443/b").origin == a.origin)
        #expect(try ResourceURL.parse("http://example.com/a").origin == "http://example.com:80")
        #expect(try ResourceURL.parse("https://example.com:8443/a").origin != a.origin)
    }

    typealias Invalid = InvalidValue

    static let invalid: [Invalid] = [
        Invalid(text: "ftp://example.com/a", offset: 0, phrase: "only http and https URLs are fetched, not 'ftp'"),
        Invalid(text: "file:///etc/passwd", offset: 0, phrase: "not 'file'"),
        Invalid(text: "example.com/a.bin", offset: 0, phrase: "expected an absolute URL"),
        Invalid(text: "", offset: 0, phrase: "expected an absolute URL"),
        Invalid(text: "https:example.com/a", offset: 6, phrase: "expected '//' after 'https:'"),
        Invalid(text: "http:/example.com/a", offset: 5, phrase: "expected '//' after 'http:'"),
        Invalid(text: "https://example.com/a b.mp4", offset: 21, phrase: "cannot contain spaces"),
        Invalid(text: " https://example.com/", offset: 0, phrase: "cannot contain spaces"),
        Invalid(text: "https://exa\tmple.com/", offset: 11, phrase: "control characters"),
        Invalid(text: "https://example.com/a\u{7f}", offset: 21, phrase: "control characters"),
        Invalid(text: "https://user:pw@example.com/a", offset: 8, phrase: "credentials"),
        Invalid(text: "http://user@example.com/a", offset: 7, phrase: "credentials"),
        Invalid(text: "https://example.com:0/a", offset: 20, phrase: "port must be a number from 1 to 65535"),
        Invalid(text: "https://example.com:65536/a", offset: 20, phrase: "port"),
        Invalid(text: "https://example.com:80a/a", offset: 20, phrase: "port"),
        Invalid(text: "https://example.com:-1/a", offset: 20, phrase: "port"),
        Invalid(text: "http://[::1]:x/a", offset: 13, phrase: "port"),
        Invalid(text: "https:///a", offset: 8, phrase: "no host"),
        Invalid(text: "https://", offset: 8, phrase: "no host"),
        Invalid(text: "https://:8080/a", offset: 8, phrase: "no host"),
        Invalid(text: "https://[::1/a", offset: 8, phrase: "unclosed '['"),
        Invalid(text: "https://[::1]x/a", offset: 8, phrase: "after the IPv6 address"),
    ]

    @Test(arguments: invalid)
    func rejectsInvalid(_ c: Invalid) {
        expectValueError(at: c.offset, containing: c.phrase) { try ResourceURL.parse(c.text) }
    }

    @Test(arguments: [("https://e.com/loop/intro.mp4", "intro.mp4"),
                      ("https://e.com/a/b%20c.mp4", "b c.mp4"),
                      ("https://e.com/a/file.bin?token=x&y=z", "file.bin"),
                      ("https://e.com/a/x.bin#part", "x.bin"),
                      ("https://e.com/caf%C3%A9.txt", "café.txt"),
                      ("https://e.com/%e2%82%ac.txt", "€.txt"),
                      ("https://e.com/100%25.txt", "100%.txt"),
                      ("https://e.com/a+b.txt", "a+b.txt"),
                      ("https://e.com/a%2Fb", "a/b")])
    func lastSegment(_ text: String, _ segment: String) throws {
        #expect(try ResourceURL.parse(text).lastSegment() == segment)
    }

    @Test(arguments: ["https://e.com/dir/", "https://e.com/", "https://e.com", "https://e.com?x=1", "https://e.com/a/?x=1"])
    func lastSegmentOfADirectoryIsNil(_ text: String) throws {
        #expect(try ResourceURL.parse(text).lastSegment() == nil)
    }

    @Test(arguments: ["https://e.com/a%zz", "https://e.com/a%2", "https://e.com/a%", "https://e.com/%C3", "https://e.com/%FF.bin"])
    func lastSegmentWithABadEscapeThrows(_ text: String) throws {
        let url = try ResourceURL.parse(text)
        let error = try #require(throws: ValueError.self) { try url.lastSegment() }
        #expect(error.message.contains("malformed %-escape"))
    }

    /// A decoded `%2F`, `%2E` or `%00` must not smuggle an unsafe default path past the path check.
    @Test(arguments: [("https://e.com/..%2F..%2Fetc%2Fpasswd", "../../etc/passwd", "'..'"),
                      ("https://e.com/x/%2Fetc%2Fpasswd", "/etc/passwd", "absolute"),
                      ("https://e.com/%2e%2e", "..", "'..'"),
                      ("https://e.com/%2E", ".", "'.'"),
                      ("https://e.com/dir%2F", "dir/", "end with '/'"),
                      ("https://e.com/a%2F%2Fb", "a//b", "'//'"),
                      ("https://e.com/a%00b", "a\u{0}b", "control characters"),
                      ("https://e.com/a%0Ab", "a\nb", "control characters")])
    func decodedSegmentIsCheckedAsAPath(_ text: String, _ decoded: String, _ phrase: String) throws {
        let segment = try #require(try ResourceURL.parse(text).lastSegment())
        #expect(segment == decoded)
        let problem = try #require(RelativePath.problem(segment))
        #expect(problem.message.contains(phrase))
    }
}
