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

    /// Version 6 → 7 (SPEC §9): a copy recorded before keeps everything and has no inode or
    /// mtime (its file is then hashed before it is trusted), copies are found by SHA-256, and
    /// an older generation's file recorded in `kept_files` is found too.
    @Test func aVersionSixFileGetsLocalSources() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        let db = try SQLiteConnection(path: path, readOnly: false)
        for step in StateStore.migrations.prefix(6) { try db.execute(step) }
        try db.execute("PRAGMA user_version = 6")
        let sha = String(repeating: "ab", count: 32)
        try db.execute("""
            INSERT INTO resources (feed, path, url_hash, etag, length, sha256, placed_at, validated_at, last_success, failures, permanent)
                VALUES ('lobby', 'a.mp4', 'h', '"e1"', 42, '\(sha)', 1796000050000000000, 1796000060000000000, 1796000060000000000, 0, 0);
            """)
        let store = try StateStore.openForWriting(path)
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == StateStore.schemaVersion)
        let a = try #require(try store.snapshot().resources[ResourceKey(feed: "lobby", path: "a.mp4")])
        #expect(a.sha256 == sha && a.length == 42 && a.validators.etag == "\"e1\"")
        let found = try store.localSources(sha256: sha, length: nil)
        #expect(found == [LocalSourceRecord(key: ResourceKey(feed: "lobby", path: "a.mp4"), length: 42, inode: nil, mtime: nil, servedBy: "h",
                                            validators: Validators(etag: "\"e1\""), kept: false)])
        #expect(try store.localSources(sha256: sha, length: 43).isEmpty, "the entry's size must match")
        #expect(try store.fileIdentity(ResourceKey(feed: "lobby", path: "a.mp4")) == nil, "no inode recorded: hashed before trusted")
        try store.recordPinnedValidated(ResourceKey(feed: "lobby", path: "a.mp4"), at: Instant(seconds: 1_796_000_100),
                                        file: FileIdentity(inode: 7, mtime: Instant(seconds: 1_796_000_050), size: 42))
        try store.keepReplaced(ResourceKey(feed: "lobby", path: "a.mp4"))
        #expect(try store.keptSources(sha256: sha, length: 42).map(\.inode) == [7])
        try store.forgetFeed("lobby")
        #expect(try store.localSources(sha256: sha, length: nil).isEmpty, "a removed feed's files are no sources")
    }

    /// Version 7 → 8 (SPEC §9, deltas): a copy recorded before keeps everything and has no
    /// SHA-1 (read once from its file when its entry has `zsync`); a SHA-1 recorded holds only
    /// while the file is the one recorded; control files' validators are kept by URL.
    @Test func aVersionSevenFileGetsDeltas() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        let db = try SQLiteConnection(path: path, readOnly: false)
        for step in StateStore.migrations.prefix(7) { try db.execute(step) }
        try db.execute("PRAGMA user_version = 7")
        try db.execute("""
            INSERT INTO resources (feed, path, url_hash, etag, length, sha256, placed_at, validated_at, last_success, failures, permanent, inode, mtime)
                VALUES ('lobby', 'a.img', 'h', '"e1"', 42, NULL, 1796000050000000000, 1796000060000000000, 1796000060000000000, 0, 0, 7,
                        1796000050000000000);
            """)
        let store = try StateStore.openForWriting(path)
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == StateStore.schemaVersion)
        let key = ResourceKey(feed: "lobby", path: "a.img")
        #expect(try #require(try store.snapshot().resources[key]).validators.etag == "\"e1\"")
        let file = FileIdentity(inode: 7, mtime: Instant(seconds: 1_796_000_050), size: 42)
        #expect(try store.copySHA1(key, file: file) == nil, "no SHA-1 recorded before version 8")
        let sha1 = String(repeating: "5a", count: 20)
        try store.recordCopySHA1(key, sha1)
        #expect(try store.copySHA1(key, file: file) == sha1)
        #expect(try store.copySHA1(key, file: FileIdentity(inode: 8, mtime: file.mtime, size: 42)) == nil, "another file: not trusted")
        #expect(try store.copySHA1(key, file: FileIdentity(inode: 7, mtime: file.mtime, size: 43)) == nil, "another size: not trusted")
        #expect(try store.controlFile("http://o/a.img.zsync") == nil)
        try store.recordControlFile("http://o/a.img.zsync", validators: Validators(etag: "\"z\""), sha1: sha1, length: 640)
        #expect(try store.controlFile("http://o/a.img.zsync")?.validators.etag == "\"z\"")
        #expect(try store.controlFile("http://o/a.img.zsync")?.sha1 == sha1 && store.controlFile("http://o/a.img.zsync")?.length == 640)
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

    /// A version 2 file, as the build before §7's resumable rule wrote it: a copy placed with
    /// a Last-Modified only, one with a strong ETag, one fetched never (a failure only), and
    /// two partials (a strong ETag; a Last-Modified only).
    static func versionTwo(at path: String) throws {
        let db = try SQLiteConnection(path: path, readOnly: false)
        try db.execute(StateStore.migrations[0])
        try db.execute(StateStore.migrations[1])
        try db.execute("PRAGMA user_version = 2")
        try db.execute("""
            INSERT INTO resources (feed, path, url_hash, etag, last_modified, length, placed_at, validated_at, failures, permanent)
                VALUES ('f', 'dated.bin', 'h1', NULL, 'Sun, 01 Mar 2026 10:00:00 GMT', 5000, 1796000000000000000, 1796000000000000000, 0, 0),
                       ('f', 'tagged.bin', 'h2', '"t1"', NULL, 6000, 1796000000000000000, 1796000000000000000, 0, 0);
            INSERT INTO resources (feed, path, url_hash, failures, permanent, last_error) VALUES ('f', 'never.bin', 'h3', 1, 0, 'HTTP 503');
            INSERT INTO partials (feed, path, url_hash, etag, last_modified, total_length, synced_offset, updated_at, boot_id, inode)
                VALUES ('f', 'p-tag.bin', 'h4', '"p1"', NULL, 1000, 400, 0, 'b', 7),
                       ('f', 'p-date.bin', 'h5', NULL, 'Sun, 01 Mar 2026 10:00:00 GMT', 1000, 400, 0, 'b', 8);
            """)
    }

    /// 2 → 3 (SPEC §7's one resumable rule): what the rule reads of a response, for partials
    /// and for each resource's last 2xx response. Older records are judged conservatively: a
    /// placed copy's validators become its last response with no Date, so a Last-Modified
    /// alone is weak (§6's deadline rule may hold it back), while a strong ETag still
    /// resumes; a resource never placed has no response recorded ("never fetched"); a
    /// partial with a Last-Modified only cannot resume (no Date), one with a strong ETag can.
    @Test func aVersionTwoFileGetsTheResumableRulesFacts() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        try Self.versionTwo(at: path)
        let read = try #require(try StateStore.openReadOnly(path)).snapshot()  // a reader, in memory
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == 2)
        let snapshot = try StateStore.openForWriting(path).snapshot()
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == StateStore.schemaVersion)
        for state in [read, snapshot] {
            let dated = try #require(state.resources[ResourceKey(feed: "f", path: "dated.bin")])
            #expect(dated.lastResponse == ResponseFacts(lastModified: "Sun, 01 Mar 2026 10:00:00 GMT"))
            #expect(dated.lastResponseLength == 5000)
            #expect(ResumeRule.judge(dated.lastResponse!, sha256Given: false, encoding: .refuse) == .restart(.weakDate))
            let tagged = try #require(state.resources[ResourceKey(feed: "f", path: "tagged.bin")])
            #expect(ResumeRule.judge(tagged.lastResponse!, sha256Given: false, encoding: .refuse) == .resume(ifRange: "\"t1\""))
            #expect(state.resources[ResourceKey(feed: "f", path: "never.bin")]?.lastResponse == nil)
            let tag = try #require(state.resources[ResourceKey(feed: "f", path: "p-tag.bin")]?.partial)
            #expect(tag.date == nil && !tag.acceptRangesNone && tag.contentEncoding == nil)
            #expect(ResumeRule.judge(tag.response, sha256Given: false, encoding: .refuse) == .resume(ifRange: "\"p1\""))
            let date = try #require(state.resources[ResourceKey(feed: "f", path: "p-date.bin")]?.partial)
            #expect(ResumeRule.judge(date.response, sha256Given: false, encoding: .refuse) == .restart(.weakDate))
            #expect(ResumeRule.judge(date.response, sha256Given: true, encoding: .refuse) == .resume(ifRange: nil))
        }
        // Written and read back: the facts of a new partial and of a last response.
        let store = try StateStore.openForWriting(path)
        let key = ResourceKey(feed: "f", path: "new.bin")
        try store.recordPartial(key, PartialState(urlHash: "h6", validators: Validators(etag: "W/\"w\"", lastModified: "Tue, 01 Dec 2026 10:00:00 GMT"),
                                                  totalLength: 9, syncedOffset: 3, updatedAt: 1, bootID: "b", inode: 9, date: "Tue, 01 Dec 2026 10:00:00 GMT",
                                                  acceptRangesNone: true, contentEncoding: "gzip"))
        let facts = ResponseFacts(etag: "W/\"w\"", lastModified: "Tue, 01 Dec 2026 10:00:00 GMT", date: "Tue, 01 Dec 2026 10:00:00 GMT",
                                  acceptRangesNone: true, contentEncoding: "gzip")
        try store.recordResponse(key, urlHash: "h6", facts, length: 9, at: 5)
        let after = try store.snapshot().resources[key]
        #expect(after?.partial?.response == facts)
        #expect(after?.lastResponse == facts && after?.lastResponseLength == 9)
        // A 304 keeps the last response; a placement replaces it.
        try store.recordValidated(key, urlHash: "h6", validators: Validators(), length: nil, sha256: nil, placed: false, at: 6)
        #expect(try store.snapshot().resources[key]?.lastResponse == facts)
        try store.recordValidated(key, urlHash: "h6", validators: Validators(etag: "\"s\""), length: 11, sha256: "00", placed: true, at: 7,
                                  response: ResponseFacts(etag: "\"s\""))
        #expect(try store.snapshot().resources[key]?.lastResponse == ResponseFacts(etag: "\"s\""))
        #expect(try store.snapshot().resources[key]?.lastResponseLength == 11)
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
