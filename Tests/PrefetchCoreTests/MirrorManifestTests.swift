import Testing
@testable import PrefetchCore

/// SPEC §8: a resource's `mirrors`, decoded as `url` is (the same URL rules, limits and
/// `file:line:column` errors); none costs nothing; one naming a listed URL again is a
/// warning and tried once.
@Suite struct MirrorManifestTests {
    static func decode(_ yaml: String) -> (Feed?, [String]) { ManifestErrorTests.decode(yaml) }

    @Test func mirrorsAreDecodedInOrder() throws {
        let (feed, diagnostics) = Self.decode("""
            resources:
              - url: https://a.example.com/f.bin
                mirrors: [https://b.example.com/f.bin, "http://c.example.com:8080/x/f.bin?t=1"]
              - url: https://a.example.com/g.bin
                mirrors:
                  - https://b.example.com/g.bin
              - url: https://a.example.com/h.bin
            """)
        #expect(diagnostics.isEmpty, "\(diagnostics)")
        let resources = try #require(feed?.resources)
        #expect(resources[0].mirrors?.map(\.text) == ["https://b.example.com/f.bin", "http://c.example.com:8080/x/f.bin?t=1"])
        #expect(resources[0].urlCount == 3 && resources[0].url(at: 2).port == 8080 && resources[0].url(at: 0) == resources[0].url)
        #expect(resources[1].urls.map(\.host) == ["a.example.com", "b.example.com"])
        #expect(resources[2].mirrors == nil && resources[2].urlCount == 1, "no mirrors: nothing allocated")
        // The default path is the url's, never a mirror's.
        #expect(resources[0].path == "f.bin")
        // Hosts are interned across url and mirrors: one string for the feed's many URLs.
        #expect(resources[0].mirrors?[0].host == resources[1].mirrors?[0].host)
    }

    @Test func anEmptyListIsNone() throws {
        let (feed, diagnostics) = Self.decode("resources:\n  - url: https://a.example.com/f.bin\n    mirrors: []\n")
        #expect(diagnostics.isEmpty && feed?.resources.first?.mirrors == nil, "\(diagnostics)")
    }

    @Test func badMirrorsAreErrorsWhereTheyAre() {
        let cases: [(String, [String])] = [
            ("resources:\n  - url: https://e.com/a\n    mirrors: [ftp://m.com/a]\n",
             ["t.yaml:3:15: error: only http and https URLs are fetched, not 'ftp'"]),
            ("resources:\n  - url: https://e.com/a\n    mirrors:\n      - https://m.com/a\n      - \"https://m.com/a b\"\n",
             ["t.yaml:5:25: error: a URL cannot contain spaces; write them as %20"]),
            ("resources:\n  - url: https://e.com/a\n    mirrors: https://m.com/a\n",
             ["t.yaml:3:14: error: mirrors must be a list, found a string"]),
            ("resources:\n  - url: https://e.com/a\n    mirrors: [{url: https://m.com/a}]\n",
             ["t.yaml:3:15: error: a mirror must be a value, found a mapping"]),
            ("resources:\n  - url: https://e.com/a\n    mirrors: [https://user:pw@m.com/a]\n",
             ["t.yaml:3:23: error: credentials in a URL would be shown in logs; send them as a header with ${VAR}"]),
            ("resources:\n  - url: https://e.com/a\n    mirrors: [https://m.com:0/a]\n",
             ["t.yaml:3:29: error: the port must be a number from 1 to 65535"]),
            ("resources:\n  - url: https://e.com/a\n    mirror: [https://m.com/a]\n",
             ["t.yaml:3:5: error: unknown key 'mirror' in a resource (did you mean 'mirrors'?)"]),
        ]
        for (yaml, expected) in cases {
            let (feed, diagnostics) = Self.decode(yaml)
            #expect(diagnostics == expected, "\(yaml)")
            #expect(feed == nil, "an error stops the feed: \(yaml)")
        }
    }

    /// A mirror naming `url` or an earlier mirror again (scheme, host, port and path; the
    /// query does not count, as state.db keys a URL's validators without it) is a warning
    /// and dropped: it would only be tried twice.
    @Test func aRepeatedURLIsAWarningAndTriedOnce() throws {
        let (feed, diagnostics) = Self.decode("""
            resources:
              - url: https://e.com/a?t=1
                mirrors: [https://m.com/a, "HTTPS://E.COM:443/a?t=2", https://m.com/a]
            """)
        #expect(diagnostics == [
            "t.yaml:3:32: warning: this mirror names a URL the resource already lists (HTTPS://E.COM:443/a?…); it is tried once",
            "t.yaml:3:59: warning: this mirror names a URL the resource already lists (https://m.com/a); it is tried once",
        ], "\(diagnostics)")
        #expect(feed?.resources.first?.mirrors?.map(\.text) == ["https://m.com/a"])
    }

    @Test func aMirrorOverTheURLLimitIsRefusedAsAURLIs() {
        let long = "https://m.com/" + String(repeating: "a", count: 9000)
        let (feed, diagnostics) = Self.decode("resources:\n  - url: https://e.com/a\n    mirrors: [\(long)]\n")
        #expect(feed == nil)
        #expect(diagnostics.count == 1 && diagnostics[0].hasPrefix("t.yaml:3:15: error: ") && diagnostics[0].contains("8 KiB"), "\(diagnostics)")
    }
}
