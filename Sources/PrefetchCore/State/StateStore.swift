/// `CACHE/.prefetch/state.db`: jobs, validators, attempts and history (SQLite, WAL).
///
/// The schema is versioned with `PRAGMA user_version`; `migrations[n]` takes version n to
/// n + 1. Readers (`plan`, `status`) open read-only and never create the file.
public final class StateStore {
    private let db: SQLiteConnection
    public let path: String

    /// The schema this build writes.
    public static let schemaVersion = migrations.count

    static let migrations: [String] = [
        """
        CREATE TABLE feeds (
            feed TEXT PRIMARY KEY,
            last_release INTEGER,
            last_release_finished INTEGER,
            last_success INTEGER,
            last_error TEXT,
            last_error_at INTEGER
        ) WITHOUT ROWID;
        CREATE TABLE resources (
            feed TEXT NOT NULL,
            path TEXT NOT NULL,
            url_hash TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            length INTEGER,
            sha256 TEXT,
            placed_at INTEGER,
            validated_at INTEGER,
            last_success INTEGER,
            last_error TEXT,
            last_error_at INTEGER,
            failures INTEGER NOT NULL DEFAULT 0,
            failure_release INTEGER,
            permanent INTEGER NOT NULL DEFAULT 0,
            next_retry INTEGER,
            PRIMARY KEY (feed, path)
        ) WITHOUT ROWID;
        CREATE TABLE partials (
            feed TEXT NOT NULL,
            path TEXT NOT NULL,
            url_hash TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            total_length INTEGER,
            synced_offset INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (feed, path)
        ) WITHOUT ROWID;
        CREATE TABLE metered_usage (
            feed TEXT NOT NULL,
            day TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            PRIMARY KEY (feed, day)
        ) WITHOUT ROWID;
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started_at INTEGER NOT NULL,
            finished_at INTEGER NOT NULL,
            body_bytes INTEGER NOT NULL,
            transfer_seconds REAL NOT NULL,
            placed INTEGER NOT NULL DEFAULT 0,
            fresh INTEGER NOT NULL DEFAULT 0,
            failed INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE attempts (
            id INTEGER PRIMARY KEY,
            feed TEXT NOT NULL,
            path TEXT NOT NULL,
            started_at INTEGER NOT NULL,
            finished_at INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            http_status INTEGER,
            outcome TEXT NOT NULL,
            error TEXT
        );
        CREATE INDEX attempts_by_resource ON attempts (feed, path, started_at);
        """,
    ]

    /// The state file inside a cache folder.
    public static func path(inCache cache: String) -> String {
        (cache.hasSuffix("/") ? cache : cache + "/") + ".prefetch/state.db"
    }

    private init(db: SQLiteConnection, path: String) {
        self.db = db
        self.path = path
    }

    /// Opens for reading only; nil when there is no state file yet (nothing is created).
    public static func openReadOnly(_ path: String) throws(SQLiteError) -> StateStore? {
        guard FileSystem.kind(of: path) == .regular else { return nil }
        let store = StateStore(db: try SQLiteConnection(path: path, readOnly: true), path: path)
        let version = try store.db.userVersion
        if version > schemaVersion {
            throw SQLiteError(code: 0, message: "state.db has schema \(version), newer than this prefetch (\(schemaVersion))")
        }
        if version < schemaVersion {
            // An older schema: read what exists; a writer migrates it on its next run.
            if version == 0 { return nil }
        }
        return store
    }

    /// Opens for writing, creating the file and migrating the schema as needed.
    public static func openForWriting(_ path: String) throws(SQLiteError) -> StateStore {
        let db = try SQLiteConnection(path: path, readOnly: false)
        try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        let version = try db.userVersion
        if version > schemaVersion {
            throw SQLiteError(code: 0, message: "state.db has schema \(version), newer than this prefetch (\(schemaVersion))")
        }
        for next in version..<schemaVersion {
            try db.transaction { () throws(SQLiteError) in
                try db.execute(migrations[next])
                try db.execute("PRAGMA user_version = \(next + 1)")
            }
        }
        return StateStore(db: db, path: path)
    }

