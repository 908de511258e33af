import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §7's manifest key `encoding` (feed and resource; the resource's wins), checked like
/// every key; the encoding a copy was stored under, in state.db; and §5's rule that a
/// changed `encoding` makes the copy `changed`.
@Suite struct EncodingKeyTests {
    static func decode(_ yaml: String) -> (Feed?, [String]) {
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "t.yaml")
        return (feed, diagnostics.map(\.headline))
    }

    static let two = """
        resources:
          - url: https://e.com/a.tar.gz
          - url: https://e.com/b.tar.gz
            encoding: refuse
          - url: https://e.com/c.tar.gz
            encoding: decode

        """

    @Test func theResourcesEncodingWinsOverTheFeeds() throws {
        let (plain, none) = Self.decode(Self.two)
        #expect(none.isEmpty)
        #expect(try #require(plain).resources.map(\.encoding) == [.refuse, .refuse, .decode])
        // Before or after the resources in the file: the feed's is the default of the ones without their own.
        for yaml in ["encoding: keep\n" + Self.two, Self.two + "encoding: keep\n"] {
            let (feed, diagnostics) = Self.decode(yaml)
            #expect(diagnostics.isEmpty)
            #expect(try #require(feed).resources.map(\.encoding) == [.keep, .refuse, .decode])
        }
    }

    @Test(arguments: [
        ("encoding: kep\n" + two, "t.yaml:1:11: error: encoding must be refuse, keep or decode, found 'kep' (did you mean 'keep'?)"),
        ("encoding: Decode\n" + two, "t.yaml:1:11: error: encoding must be refuse, keep or decode, found 'Decode' (did you mean 'decode'?)"),
        ("encoding: gzip\n" + two, "t.yaml:1:11: error: encoding must be refuse, keep or decode, found 'gzip' (encoding says what to do with an encoded body: keep stores it as sent, decode stores the decoded bytes)"),
        ("resources:\n  - url: https://e.com/a\n    encoding: [keep]\n", "t.yaml:3:15: error: encoding must be a value, found a list"),
        ("resources:\n  - url: https://e.com/a\n    encoding: refuze\n", "t.yaml:3:15: error: encoding must be refuse, keep or decode, found 'refuze' (did you mean 'refuse'?)"),
        ("resources:\n  - url: https://e.com/a\n    encodng: keep\n", "t.yaml:3:5: error: unknown key 'encodng' in a resource (did you mean 'encoding'?)"),
        ("encodin: keep\n" + two, "t.yaml:1:1: error: unknown key 'encodin' in a feed (did you mean 'encoding'?)"),
    ])
    func aBadValueIsAnErrorAtItsPlace(_ yaml: String, _ expected: String) {
        let (feed, diagnostics) = Self.decode(yaml)
        #expect(feed == nil)
        #expect(diagnostics == [expected])
    }

    /// A changed `encoding` is a changed entry: its failures start afresh. `refuse` leaves
    /// the fingerprint as it was before the key existed, so recorded failures still count.
    @Test func theFingerprintCarriesANonDefaultEncoding() throws {
        let (feed, _) = Self.decode("encoding: keep\n" + Self.two)
        let resources = try #require(feed).resources
        let url = resources[1].url
        #expect(resources[1].fingerprint == url.identityHash + "::")
        #expect(resources[0].fingerprint.hasSuffix("::keep"))
        #expect(resources[2].fingerprint.hasSuffix("::decode"))
    }

    // MARK: state.db and the plan

    static let key = ResourceKey(feed: "t", path: "a.tar.gz")

    static func plan(_ encoding: String?, state: StateSnapshot) throws -> PlanItem {
        let yaml = "name: t\nrefresh: 1d\n" + (encoding.map { "encoding: \($0)\n" } ?? "") + "resources:\n  - url: https://e.com/a.tar.gz\n"
        let feed = try #require(Self.decode(yaml).0)
        let input = PlanInput(feeds: [feed], state: state, cached: CachedFiles([key], in: [feed]), conditions: ConditionSnapshot(freeBytes: 1 << 40, freeSource: "test"),
                              now: Instant(seconds: 1_800_000_100))
        return try #require(Planner.plan(input).feeds.first?.items.first)
    }

    @Test func aChangedEncodingMakesTheCopyChanged() throws {
        let folder = try TemporaryFolder()
        let store = try StateStore.openForWriting(folder.path + "/state.db")
        let url = try ResourceURL.parse("https://e.com/a.tar.gz")
        for stored in EncodingMode.allCases {
            try store.recordValidated(Self.key, urlHash: url.identityHash, validators: Validators(etag: "\"e\""), length: 10, sha256: "00",
                                      placed: true, encoding: stored, at: Instant(seconds: 1_800_000_000))
            // A 304 keeps the encoding the copy was stored under.
            try store.recordValidated(Self.key, urlHash: url.identityHash, validators: Validators(etag: "\"e\""), length: nil, sha256: nil,
                                      placed: false, at: Instant(seconds: 1_800_000_050))
            let snapshot = try store.snapshot()
            #expect(snapshot.resources[Self.key]?.copyEncoding == stored)
            for wanted in [nil] + EncodingMode.allCases.map(\.rawValue) as [String?] {
                let item = try Self.plan(wanted, state: snapshot)
                let same = (wanted ?? "refuse") == stored.rawValue
                #expect(item.status == (same ? .fresh : .due), "stored \(stored), entry \(wanted ?? "(default)")")
                if !same { #expect(item.reason == "changed", "stored \(stored), entry \(wanted ?? "(default)")") }
            }
        }
    }

    /// The migration that adds the column (version 3 → 4, after the partials' version 3):
    /// copies placed before it were stored under the only behaviour there was, `refuse` (an
    /// encoded body was refused).
    @Test func aCopyRecordedBeforeTheColumnReadsAsRefuse() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        let db = try SQLiteConnection(path: path, readOnly: false)
        let previous = 3
        #expect(StateStore.migrations[previous].contains("ADD COLUMN copy_encoding"))
        for migration in StateStore.migrations.prefix(previous) { try db.execute(migration) }
        try db.execute("PRAGMA user_version = \(previous)")
        let hash = try ResourceURL.parse("https://e.com/a.tar.gz").identityHash
        try db.execute("""
            INSERT INTO resources (feed, path, url_hash, etag, length, sha256, placed_at, validated_at, last_success)
            VALUES ('t', 'a.tar.gz', '\(hash)', '"e"', 10, '00', 1800000000000000000, 1800000000000000000, 1800000000000000000)
            """)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        // A reader migrates in memory, and the file stays as it was.
        let read = try #require(try StateStore.openReadOnly(path)).snapshot()
        #expect(read.resources[Self.key]?.copyEncoding == .refuse)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        // A writer migrates the file.
        let snapshot = try StateStore.openForWriting(path).snapshot()
        #expect(snapshot.resources[Self.key]?.copyEncoding == .refuse)
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == StateStore.schemaVersion)
        #expect(try Self.plan(nil, state: snapshot).status == .fresh)
        #expect(try Self.plan("refuse", state: snapshot).status == .fresh)
        #expect(try Self.plan("keep", state: snapshot).reason == "changed")
    }
}
