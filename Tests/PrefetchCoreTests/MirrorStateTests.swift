import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// state.db schema 6 (SPEC §8): which listed URL served a copy, and each other URL's own
/// validators of that copy, kept only while the copy has the bytes they describe.
@Suite struct MirrorStateTests {
    static let key = ResourceKey(feed: "t", path: "a.bin")
    static let url = String(repeating: "a", count: 64), b = String(repeating: "b", count: 64), c = String(repeating: "c", count: 64)
    static let one = String(repeating: "1", count: 64), two = String(repeating: "2", count: 64)

    static func read(_ path: String) throws -> ResourceState {
        let store = try #require(try StateStore.openReadOnly(path))
        return try #require(try store.snapshot().resources[key])
    }

    @Test func eachURLKeepsItsOwnValidatorsForTheSameBytes() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        let store = try StateStore.openForWriting(path)
        let byB = MirrorURL(hash: Self.b, shown: "https://b/a.bin", servedCopy: false)
        // Placed from mirror b: the row's validators are b's, served_by names b.
        try store.recordValidated(Self.key, urlHash: Self.url, validators: Validators(etag: "\"b1\""), length: 3, sha256: Self.one,
                                  placed: true, at: 100, answeredBy: byB)
        var state = try Self.read(path)
        #expect(state.urlHash == Self.url, "the entry's url stays the record's: serving from a mirror is no change")
        #expect(state.servedBy == ServedBy(hash: Self.b, shown: "https://b/a.bin") && state.validators.etag == "\"b1\"")
        // A 304 from url (not the URL that served the copy): url's own validators beside b's.
        try store.recordValidated(Self.key, urlHash: Self.url, validators: Validators(etag: "\"u1\""), length: nil, sha256: nil,
                                  placed: false, at: 200, answeredBy: MirrorURL(hash: Self.url, shown: nil, servedCopy: false))
        state = try Self.read(path)
        #expect(state.validators.etag == "\"b1\"" && state.servedBy?.hash == Self.b && state.validatedAt == 200)
        #expect(state.servedBy?.validators[Self.url] == Validators(etag: "\"u1\""))
        // A 304 from b, which served it: the row's validators are renewed.
        try store.recordValidated(Self.key, urlHash: Self.url, validators: Validators(etag: "\"b2\""), length: nil, sha256: nil,
                                  placed: false, at: 300, answeredBy: MirrorURL(hash: Self.b, shown: "https://b/a.bin", servedCopy: true))
        state = try Self.read(path)
        #expect(state.validators.etag == "\"b2\"" && state.servedBy?.hash == Self.b && state.servedBy?.validators[Self.url]?.etag == "\"u1\"")
        // Placed again from c with the same bytes: b's validators are kept for b, url's stay.
        try store.recordValidated(Self.key, urlHash: Self.url, validators: Validators(etag: "\"c1\""), length: 3, sha256: Self.one,
                                  placed: true, at: 400, answeredBy: MirrorURL(hash: Self.c, shown: "https://c/a.bin", servedCopy: false))
        state = try Self.read(path)
        #expect(state.servedBy?.hash == Self.c && state.validators.etag == "\"c1\"")
        #expect(state.servedBy?.validators[Self.b]?.etag == "\"b2\"" && state.servedBy?.validators[Self.url]?.etag == "\"u1\"")
        #expect(state.servedBy?.validators[Self.c] == nil, "the server's own are the row's")
        // Placed from url with other bytes: every other URL's validators described the old copy.
        try store.recordValidated(Self.key, urlHash: Self.url, validators: Validators(etag: "\"u2\""), length: 3, sha256: Self.two,
                                  placed: true, at: 500, answeredBy: MirrorURL(hash: Self.url, shown: nil, servedCopy: false))
        state = try Self.read(path)
        #expect(state.servedBy == nil, "url served it, and no other URL's validators are of these bytes: \(String(describing: state.servedBy))")
        #expect(state.validators.etag == "\"u2\"")
        // Placed from b, then the mirrors dropped: a 304 of url without `answeredBy` (a resource
        // without mirrors) makes url the URL the row's validators are of.
        try store.recordValidated(Self.key, urlHash: Self.url, validators: Validators(etag: "\"b3\""), length: 3, sha256: Self.two,
                                  placed: true, at: 600, answeredBy: byB)
        try store.recordValidated(Self.key, urlHash: Self.url, validators: Validators(etag: "\"u3\""), length: nil, sha256: nil,
                                  placed: false, at: 700)
        state = try Self.read(path)
        #expect(state.servedBy?.hash == nil && state.validators.etag == "\"u3\"", "\(String(describing: state.servedBy))")
        // Forgetting the resource forgets its URLs' validators.
        try store.deleteResource(Self.key)
        let after = try #require(try StateStore.openReadOnly(path))
        #expect(try after.snapshot().resources[Self.key] == nil)
    }

    @Test func aPartialRecordsTheURLItWasBegunAt() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        let store = try StateStore.openForWriting(path)
        try store.recordPartial(Self.key, PartialState(urlHash: Self.url, validators: Validators(etag: "\"b\""), totalLength: 10,
                                                       syncedOffset: 4, updatedAt: 1, servedBy: Self.b))
        #expect(try Self.read(path).partial?.servedBy == Self.b)
        try store.recordPartial(Self.key, PartialState(urlHash: Self.url, validators: Validators(), totalLength: 10, syncedOffset: 5, updatedAt: 2))
        #expect(try Self.read(path).partial?.servedBy == nil)
    }

    /// Schema 5 → 6: every copy and partial recorded before was served by its entry's `url`;
    /// a reader migrates in memory, a writer the file.
    @Test func copiesRecordedBeforeWereServedByTheirURL() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        let db = try SQLiteConnection(path: path, readOnly: false)
        let previous = 5
        #expect(StateStore.migrations[previous].contains("CREATE TABLE url_validators"))
        for migration in StateStore.migrations.prefix(previous) { try db.execute(migration) }
        try db.execute("PRAGMA user_version = \(previous)")
        try db.execute("""
            INSERT INTO resources (feed, path, url_hash, etag, length, sha256, placed_at, validated_at, last_success)
            VALUES ('t', 'a.bin', '\(Self.url)', '"e"', 3, '\(Self.one)', 1800000000000000000, 1800000000000000000, 1800000000000000000);
            INSERT INTO partials (feed, path, url_hash, synced_offset, updated_at) VALUES ('t', 'b.bin', '\(Self.url)', 1, 1);
            """)
        let read = try #require(try StateStore.openReadOnly(path)).snapshot()
        #expect(read.resources[Self.key]?.servedBy == nil && read.resources[Self.key]?.validators.etag == "\"e\"")
        let snapshot = try StateStore.openForWriting(path).snapshot()
        #expect(snapshot.resources[Self.key]?.servedBy == nil)
        #expect(snapshot.resources[ResourceKey(feed: "t", path: "b.bin")]?.partial?.servedBy == nil)
        #expect(try SQLiteConnection(path: path, readOnly: true).userVersion == StateStore.schemaVersion)
    }
}
