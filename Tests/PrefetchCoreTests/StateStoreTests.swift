import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// state.db: schema, migrations, and a round trip through the snapshot the planner reads.
@Suite struct StateStoreTests {
    @Test func roundTrip() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        #expect(try StateStore.openReadOnly(path) == nil)  // readers never create it
        #expect(!FileManager.default.fileExists(atPath: path))

        let store = try StateStore.openForWriting(path)
        let key = ResourceKey(feed: "lobby", path: "loop/intro.mp4")
        try store.recordRelease(feed: "lobby", release: 1000)
        try store.recordValidated(key, urlHash: "h1", validators: Validators(etag: "\"abc\"", lastModified: "Sun, 29 Nov 2026 10:00:00 GMT"),
                                  length: 42, sha256: "00", placed: true, at: 1100)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "b"), urlHash: "h2", entry: "e-h2", release: 1000, error: "HTTP 503",
                                permanent: false, nextRetry: 1300, at: 1200)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "b"), urlHash: "h2", entry: "e-h2", release: 1000, error: "HTTP 503",
                                permanent: false, nextRetry: 1400, at: 1250)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "c"), urlHash: "h3", entry: "e-h3", release: 900, error: "old", permanent: false, nextRetry: nil, at: 950)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "c"), urlHash: "h3", entry: "e-h3", release: 1000, error: "HTTP 404", permanent: true, nextRetry: nil, at: 1150)
        try store.recordPartial(ResourceKey(feed: "lobby", path: "d"), PartialState(urlHash: "h4", validators: Validators(etag: "\"p\""),
                                                                                  totalLength: 100, syncedOffset: 40, updatedAt: 1200))
        try store.addMeteredBytes(MeteredDay(feed: "lobby", day: "2026-11-29"), 10)
        try store.addMeteredBytes(MeteredDay(feed: "lobby", day: "2026-11-29"), 5)
        for (bytes, seconds) in [(10 << 20, 10.0), (30 << 20, 10.0), (20 << 20, 10.0)] {
            try store.recordRun(startedAt: 0, finishedAt: 10, bodyBytes: UInt64(bytes), transferSeconds: seconds, placed: 1, fresh: 0, failed: 0)
        }
        try store.recordReleaseFinished(feed: "lobby", at: 1500)

        let snapshot = try #require(try StateStore.openReadOnly(path)).snapshot()
        #expect(snapshot.feeds["lobby"] == FeedState(lastRelease: 1000, lastReleaseFinished: 1500, lastSuccess: 1500))
        let placed = try #require(snapshot.resources[key])
        #expect(placed.validators == Validators(etag: "\"abc\"", lastModified: "Sun, 29 Nov 2026 10:00:00 GMT"))
        #expect(placed.length == 42 && placed.placedAt == 1100 && placed.validatedAt == 1100 && placed.failures == 0)
        let retried = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "b")])
        #expect(retried.failures == 2 && retried.nextRetry == 1400 && retried.failureRelease == 1000 && retried.lastError == "HTTP 503")
        let newRelease = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "c")])
        #expect(newRelease.failures == 1 && newRelease.permanentFailure)  // counting starts again at a release
        #expect(snapshot.resources[ResourceKey(feed: "lobby", path: "d")]?.partial?.syncedOffset == 40)
        #expect(snapshot.meteredBytes[MeteredDay(feed: "lobby", day: "2026-11-29")] == 15)
        #expect(snapshot.throughput == Double(2 << 20))  // median of 1, 2 and 3 MiB/s

        // A 304 confirms the copy: its validators and time change, its length and sha256 stay.
        try store.recordValidated(key, urlHash: "h1", validators: Validators(etag: "\"abd\""), length: nil, sha256: nil, placed: false, at: 1700)
        let confirmed = try #require(try store.snapshot().resources[key])
        #expect(confirmed.length == 42 && confirmed.sha256 == placed.sha256 && confirmed.placedAt == 1100 && confirmed.validatedAt == 1700)
        #expect(confirmed.validators == Validators(etag: "\"abd\""))
        // A new copy placed without a sha256 to check records none.
        try store.recordValidated(key, urlHash: "h1", validators: Validators(), length: 7, sha256: nil, placed: true, at: 1800)
        let replaced = try #require(try store.snapshot().resources[key])
        #expect(replaced.length == 7 && replaced.sha256 == nil && replaced.placedAt == 1800)

        // A success clears the failure record and the partial.
        try store.recordValidated(ResourceKey(feed: "lobby", path: "d"), urlHash: "h4", validators: Validators(), length: 100,
                                  sha256: nil, placed: true, at: 1600)
        let after = try store.snapshot()
        #expect(after.resources[ResourceKey(feed: "lobby", path: "d")]?.partial == nil)
    }

    /// `hasPartials` (a stop reads the snapshot only when it is true) says what the
    /// snapshot says, with a snapshot kept and without one.
    @Test func hasPartialsFollowsThePartialsTable() throws {
        let folder = try TemporaryFolder()
        let store = try StateStore.openForWriting(folder.path + "/state.db")
        let key = ResourceKey(feed: "lobby", path: "d")
        #expect(try !store.hasPartials())
        try store.recordPartial(key, PartialState(urlHash: "h4", validators: Validators(etag: "\"p\""), totalLength: 100, syncedOffset: 40, updatedAt: 1200))
        #expect(try store.hasPartials())
        _ = try store.snapshot()
        #expect(try store.hasPartials())  // from the snapshot kept
        store.forgetSnapshot()
        #expect(try store.hasPartials())  // from the table
        try store.recordValidated(key, urlHash: "h4", validators: Validators(), length: 100, sha256: nil, placed: true, at: 1600)
        #expect(try !store.hasPartials())
        _ = try store.snapshot()
        #expect(try !store.hasPartials())
    }

    @Test func historyIsBounded() throws {
        let folder = try TemporaryFolder()
        let store = try StateStore.openForWriting(folder.path + "/state.db")
        for i in 0..<25 {
            try store.recordAttempt(ResourceKey(feed: "f", path: "p\(i)"), startedAt: Instant(seconds: Int64(i)), finishedAt: Instant(seconds: Int64(i)), bytes: 1,
                                    httpStatus: 200, outcome: "placed", error: nil)
            try store.recordRun(startedAt: Instant(seconds: Int64(i)), finishedAt: Instant(seconds: Int64(i)), bodyBytes: 1, transferSeconds: 1, placed: 1, fresh: 0, failed: 0)
        }
        try store.pruneHistory(attempts: 10, runs: 3)
        let db = try SQLiteConnection(path: folder.path + "/state.db", readOnly: true)
        let attempts = try db.prepare("SELECT COUNT(*), MIN(started_at), MAX(started_at) FROM attempts")
        #expect(try attempts.step())
        #expect([attempts.int(0), attempts.int(1).map { $0 / 1_000_000_000 }, attempts.int(2).map { $0 / 1_000_000_000 }] == [10, 15, 24])  // the newest ten
        let runs = try db.prepare("SELECT COUNT(*), MIN(started_at) FROM runs")
        #expect(try runs.step())
        #expect([runs.int(0), runs.int(1).map { $0 / 1_000_000_000 }] == [3, 22])
    }

    @Test func theSnapshotFollowsEveryWrite() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        let store = try StateStore.openForWriting(path)
        #expect(try store.snapshot().feeds.isEmpty)
        try store.recordRelease(feed: "a", release: 1)  // this connection
        #expect(try store.snapshot().feeds["a"]?.lastRelease == 1)
        let other = try StateStore.openForWriting(path)  // another writer (another process, as far as SQLite knows)
        try other.recordRelease(feed: "b", release: 2)
        #expect(try store.snapshot().feeds["b"]?.lastRelease == 2)
        let unchanged = try store.snapshot()
        #expect(unchanged.feeds.count == 2)
    }

    @Test func aNewerSchemaIsRefused() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.db"
        _ = try StateStore.openForWriting(path)
        let db = try SQLiteConnection(path: path, readOnly: false)
        try db.execute("PRAGMA user_version = 99")
        #expect(throws: SQLiteError.self) { try StateStore.openReadOnly(path) }
        #expect(throws: SQLiteError.self) { try StateStore.openForWriting(path) }
    }

    @Test func garbageIsAnError() throws {
        let folder = try TemporaryFolder()
        let path = try folder.write("state.db", "this is not a database, just text that is long enough to have a header......")
        #expect(throws: SQLiteError.self) { try StateStore.openReadOnly(path)?.snapshot() }
    }

    /// A 304 (`placed: false`, no response) changes exactly what it confirms — the URL's
    /// record, the validators, when it was validated and succeeded — and clears the failure
    /// record; the copy's length, sha256, encoding, placement and last 2xx response stay.
    /// Over every kind of row before it (a placed copy with a response, one failing, a
    /// permanent failure under another URL, none at all), against the rule written out here.
    @Test func a304ChangesOnlyWhatItConfirms() throws {
        let folder = try TemporaryFolder()
        let store = try StateStore.openForWriting(folder.path + "/state.db")
        let response = ResponseFacts(etag: "\"r\"", lastModified: nil, date: "Sun, 29 Nov 2026 10:00:00 GMT", acceptRangesNone: true,
                                     contentEncoding: "gzip")
        let placed = ResourceKey(feed: "f", path: "placed"), failing = ResourceKey(feed: "f", path: "failing")
        let moved = ResourceKey(feed: "f", path: "moved"), fresh = ResourceKey(feed: "f", path: "new")
        try store.recordValidated(placed, urlHash: "h", validators: Validators(etag: "\"a\""), length: 10, sha256: "00", placed: true,
                                  encoding: .keep, at: 100, response: response)
        try store.recordValidated(failing, urlHash: "h", validators: Validators(etag: "\"a\""), length: 10, sha256: "00", placed: true, at: 100)
        try store.recordFailure(failing, urlHash: "h", entry: "e", release: 150, error: "HTTP 503", permanent: false, nextRetry: 300, at: 200)
        try store.recordValidated(moved, urlHash: "old", validators: Validators(), length: 3, sha256: "11", placed: true, at: 100)
        try store.recordFailure(moved, urlHash: "h", entry: "e2", release: 150, error: "HTTP 404", permanent: true, nextRetry: nil, at: 200)
        let before = try store.snapshot().resources
        let validators = Validators(etag: "\"b\"", lastModified: "Mon, 30 Nov 2026 10:00:00 GMT")
        for key in [placed, failing, moved, fresh] {
            try store.recordValidated(key, urlHash: "h", validators: validators, length: nil, sha256: nil, placed: false, at: 500)
        }
        let after = try store.snapshot().resources
        for key in [placed, failing, moved] {
            var expected = try #require(before[key])
            expected.urlHash = "h"
            expected.validators = validators
            expected.validatedAt = 500
            expected.lastSuccess = 500
            expected.lastError = nil
            expected.failures = 0
            expected.failureRelease = nil
            expected.permanentFailure = false
            expected.nextRetry = nil
            expected.failureEntry = nil
            #expect(after[key] == expected, "\(key.path)")
        }
        let inserted = try #require(after[fresh])
        #expect(inserted.validators == validators && inserted.validatedAt == 500 && inserted.placedAt == nil && inserted.length == nil)
        #expect(after[placed]?.lastResponse?.contentEncoding == "gzip" && after[placed]?.copyEncoding == .keep)
    }
}