    // MARK: Reading

    /// Everything the planner needs, in one read transaction.
    public func snapshot() throws(SQLiteError) -> StateSnapshot {
        let stamp = try db.changeStamp
        if let last = lastSnapshot, last.stamp == stamp { return last.snapshot }  // nothing written since
        let snapshot = try readSnapshot()
        lastSnapshot = (stamp, snapshot)
        return snapshot
    }

    private var lastSnapshot: (stamp: (Int64, Int64), snapshot: StateSnapshot)?

    /// Each feed's releases and last outcome (the `feeds` part of a snapshot, read alone).
    public func feedStates() throws(SQLiteError) -> [String: FeedState] {
        var states: [String: FeedState] = [:]
        let feeds = try db.prepare("SELECT feed, last_release, last_release_finished, last_success, last_error FROM feeds")
        while try feeds.step() {
            states[feeds.text(0) ?? ""] = FeedState(lastRelease: feeds.int(1), lastReleaseFinished: feeds.int(2),
                                                   lastSuccess: feeds.int(3), lastError: feeds.text(4))
        }
        return states
    }

    private func readSnapshot() throws(SQLiteError) -> StateSnapshot {
        var snapshot = StateSnapshot()
        snapshot.feeds = try feedStates()
        let resources = try db.prepare("""
            SELECT feed, path, url_hash, etag, last_modified, length, sha256, placed_at, validated_at,
                   last_success, last_error, failures, failure_release, permanent, next_retry FROM resources
            """)
        while try resources.step() {
            var state = ResourceState(urlHash: resources.text(2) ?? "")
            state.validators = Validators(etag: resources.text(3), lastModified: resources.text(4))
            state.length = resources.int(5).map { UInt64(bitPattern: $0) }
            state.sha256 = resources.text(6)
            state.placedAt = resources.int(7)
            state.validatedAt = resources.int(8)
            state.lastSuccess = resources.int(9)
            state.lastError = resources.text(10)
            state.failures = Int(resources.int(11) ?? 0)
            state.failureRelease = resources.int(12)
            state.permanentFailure = resources.int(13) == 1
            state.nextRetry = resources.int(14)
            snapshot.resources[ResourceKey(feed: resources.text(0) ?? "", path: resources.text(1) ?? "")] = state
        }
        let partials = try db.prepare("""
            SELECT feed, path, url_hash, etag, last_modified, total_length, synced_offset, updated_at FROM partials
            """)
        while try partials.step() {
            let key = ResourceKey(feed: partials.text(0) ?? "", path: partials.text(1) ?? "")
            let partial = PartialState(urlHash: partials.text(2) ?? "",
                                       validators: Validators(etag: partials.text(3), lastModified: partials.text(4)),
                                       totalLength: partials.int(5).map { UInt64(bitPattern: $0) },
                                       syncedOffset: UInt64(bitPattern: partials.int(6) ?? 0), updatedAt: partials.int(7) ?? 0)
            snapshot.resources[key, default: ResourceState(urlHash: partial.urlHash)].partial = partial
        }
        let metered = try db.prepare("SELECT feed, day, bytes FROM metered_usage")
        while try metered.step() {
            snapshot.meteredBytes[MeteredDay(feed: metered.text(0) ?? "", day: metered.text(1) ?? "")] =
                UInt64(bitPattern: metered.int(2) ?? 0)
        }
        let runs = try db.prepare("""
            SELECT body_bytes / transfer_seconds FROM runs
            WHERE body_bytes >= 1048576 AND transfer_seconds > 0 ORDER BY finished_at DESC LIMIT 20
            """)
        var rates: [Double] = []
        while try runs.step() { if let rate = runs.real(0) { rates.append(rate) } }
        if !rates.isEmpty {
            rates.sort()
            snapshot.throughput = rates.count % 2 == 1 ? rates[rates.count / 2] : (rates[rates.count / 2 - 1] + rates[rates.count / 2]) / 2
        }
        return snapshot
    }

