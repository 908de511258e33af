import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// state.db files of every earlier schema version open: a writer migrates them in place, a
/// reader (`plan`, `status`) reads them migrated in memory and leaves the file as it was.
@Suite struct StateMigrationTests {
    static let url = try! ResourceURL.parse("https://cdn.example.com/loop/a.mp4?sig=OLD")
    static let moved = try! ResourceURL.parse("https://cdn.example.com/loop/b.mp4")

    /// A version 1 file as prefetch 0.x wrote it: whole seconds, URL hashes of the whole URL.
    static func versionOne(at path: String) throws {
        let db = try SQLiteConnection(path: path, readOnly: false)
        try db.execute(StateStore.migrations[0])
        try db.execute("PRAGMA user_version = 1")
        let hashA = url.legacyHash, hashB = moved.legacyHash
        try db.execute("""
            INSERT INTO feeds VALUES ('lobby', 1796000000, 1796000100, 1796000100, NULL, NULL);
            INSERT INTO resources (feed, path, url_hash, etag, length, sha256, placed_at, validated_at, last_success, failures,
                                   failure_release, permanent, next_retry)
                VALUES ('lobby', 'a.mp4', '\(hashA)', '"e1"', 42, NULL, 1796000050, 1796000060, 1796000060, 0, NULL, 0, NULL),
                       ('lobby', 'b.mp4', '\(hashB)', NULL, NULL, NULL, NULL, NULL, NULL, 2, 1796000000, 0, 1796000500);
            INSERT INTO partials VALUES ('lobby', 'c.mp4', 'abc', '"p"', NULL, 1000, 400, 1796000070);
            INSERT INTO runs (started_at, finished_at, body_bytes, transfer_seconds) VALUES (1796000000, 1796000100, 5, 1.5);
            """)
    }

    /// The manifest's URLs now: a.mp4 as it was, b.mp4 moved to another path. (A URL whose
    /// query alone changed since version 1 recorded it cannot be told from a moved one, since
    /// version 1 hashed the whole URL: it is fetched once more after the upgrade.)
    static func currentURL(_ key: ResourceKey) -> ResourceURL? {
        switch key.path {
        case "a.mp4": return url
        case "b.mp4": return try! ResourceURL.parse("https://cdn.example.com/elsewhere/b.mp4")
        default: return nil
        }
    }

