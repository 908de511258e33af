import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §9's manifest key `zsync` (feed and resource; the resource's wins): `auto`, a URL of
/// the resource's own control file, or `none`; a feed's URL is an error, and a delta its
/// effective `encoding` rules out is a warning.
@Suite struct ZsyncKeyTests {
    static func decode(_ yaml: String) -> (Feed?, [String]) {
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "t.yaml")
        return (feed, diagnostics.map(\.headline))
    }

    static let three = """
        resources:
          - url: https://e.com/a.img?t=1
          - url: https://e.com/b.img
            zsync: none
          - url: https://e.com/c.img
            zsync: https://cdn.e.com/deltas/c.img.zsync

        """

    @Test func theResourcesZsyncWinsOverTheFeeds() throws {
        let (plain, none) = Self.decode(Self.three)
        #expect(none.isEmpty)
        let own = try ResourceURL.parse("https://cdn.e.com/deltas/c.img.zsync")
        #expect(try #require(plain).resources.map(\.zsync) == [.none, .none, .url(own)])
        for yaml in ["zsync: auto\n" + Self.three, Self.three + "zsync: auto\n"] {
            let (feed, diagnostics) = Self.decode(yaml)
            #expect(diagnostics.isEmpty)
            let resources = try #require(feed).resources
            #expect(resources.map(\.zsync) == [.auto, .none, .url(own)])
            #expect(resources.map(\.triesDelta) == [true, false, true])
        }
    }

    /// `auto`: `.zsync` appended to the path, any query kept (as §8's `.minisig`).
    @Test(arguments: [
        ("https://e.com/a.img", "https://e.com/a.img.zsync"),
        ("https://e.com/a.img?t=1&u=2", "https://e.com/a.img.zsync?t=1&u=2"),
        ("http://e.com:8080/d/a", "http://e.com:8080/d/a.zsync"),
    ])
    func autoAppendsToThePath(_ url: String, _ control: String) throws {
        #expect(ZsyncSetting.auto.controlURL(for: try ResourceURL.parse(url))?.text == control)
        #expect(ZsyncSetting.none.controlURL(for: try ResourceURL.parse(url)) == nil)
    }

    @Test(arguments: [
        ("zsync: https://e.com/a.zsync\n" + three,
         "t.yaml:1:8: error: zsync at feed level must be auto or none: a control file's URL belongs to one resource"),
        ("zsync: yes\n" + three, "t.yaml:1:8: error: zsync must be auto, none or the control file's URL, found 'yes'"),
        ("resources:\n  - url: https://e.com/a\n    zsync: [auto]\n", "t.yaml:3:12: error: zsync must be a value, found a list"),
        ("resources:\n  - url: https://e.com/a\n    zsync: ftp://e.com/a.zsync\n", "t.yaml:3:12: error: only http and https URLs are fetched, not 'ftp'"),
        ("resources:\n  - url: https://e.com/a\n    zsyn: auto\n", "t.yaml:3:5: error: unknown key 'zsyn' in a resource (did you mean 'zsync'?)"),
    ])
    func aBadValueIsAnErrorAtItsPlace(_ yaml: String, _ expected: String) {
        let (feed, diagnostics) = Self.decode(yaml)
        #expect(feed == nil)
        #expect(diagnostics == [expected])
    }

    /// With an effective `encoding` of `keep` or `decode` the bytes on the wire are not the
    /// file's: a warning at the `zsync` that asked (the resource's, else the feed's), and no delta.
    @Test func anEncodingThatRulesOutADeltaIsAWarning() throws {
        let yaml = """
            zsync: auto
            resources:
              - url: https://e.com/a.img
                encoding: keep
              - url: https://e.com/b.img
                zsync: auto
                encoding: decode
              - url: https://e.com/c.img

            """
        let (feed, diagnostics) = Self.decode(yaml)
        #expect(diagnostics == [
            "t.yaml:1:8: warning: zsync with encoding keep: the bytes on the wire are not the file's, so no delta is tried",
            "t.yaml:6:12: warning: zsync with encoding decode: the bytes on the wire are not the file's, so no delta is tried",
        ])
        #expect(try #require(feed).resources.map(\.triesDelta) == [false, false, true])
    }
}