    // MARK: Writing

    /// Records that a run began working on a release of `feed`.
    public func recordRelease(feed: String, release: Int64) throws(SQLiteError) {
        try db.run("""
            INSERT INTO feeds (feed, last_release) VALUES (?, ?)
            ON CONFLICT (feed) DO UPDATE SET last_release = excluded.last_release,
                last_release_finished = CASE WHEN feeds.last_release = excluded.last_release THEN feeds.last_release_finished END
            """, [.text(feed), .int(release)])
    }

    /// Records that the current release of `feed` finished at `time`.
    public func recordReleaseFinished(feed: String, at time: Int64) throws(SQLiteError) {
        try db.run("UPDATE feeds SET last_release_finished = ?, last_success = ? WHERE feed = ?", [.int(time), .int(time), .text(feed)])
    }

    /// Records a verified copy placed (or confirmed by a 304) at `time`; clears failures and,
    /// unless the caller knows there is none (`clearPartial: false`), the partial's record.
    /// A 304 (`placed: false`) keeps the placed copy's recorded length and sha256.
    public func recordValidated(_ key: ResourceKey, urlHash: String, validators: Validators, length: UInt64?,
                                sha256: String?, placed: Bool, at time: Int64, clearPartial: Bool = true) throws(SQLiteError) {
        func upsert() throws(SQLiteError) {
            try db.run("""
                INSERT INTO resources (feed, path, url_hash, etag, last_modified, length, sha256, placed_at, validated_at, last_success, failures, permanent)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)
                ON CONFLICT (feed, path) DO UPDATE SET url_hash = excluded.url_hash, etag = excluded.etag,
                    last_modified = excluded.last_modified,
                    length = CASE WHEN excluded.placed_at IS NULL THEN resources.length ELSE excluded.length END,
                    sha256 = CASE WHEN excluded.placed_at IS NULL THEN resources.sha256 ELSE excluded.sha256 END,
                    placed_at = COALESCE(excluded.placed_at, resources.placed_at), validated_at = excluded.validated_at,
                    last_success = excluded.last_success, last_error = NULL, last_error_at = NULL, failures = 0,
                    failure_release = NULL, permanent = 0, next_retry = NULL
                """, [.text(key.feed), .text(key.path), .text(urlHash), .optional(validators.etag), .optional(validators.lastModified),
                      .optional(length), .optional(sha256), placed ? .int(time) : .null, .int(time), .int(time)])
        }
        guard clearPartial else { return try upsert() }
        try db.transaction { () throws(SQLiteError) in
            try upsert()
            try db.run("DELETE FROM partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        }
    }

    /// Records a failed attempt within `release`. Failures of an older release do not count.
    ///
    /// When the manifest gave the resource a new URL, the record moves to it: the failures
    /// count for the new URL (the plan and the next runs honour them), and the old URL's
    /// validators and freshness are dropped, so they are never sent to the new one. The
    /// placed copy itself, its length and sha256 stay until the new URL delivers.
    public func recordFailure(_ key: ResourceKey, urlHash: String, release: Int64, error: String, permanent: Bool,
                              nextRetry: Int64?, at time: Int64) throws(SQLiteError) {
        try db.run("""
            INSERT INTO resources (feed, path, url_hash, last_error, last_error_at, failures, failure_release, permanent, next_retry)
            VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?)
            ON CONFLICT (feed, path) DO UPDATE SET last_error = excluded.last_error, last_error_at = excluded.last_error_at,
                failures = CASE WHEN resources.failure_release = excluded.failure_release AND resources.url_hash = excluded.url_hash
                                THEN resources.failures + 1 ELSE 1 END,
                failure_release = excluded.failure_release, permanent = excluded.permanent, next_retry = excluded.next_retry,
                etag = CASE WHEN resources.url_hash = excluded.url_hash THEN resources.etag END,
                last_modified = CASE WHEN resources.url_hash = excluded.url_hash THEN resources.last_modified END,
                validated_at = CASE WHEN resources.url_hash = excluded.url_hash THEN resources.validated_at END,
                url_hash = excluded.url_hash
            """, [.text(key.feed), .text(key.path), .text(urlHash), .text(error), .int(time), .int(release),
                  .int(permanent ? 1 : 0), .optional(nextRetry)])
    }

    /// Records (or replaces) the partial of a resource.
    public func recordPartial(_ key: ResourceKey, _ partial: PartialState) throws(SQLiteError) {
        try db.run("""
            INSERT OR REPLACE INTO partials (feed, path, url_hash, etag, last_modified, total_length, synced_offset, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(key.feed), .text(key.path), .text(partial.urlHash), .optional(partial.validators.etag),
                  .optional(partial.validators.lastModified), .optional(partial.totalLength),
                  .optional(partial.syncedOffset), .int(partial.updatedAt)])
    }

    /// Group commit: writes between `begin` and `commit` land together (the engine commits
    /// a few times a second rather than once per file).
    public func begin() throws(SQLiteError) { try db.begin() }
    public func commit() throws(SQLiteError) { try db.commit() }

    /// Forgets a partial (its file is gone or no longer trusted).
    public func deletePartial(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("DELETE FROM partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
    }

    /// Forgets everything about a resource (it left the manifest or expired).
    public func deleteResource(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("DELETE FROM resources WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        try deletePartial(key)
    }

    /// Records one attempt in the history.
    public func recordAttempt(_ key: ResourceKey, startedAt: Int64, finishedAt: Int64, bytes: UInt64, httpStatus: Int?,
                              outcome: String, error: String?) throws(SQLiteError) {
        try db.run("""
            INSERT INTO attempts (feed, path, started_at, finished_at, bytes, http_status, outcome, error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(key.feed), .text(key.path), .int(startedAt), .int(finishedAt), .optional(bytes),
                  httpStatus.map { .int(Int64($0)) } ?? .null, .text(outcome), .optional(error)])
    }

    /// How much history state.db keeps: the newest attempts and runs (ids grow with time).
    /// A kiosk revalidating 2,000 files an hour would otherwise add 48,000 rows a day, forever.
    public static let keptAttempts: Int64 = 100_000
    public static let keptRuns: Int64 = 10_000

    /// Drops history beyond the newest `attempts` attempts and `runs` runs (a range delete
    /// on the rowid: cheap however long the table).
    public func pruneHistory(attempts: Int64 = keptAttempts, runs: Int64 = keptRuns) throws(SQLiteError) {
        try db.run("DELETE FROM attempts WHERE id <= (SELECT MAX(id) FROM attempts) - ?", [.int(attempts)])
        try db.run("DELETE FROM runs WHERE id <= (SELECT MAX(id) FROM runs) - ?", [.int(runs)])
    }

    /// Adds bytes moved over a metered link to a feed's local day.
    public func addMeteredBytes(_ day: MeteredDay, _ bytes: UInt64) throws(SQLiteError) {
        try db.run("""
            INSERT INTO metered_usage (feed, day, bytes) VALUES (?, ?, ?)
            ON CONFLICT (feed, day) DO UPDATE SET bytes = metered_usage.bytes + excluded.bytes
            """, [.text(day.feed), .text(day.day), .optional(bytes)])
    }

    /// Records a finished run and its transfer throughput.
    public func recordRun(startedAt: Int64, finishedAt: Int64, bodyBytes: UInt64, transferSeconds: Double,
                          placed: Int, fresh: Int, failed: Int) throws(SQLiteError) {
        try db.run("""
            INSERT INTO runs (started_at, finished_at, body_bytes, transfer_seconds, placed, fresh, failed)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.int(startedAt), .int(finishedAt), .optional(bodyBytes), .real(transferSeconds),
                  .int(Int64(placed)), .int(Int64(fresh)), .int(Int64(failed))])
    }
}