    @Test func aVersionOneFileIsMigratedByAWriter() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        try Self.versionOne(at: path)
        let store = try StateStore.openForWriting(path, currentURL: Self.currentURL)
        let snapshot = try store.snapshot()
        let a = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "a.mp4")])
        // Seconds became nanoseconds.
        #expect(a.placedAt == Instant(seconds: 1_796_000_050) && a.validatedAt == Instant(seconds: 1_796_000_060))
        #expect(snapshot.feeds["lobby"] == FeedState(lastRelease: Instant(seconds: 1_796_000_000),
                                                    lastReleaseFinished: Instant(seconds: 1_796_000_100),
                                                    lastSuccess: Instant(seconds: 1_796_000_100)))
        // Same URL: re-keyed to the identity hash, so the copy stays current, also once the
        // query's token rotates.
        #expect(a.urlHash == Self.url.identityHash)
        #expect(try ResourceURL.parse("https://cdn.example.com/loop/a.mp4?sig=NEW-TOKEN").matches(recorded: a.urlHash))
        // A URL since changed keeps version 1's mark, which no current URL matches.
        let b = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "b.mp4")])
        #expect(b.urlHash == "v1:" + Self.moved.legacyHash)
        #expect(!Self.currentURL(ResourceKey(feed: "lobby", path: "b.mp4"))!.matches(recorded: b.urlHash))
        #expect(b.nextRetry == Instant(seconds: 1_796_000_500) && b.failureRelease == Instant(seconds: 1_796_000_000))
        // A partial of version 1 has no boot id or inode (it is trusted to its fsynced offset).
        let c = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "c.mp4")]?.partial)
        #expect(c.syncedOffset == 400 && c.bootID == nil && c.inode == nil && c.updatedAt == Instant(seconds: 1_796_000_070))
        // Reopened: nothing is migrated twice.
        let again = try StateStore.openForWriting(path, currentURL: Self.currentURL).snapshot()
        #expect(again.resources[ResourceKey(feed: "lobby", path: "a.mp4")]?.placedAt == Instant(seconds: 1_796_000_050))
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == StateStore.schemaVersion)
    }

    @Test func aReaderMigratesInMemoryAndLeavesTheFileAlone() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        try Self.versionOne(at: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let store = try #require(try StateStore.openReadOnly(path, currentURL: Self.currentURL))
        let snapshot = try store.snapshot()
        let a = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "a.mp4")])
        #expect(a.validatedAt == Instant(seconds: 1_796_000_060) && a.urlHash == Self.url.identityHash)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == 1)
    }

    /// The schema of each table, as SQLite describes it (columns in order, with types).
    static func schema(_ path: String) throws -> [String: [String]] {
        let db = try SQLiteConnection(path: path, readOnly: true)
        var tables: [String: [String]] = [:]
        let names = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        var list: [String] = []
        while try names.step() { list.append(names.text(0) ?? "") }
        for table in list {
            let columns = try db.prepare("PRAGMA table_info(\(table))")
            while try columns.step() { tables[table, default: []].append("\(columns.text(1) ?? "") \(columns.text(2) ?? "")") }
        }
        return tables
    }

    /// A file of every earlier version ends with the schema a new file gets: the same tables,
    /// the same columns — those the coming issues need (holds, counters, missed windows,
    /// removed feeds, generations, verification) included.
    @Test func everyEarlierVersionMigratesToTheSchemaANewFileGets() throws {
        let folder = try TemporaryFolder()
        let fresh = folder.path + "/fresh.db", old = folder.path + "/v1.db", empty = folder.path + "/v0.db"
        _ = try StateStore.openForWriting(fresh)
        try Self.versionOne(at: old)
        _ = try StateStore.openForWriting(old, currentURL: Self.currentURL)
        _ = try SQLiteConnection(path: empty, readOnly: false)  // version 0: an empty file
        _ = try StateStore.openForWriting(empty)
        let expected = try Self.schema(fresh)
        #expect(try Self.schema(old) == expected)
        #expect(try Self.schema(empty) == expected)
        for table in ["origin_holds", "counters", "generations"] { #expect(expected[table] != nil, "\(table)") }
        for column in ["missed_windows INTEGER", "removed_since INTEGER", "generation INTEGER"] {
            #expect(expected["feeds"]?.contains(column) == true, "feeds.\(column)")
        }
        #expect(expected["partials"]?.contains("boot_id TEXT") == true && expected["resources"]?.contains("verified_at INTEGER") == true)
    }

    /// Times keep their nanoseconds through a write and a read (SPEC §5: full precision).
    @Test func timesKeepFullPrecision() throws {
        let folder = try TemporaryFolder()
        let store = try StateStore.openForWriting(folder.path + "/state.db")
        let key = ResourceKey(feed: "f", path: "a")
        let first = Instant(nanoseconds: 1_796_000_000_123_456_789)
        try store.recordRelease(feed: "f", release: first)
        try store.recordValidated(key, urlHash: "h", validators: Validators(), length: 1, sha256: "00", placed: true,
                                  at: first.advanced(byNanoseconds: 1))
        try store.recordReleaseFinished(feed: "f", at: first.advanced(byNanoseconds: 2))
        let snapshot = try store.snapshot()
        #expect(snapshot.feeds["f"]?.lastRelease == first)
        #expect(snapshot.resources[key]?.validatedAt == first.advanced(byNanoseconds: 1))
        #expect(snapshot.feeds["f"]?.lastReleaseFinished == first.advanced(byNanoseconds: 2))
    }
}
