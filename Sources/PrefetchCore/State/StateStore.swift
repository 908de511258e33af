/// `CACHE/.prefetch/state.db`: jobs, validators, attempts and history (SQLite, WAL).
///
/// The schema is versioned with `PRAGMA user_version`; `migrations[n]` takes version n to
/// n + 1. Readers (`plan`, `status`) open read-only and never create the file; an older
/// file is migrated in a private in-memory copy for them, never on disk.
///
/// Times are nanoseconds since the epoch (`Instant`): compared at full precision (SPEC §5).
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
        // 1 → 2: times at full precision (seconds become nanoseconds); what a partial's
        // trust needs (the boot and the inode that wrote it); the manifest entry a failure
        // belongs to (a changed entry starts its attempts afresh). URL hashes of version 1
        // covered the whole URL, query included; version 2's leave the query out (a signed
        // URL's rotating token is no change): old ones are marked `v1:` and re-keyed by the
        // first writer that has the manifests (`rekey`).
        """
        UPDATE feeds SET last_release = last_release * 1000000000,
            last_release_finished = last_release_finished * 1000000000,
            last_success = last_success * 1000000000, last_error_at = last_error_at * 1000000000;
        UPDATE resources SET placed_at = placed_at * 1000000000, validated_at = validated_at * 1000000000,
            last_success = last_success * 1000000000, last_error_at = last_error_at * 1000000000,
            failure_release = failure_release * 1000000000, next_retry = next_retry * 1000000000,
            url_hash = 'v1:' || url_hash;
        UPDATE partials SET updated_at = updated_at * 1000000000, url_hash = 'v1:' || url_hash;
        UPDATE runs SET started_at = started_at * 1000000000, finished_at = finished_at * 1000000000;
        UPDATE attempts SET started_at = started_at * 1000000000, finished_at = finished_at * 1000000000;
        ALTER TABLE resources ADD COLUMN failure_entry TEXT;
        ALTER TABLE partials ADD COLUMN boot_id TEXT;
        ALTER TABLE partials ADD COLUMN inode INTEGER;
        -- What a fleet's operation needs (SPEC §6), here from the start so that it adds
        -- behaviour, not migrations: windows missed in a row and why (starvation); when a
        -- feed's manifest was first found gone (removed feeds' grace); its live generation
        -- (consistency: release); when a copy was last re-hashed (verify); origins held
        -- after connection failures and 429/5xx; counters that never go back (metrics);
        -- release generations.
        ALTER TABLE feeds ADD COLUMN missed_windows INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE feeds ADD COLUMN missed_reason TEXT;
        ALTER TABLE feeds ADD COLUMN last_missed INTEGER;
        ALTER TABLE feeds ADD COLUMN removed_since INTEGER;
        ALTER TABLE feeds ADD COLUMN generation INTEGER;
        ALTER TABLE resources ADD COLUMN verified_at INTEGER;
        CREATE TABLE origin_holds (
            origin TEXT PRIMARY KEY,
            until INTEGER NOT NULL,
            reason TEXT NOT NULL,
            since INTEGER NOT NULL,
            failures INTEGER NOT NULL DEFAULT 1
        ) WITHOUT ROWID;
        CREATE TABLE counters (
            feed TEXT NOT NULL,
            name TEXT NOT NULL,
            value INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (feed, name)
        ) WITHOUT ROWID;
        CREATE TABLE generations (
            feed TEXT NOT NULL,
            number INTEGER NOT NULL,
            created INTEGER NOT NULL,
            switched INTEGER,
            PRIMARY KEY (feed, number)
        ) WITHOUT ROWID;
        """,
        // 2 → 3: what SPEC §7's one resumable rule reads of a response (`ResumeRule`): its
        // Date (a Last-Modified is strong only 60 s before it), Accept-Ranges: none and
        // Content-Encoding — of the response that began each partial, and of each
        // resource's last 2xx response (§6's deadline rule), with when that was recorded
        // (NULL: no response recorded, "never fetched"). Older records are judged
        // conservatively: a copy placed before keeps its validators as its last response,
        // with no Date, so a Last-Modified alone is weak; a partial's missing Date makes its
        // Last-Modified weak too (it restarts unless a strong ETag or a sha256 carries it).
        // An unknown Accept-Ranges counts as not `none`: If-Range still guards the resume.
        """
        ALTER TABLE partials ADD COLUMN date TEXT;
        ALTER TABLE partials ADD COLUMN accept_ranges_none INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE partials ADD COLUMN content_encoding TEXT;
        ALTER TABLE resources ADD COLUMN response_etag TEXT;
        ALTER TABLE resources ADD COLUMN response_last_modified TEXT;
        ALTER TABLE resources ADD COLUMN response_date TEXT;
        ALTER TABLE resources ADD COLUMN response_accept_ranges_none INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE resources ADD COLUMN response_encoding TEXT;
        ALTER TABLE resources ADD COLUMN response_length INTEGER;
        ALTER TABLE resources ADD COLUMN response_at INTEGER;
        UPDATE resources SET response_etag = etag, response_last_modified = last_modified, response_length = length,
            response_at = placed_at WHERE placed_at IS NOT NULL;
        """,
        // 3 → 4: the `encoding` (SPEC §7: refuse, keep, decode) each placed copy was stored
        // under: a copy whose entry now says another is `changed` (§5). Copies placed before
        // had no key to say otherwise: NULL reads as `refuse`.
        """
        ALTER TABLE resources ADD COLUMN copy_encoding TEXT;
        """,
        // 4 → 5: feed sources (SPEC §8), one row per source label: its last check, the last
        // check that applied a copy or got a 304, failed checks in a row (the backoff), since
        // when it is stale and why, and the retry time a failure set (its origin's hold may
        // push it later). The copy in force itself lives in CACHE/.prefetch/sources/.
        """
        CREATE TABLE sources (
            source TEXT PRIMARY KEY,
            last_check INTEGER,
            last_success INTEGER,
            failures INTEGER NOT NULL DEFAULT 0,
            stale_since INTEGER,
            error TEXT,
            retry_at INTEGER
        ) WITHOUT ROWID;
        """,
        // 5 → 6: mirrors (SPEC §8). Which listed URL served a copy (its identity hash and
        // its text with query values elided; NULL: the entry's `url`, as every copy placed
        // before), the URL a partial was begun at (NULL: `url`), and each other URL's own
        // validators of the copy, with the SHA-256 of the version they describe.
        """
        ALTER TABLE resources ADD COLUMN served_by TEXT;
        ALTER TABLE resources ADD COLUMN served_by_url TEXT;
        ALTER TABLE partials ADD COLUMN served_by TEXT;
        CREATE TABLE url_validators (
            feed TEXT NOT NULL,
            path TEXT NOT NULL,
            url_hash TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            sha256 TEXT,
            PRIMARY KEY (feed, path, url_hash)
        ) WITHOUT ROWID;
        """,
    ]

    /// The URL a resource has now, for re-keying version 1's hashes (nil: no longer listed).
    public typealias CurrentURL = (ResourceKey) -> ResourceURL?

    private init(db: SQLiteConnection, path: String) {
        self.db = db
        self.path = path
    }

    /// Opens for reading only; nil when there is no state file yet (nothing is created).
    /// An older schema is migrated in a private in-memory copy (the file is not written).
    public static func openReadOnly(_ path: String, currentURL: CurrentURL = { _ in nil }) throws(SQLiteError) -> StateStore? {
        guard FileSystem.kind(of: path) == .regular else { return nil }
        let file = try SQLiteConnection(path: path, readOnly: true)
        let version = try file.userVersion
        if version > schemaVersion {
            throw SQLiteError(code: 0, message: "state.db has schema \(version), newer than this prefetch (\(schemaVersion))")
        }
        if version == 0 { return nil }
        guard version < schemaVersion else { return StateStore(db: file, path: path) }
        let copy = try file.copyIntoMemory()
        try migrate(copy, from: version, currentURL: currentURL)
        return StateStore(db: copy, path: path)
    }

    /// Opens for writing, creating the file and migrating the schema as needed.
    public static func openForWriting(_ path: String, currentURL: CurrentURL = { _ in nil }) throws(SQLiteError) -> StateStore {
        let db = try SQLiteConnection(path: path, readOnly: false)
        try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
        let version = try db.userVersion
        if version > schemaVersion {
            throw SQLiteError(code: 0, message: "state.db has schema \(version), newer than this prefetch (\(schemaVersion))")
        }
        try migrate(db, from: version, currentURL: currentURL)
        return StateStore(db: db, path: path)
    }

    /// Applies every migration after `version`, each in its own transaction; after the
    /// step to version 2, re-keys the URL hashes it marked.
    private static func migrate(_ db: SQLiteConnection, from version: Int, currentURL: CurrentURL) throws(SQLiteError) {
        for next in version..<schemaVersion {
            try db.transaction { () throws(SQLiteError) in
                try db.execute(migrations[next])
                if next == 1 { try rekey(db, currentURL: currentURL) }
                try db.execute("PRAGMA user_version = \(next + 1)")
            }
        }
    }

    /// Replaces each `v1:` hash whose resource still has the URL it was made from with the
    /// version 2 hash of that URL; a hash of a URL since changed keeps its mark, which no
    /// current URL matches (the resource is `changed`, as it was before the upgrade).
    private static func rekey(_ db: SQLiteConnection, currentURL: CurrentURL) throws(SQLiteError) {
        for table in ["resources", "partials"] {
            var updates: [(ResourceKey, String)] = []
            let rows = try db.prepare("SELECT feed, path, url_hash FROM \(table) WHERE url_hash LIKE 'v1:%'")
            while try rows.step() {
                let key = ResourceKey(feed: rows.text(0) ?? "", path: rows.text(1) ?? "")
                guard let url = currentURL(key), rows.text(2) == "v1:" + url.legacyHash else { continue }
                updates.append((key, url.identityHash))
            }
            let update = try db.prepare("UPDATE \(table) SET url_hash = ? WHERE feed = ? AND path = ?")
            for (key, hash) in updates {
                try update.bind([.text(hash), .text(key.feed), .text(key.path)])
                while try update.step() {}
                update.reset()
            }
        }
    }

    // MARK: Reading

    /// Everything the planner needs, in one read transaction.
    public func snapshot() throws(SQLiteError) -> StateSnapshot {
        let stamp = try db.changeStamp
        if let last = lastSnapshot, last.stamp == stamp { return last.snapshot }  // nothing written since
        lastSnapshot = nil  // not kept while the new one is read (a million rows each)
        let snapshot = try readSnapshot()
        lastSnapshot = (stamp, snapshot)
        return snapshot
    }

    private var lastSnapshot: (stamp: (Int64, Int64), snapshot: StateSnapshot)?

    /// The listed paths a read of state.db shares (`ListedPaths`): those of the feeds loaded
    /// now (`sharePaths`); another path is read as a string of its own.
    private var listedFeeds: [ListedFeedPaths] = []

    /// Rows of these paths are keyed by the very strings; they replace those given before
    /// (a daemon that reloads its feeds gives the new ones).
    public func sharePaths(of feeds: [ListedFeedPaths]) {
        listedFeeds = feeds
    }

    /// Changes with every row this connection writes and every commit of another one.
    public struct ChangeStamp: Equatable, Sendable {
        let ours: Int64
        let others: Int64
    }

    public func changeStamp() throws(SQLiteError) -> ChangeStamp {
        let stamp = try db.changeStamp
        return ChangeStamp(ours: stamp.0, others: stamp.1)
    }

    /// Drops the snapshot kept for the next `snapshot()` (the daemon at rest reads none).
    public func forgetSnapshot() { lastSnapshot = nil }

    /// Whether any partial is recorded (a stop that has none to speak of reads no snapshot).
    public func hasPartials() throws(SQLiteError) -> Bool {
        if let last = lastSnapshot, last.stamp == (try db.changeStamp) {
            return last.snapshot.hasPartials
        }
        let any = try db.prepare("SELECT 1 FROM partials LIMIT 1")
        defer { any.reset() }
        return try any.step()
    }

    /// Each feed's releases and last outcome (the `feeds` part of a snapshot, read alone).
    public func feedStates() throws(SQLiteError) -> [String: FeedState] {
        var states: [String: FeedState] = [:]
        let feeds = try db.prepare("SELECT feed, last_release, last_release_finished, last_success, last_error, missed_reason, last_missed FROM feeds")
        while try feeds.step() {
            states[feeds.text(0) ?? ""] = FeedState(lastRelease: feeds.instant(1), lastReleaseFinished: feeds.instant(2),
                                                   lastSuccess: feeds.instant(3), lastError: feeds.text(4),
                                                   missedReason: feeds.text(5), missedReasonAt: feeds.instant(6))
        }
        let seen = try db.prepare("SELECT feed, value FROM counters WHERE name = 'first_seen'")
        while try seen.step() { states[seen.text(0) ?? "", default: FeedState()].firstSeen = seen.instant(1) }
        return states
    }

    private func readSnapshot() throws(SQLiteError) -> StateSnapshot {
        var snapshot = StateSnapshot()
        snapshot.feeds = try feedStates()
        // Sized once: grown by doubling, the last growth held the old table beside the new one
        // (a third more at the daemon's start-up peak; heaptrack, 100,000 rows: 81.8 MB).
        let count = try db.prepare("SELECT count(*) FROM resources")
        if try count.step(), let rows = count.int(0), rows > 0 { snapshot.resources.reserveCapacity(Int(rows)) }
        let resources = try db.prepare("""
            SELECT feed, path, url_hash, etag, last_modified, length, sha256, placed_at, validated_at,
                   last_success, last_error, failures, failure_release, permanent, next_retry, failure_entry,
                   response_etag, response_last_modified, response_date, response_accept_ranges_none, response_encoding, response_at,
                   response_length, copy_encoding, served_by, served_by_url
            FROM resources
            """)
        // Feed names and `Date`s repeat from row to row: one string each (a million rows
        // would otherwise hold a million copies of each); a response's validators are
        // usually the copy's.
        var repeated = StringInterner()
        var listed = ListedPaths(listedFeeds)
        while try resources.step() {
            var state = ResourceState(urlHash: resources.hexText(2) ?? HexText(""), sha256: resources.hexText(6))
            state.validators = Validators(etag: resources.text(3), lastModifiedText: resources.dateText(4))
            state.length = resources.int(5).map { UInt64(bitPattern: $0) }
            state.placedAt = resources.instant(7)
            state.validatedAt = resources.instant(8)
            state.lastSuccess = resources.instant(9)
            // The failure record only when the row has one (each setter rebuilds it).
            if let error = resources.text(10) { state.lastError = error }
            if let failures = resources.int(11), failures != 0 { state.failures = Int(failures) }
            if let release = resources.instant(12) { state.failureRelease = release }
            if resources.int(13) == 1 { state.permanentFailure = true }
            if let retry = resources.instant(14) { state.nextRetry = retry }
            if let entry = resources.text(15) { state.failureEntry = entry }
            if resources.int(21) != nil {
                state.lastResponse = ResponseFacts(etag: resources.text(16, sameAs: state.validators.etag),
                                                   lastModifiedText: resources.dateText(17, sameAs: 4, value: state.validators.lastModifiedText),
                                                   date: resources.text(18, interning: &repeated),
                                                   acceptRangesNone: resources.int(19) == 1, contentEncoding: resources.text(20, interning: &repeated))
                state.lastResponseLength = resources.int(22).map { UInt64(bitPattern: $0) }
            }
            state.copyEncoding = resources.text(23).flatMap(EncodingMode.init(rawValue:)) ?? .refuse
            if let served = resources.text(24) { state.servedBy = ServedBy(hash: served, shown: resources.text(25)) }
            let feed = resources.text(0, interning: &repeated) ?? ""
            snapshot.resources[ResourceKey(feed: feed, path: resources.text(1, listedIn: &listed, feed: feed) ?? "")] = state
        }
        // Other URLs' validators of a copy (SPEC §8): only those of the copy's own version.
        let others = try db.prepare("""
            SELECT v.feed, v.path, v.url_hash, v.etag, v.last_modified FROM url_validators v
            JOIN resources r ON r.feed = v.feed AND r.path = v.path AND r.sha256 IS v.sha256
            """)
        while try others.step() {
            let key = ResourceKey(feed: others.text(0) ?? "", path: others.text(1) ?? "")
            guard var state = snapshot.resources[key] else { continue }
            var served = state.servedBy ?? ServedBy()
            served.validators[others.text(2) ?? ""] = Validators(etag: others.text(3), lastModifiedText: others.dateText(4))
            state.servedBy = served
            snapshot.resources[key] = state
        }
        let partials = try db.prepare("""
            SELECT feed, path, url_hash, etag, last_modified, total_length, synced_offset, updated_at, boot_id, inode,
                   date, accept_ranges_none, content_encoding, served_by FROM partials
            """)
        while try partials.step() {
            let key = ResourceKey(feed: partials.text(0) ?? "", path: partials.text(1) ?? "")
            let partial = PartialState(urlHash: partials.text(2) ?? "",
                                       validators: Validators(etag: partials.text(3), lastModifiedText: partials.dateText(4)),
                                       totalLength: partials.int(5).map { UInt64(bitPattern: $0) },
                                       syncedOffset: UInt64(bitPattern: partials.int(6) ?? 0), updatedAt: partials.instant(7) ?? Instant(seconds: 0),
                                       bootID: partials.text(8), inode: partials.int(9).map { UInt64(bitPattern: $0) },
                                       date: partials.text(10), acceptRangesNone: partials.int(11) == 1, contentEncoding: partials.text(12),
                                       servedBy: partials.text(13))
            snapshot.resources[key, default: ResourceState(urlHash: partial.urlHash)].partial = partial
        }
        let metered = try db.prepare("SELECT feed, day, bytes FROM metered_usage")
        while try metered.step() {
            snapshot.meteredBytes[MeteredDay(feed: metered.text(0) ?? "", day: metered.text(1) ?? "")] =
                UInt64(bitPattern: metered.int(2) ?? 0)
        }
        let holds = try db.prepare("SELECT origin, until, reason, since, failures FROM origin_holds")
        while try holds.step() {
            let origin = holds.text(0) ?? ""
            snapshot.originHolds[origin] = OriginHold(origin: origin, until: holds.instant(1) ?? Instant(seconds: 0), reason: holds.text(2) ?? "",
                                                      since: holds.instant(3) ?? Instant(seconds: 0), failures: Int(holds.int(4) ?? 1))
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
    public func recordRelease(feed: String, release: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO feeds (feed, last_release) VALUES (?, ?)
            ON CONFLICT (feed) DO UPDATE SET last_release = excluded.last_release,
                last_release_finished = CASE WHEN feeds.last_release = excluded.last_release THEN feeds.last_release_finished END
            """, [.text(feed), .instant(release)])
    }

    /// Records that the current release of `feed` finished at `time`.
    /// Records when a pass first saw `feed` (kept from then on): a feed that never finished
    /// a release has starved since then (SPEC §6).
    public func recordSeen(feed: String, at time: Instant) throws(SQLiteError) {
        try db.run("INSERT OR IGNORE INTO counters (feed, name, value) VALUES (?, 'first_seen', ?)", [.text(feed), .instant(time)])
    }

    /// Records why the feed's pending release moved nothing, as a pass saw it at `time`
    /// (`missed_reason`, `last_missed`: when it was seen).
    public func recordMissedReason(feed: String, _ reason: String, at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO feeds (feed, missed_reason, last_missed) VALUES (?, ?, ?)
            ON CONFLICT (feed) DO UPDATE SET missed_reason = excluded.missed_reason, last_missed = excluded.last_missed
            """, [.text(feed), .text(reason), .instant(time)])
    }

    public func recordReleaseFinished(feed: String, at time: Instant) throws(SQLiteError) {
        try db.run("UPDATE feeds SET last_release_finished = ?, last_success = ? WHERE feed = ?", [.instant(time), .instant(time), .text(feed)])
    }

    /// Records a verified copy placed (or confirmed by a 304) at `time`; clears failures and,
    /// unless the caller knows there is none (`clearPartial: false`), the partial's record.
    /// A 304 (`placed: false`) keeps the placed copy's recorded length, sha256 and `encoding`
    /// (the mode a placed copy was stored under, SPEC §7).
    /// `response`: the 2xx response that delivered a placed copy, recorded as the resource's
    /// last (`recordResponse`); nil keeps the one recorded.
    public func recordValidated(_ key: ResourceKey, urlHash: String, validators: Validators, length: UInt64?,
                                sha256: String?, placed: Bool, encoding: EncodingMode = .refuse, at time: Instant, clearPartial: Bool = true,
                                response: ResponseFacts? = nil, answeredBy mirror: MirrorURL? = nil) throws(SQLiteError) {
        func upsert() throws(SQLiteError) {
            try db.run("""
                INSERT INTO resources (feed, path, url_hash, etag, last_modified, length, sha256, placed_at, validated_at, last_success, failures, permanent,
                                       response_etag, response_last_modified, response_date, response_accept_ranges_none, response_encoding, response_at,
                                       response_length, copy_encoding, served_by, served_by_url)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (feed, path) DO UPDATE SET url_hash = excluded.url_hash, etag = excluded.etag,
                    last_modified = excluded.last_modified,
                    length = CASE WHEN excluded.placed_at IS NULL THEN resources.length ELSE excluded.length END,
                    sha256 = CASE WHEN excluded.placed_at IS NULL THEN resources.sha256 ELSE excluded.sha256 END,
                    copy_encoding = CASE WHEN excluded.placed_at IS NULL THEN resources.copy_encoding ELSE excluded.copy_encoding END,
                    placed_at = COALESCE(excluded.placed_at, resources.placed_at), validated_at = excluded.validated_at,
                    last_success = excluded.last_success, last_error = NULL, last_error_at = NULL, failures = 0,
                    failure_release = NULL, permanent = 0, next_retry = NULL, failure_entry = NULL,
                    response_etag = CASE WHEN excluded.response_at IS NULL THEN resources.response_etag ELSE excluded.response_etag END,
                    response_last_modified = CASE WHEN excluded.response_at IS NULL THEN resources.response_last_modified
                                                  ELSE excluded.response_last_modified END,
                    response_date = CASE WHEN excluded.response_at IS NULL THEN resources.response_date ELSE excluded.response_date END,
                    response_accept_ranges_none = CASE WHEN excluded.response_at IS NULL THEN resources.response_accept_ranges_none
                                                       ELSE excluded.response_accept_ranges_none END,
                    response_encoding = CASE WHEN excluded.response_at IS NULL THEN resources.response_encoding ELSE excluded.response_encoding END,
                    response_at = COALESCE(excluded.response_at, resources.response_at),
                    response_length = CASE WHEN excluded.response_at IS NULL THEN resources.response_length ELSE excluded.response_length END,
                    served_by = CASE WHEN excluded.placed_at IS NULL THEN resources.served_by ELSE excluded.served_by END,
                    served_by_url = CASE WHEN excluded.placed_at IS NULL THEN resources.served_by_url ELSE excluded.served_by_url END
                """, [.text(key.feed), .text(key.path), .text(urlHash), .optional(validators.etag), .optional(validators.lastModified),
                      .optional(length), .optional(sha256), placed ? .instant(time) : .null, .instant(time), .instant(time),
                      .optional(response?.etag), .optional(response?.lastModified), .optional(response?.date),
                      .int(response?.acceptRangesNone == true ? 1 : 0), .optional(response?.contentEncoding),
                      response == nil ? .null : .instant(time), response == nil ? .null : .optional(length),
                      placed ? .text(encoding.rawValue) : .null, .optional(mirror?.shown == nil ? nil : mirror?.hash), .optional(mirror?.shown)])
        }
        /// SPEC §8, a copy placed from one of a resource's URLs: the URL that served the copy
        /// before keeps its validators when the bytes are the same; other versions' go.
        func placedByMirror(_ mirror: MirrorURL) throws(SQLiteError) {
            try db.run("""
                INSERT OR REPLACE INTO url_validators (feed, path, url_hash, etag, last_modified, sha256)
                SELECT feed, path, COALESCE(served_by, url_hash), etag, last_modified, sha256 FROM resources
                WHERE feed = ? AND path = ? AND sha256 = ? AND COALESCE(served_by, url_hash) != ?
                    AND (etag IS NOT NULL OR last_modified IS NOT NULL)
                """, [.text(key.feed), .text(key.path), .optional(sha256), .text(mirror.hash)])
            try upsert()
            try db.run("DELETE FROM url_validators WHERE feed = ? AND path = ? AND (sha256 IS NOT ? OR url_hash = ?)",
                       [.text(key.feed), .text(key.path), .optional(sha256), .text(mirror.hash)])
        }
        /// SPEC §8, a 304 from a URL other than the one that served the copy: that URL's own
        /// validators are recorded beside the copy's; the copy is confirmed.
        func confirmedByOther(_ mirror: MirrorURL) throws(SQLiteError) -> Bool {
            guard try db.run("""
                UPDATE resources SET url_hash = ?, validated_at = ?, last_success = ?, last_error = NULL,
                    last_error_at = NULL, failures = 0, failure_release = NULL, permanent = 0, next_retry = NULL, failure_entry = NULL
                WHERE feed = ? AND path = ?
                """, [.text(urlHash), .instant(time), .instant(time), .text(key.feed), .text(key.path)]) == 1 else { return false }
            try db.run("""
                INSERT OR REPLACE INTO url_validators (feed, path, url_hash, etag, last_modified, sha256)
                SELECT feed, path, ?, ?, ?, sha256 FROM resources WHERE feed = ? AND path = ?
                """, [.text(mirror.hash), .optional(validators.etag), .optional(validators.lastModified), .text(key.feed), .text(key.path)])
            return true
        }
        /// A 304 of a copy state.db knows (a revalidation's common case): one UPDATE of what a
        /// 304 changes (the validators are now those of the URL that answered, SPEC §8), as the upsert's DO UPDATE would (the copy's length, sha256, encoding,
        /// placement and last response kept), instead of its twenty values and CASEs. False
        /// when there is no row to update.
        func confirm() throws(SQLiteError) -> Bool {
            try db.run("""
                UPDATE resources SET url_hash = ?, etag = ?, last_modified = ?, validated_at = ?, last_success = ?, last_error = NULL,
                    last_error_at = NULL, failures = 0, failure_release = NULL, permanent = 0, next_retry = NULL, failure_entry = NULL,
                    served_by = ?, served_by_url = ?
                WHERE feed = ? AND path = ?
                """, [.text(urlHash), .optional(validators.etag), .optional(validators.lastModified), .instant(time), .instant(time),
                      .optional(mirror?.shown == nil ? nil : mirror?.hash), .optional(mirror?.shown),
                      .text(key.feed), .text(key.path)]) == 1
        }
        func confirmOrUpsert() throws(SQLiteError) {
            if let mirror {
                if placed { return try placedByMirror(mirror) }
                if !mirror.servedCopy, response == nil, try confirmedByOther(mirror) { return }
            }
            if !placed, response == nil, try confirm() { return }
            try upsert()
        }
        guard clearPartial else { return try confirmOrUpsert() }
        try db.transaction { () throws(SQLiteError) in
            try confirmOrUpsert()
            try db.run("DELETE FROM partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        }
    }

    /// Records a failed attempt within `release`. Failures of an older release, or of
    /// another version of the manifest entry (`entry`, `ManifestEntry.fingerprint`), do not
    /// count: the attempts start afresh.
    ///
    /// When the manifest gave the resource a new URL, the record moves to it: the failures
    /// count for the new URL (the plan and the next runs honour them), and the old URL's
    /// validators and freshness are dropped, so they are never sent to the new one. The
    /// placed copy itself, its length and sha256 stay until the new URL delivers.
    public func recordFailure(_ key: ResourceKey, urlHash: String, entry: String, release: Instant, error: String, permanent: Bool,
                              nextRetry: Instant?, at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO resources (feed, path, url_hash, last_error, last_error_at, failures, failure_release, permanent, next_retry, failure_entry)
            VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
            ON CONFLICT (feed, path) DO UPDATE SET last_error = excluded.last_error, last_error_at = excluded.last_error_at,
                failures = CASE WHEN resources.failure_release = excluded.failure_release AND resources.url_hash = excluded.url_hash
                                     AND resources.failure_entry IS excluded.failure_entry
                                THEN resources.failures + 1 ELSE 1 END,
                failure_release = excluded.failure_release, permanent = excluded.permanent, next_retry = excluded.next_retry,
                failure_entry = excluded.failure_entry,
                etag = CASE WHEN resources.url_hash = excluded.url_hash THEN resources.etag END,
                last_modified = CASE WHEN resources.url_hash = excluded.url_hash THEN resources.last_modified END,
                validated_at = CASE WHEN resources.url_hash = excluded.url_hash THEN resources.validated_at END,
                url_hash = excluded.url_hash
            """, [.text(key.feed), .text(key.path), .text(urlHash), .text(error), .instant(time), .instant(release),
                  .int(permanent ? 1 : 0), .optional(nextRetry), .text(entry)])
    }

    /// Records (or replaces) the partial of a resource.
    public func recordPartial(_ key: ResourceKey, _ partial: PartialState) throws(SQLiteError) {
        try db.run("""
            INSERT OR REPLACE INTO partials (feed, path, url_hash, etag, last_modified, total_length, synced_offset, updated_at, boot_id, inode,
                                             date, accept_ranges_none, content_encoding, served_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(key.feed), .text(key.path), .text(partial.urlHash), .optional(partial.validators.etag),
                  .optional(partial.validators.lastModified), .optional(partial.totalLength),
                  .optional(partial.syncedOffset), .instant(partial.updatedAt), .optional(partial.bootID), .optional(partial.inode),
                  .optional(partial.date), .int(partial.acceptRangesNone ? 1 : 0), .optional(partial.contentEncoding),
                  .optional(partial.servedBy)])
    }

    /// Records the resource's last 2xx response (§6's deadline rule judges by it whether a
    /// cut transfer could resume), creating its record when there is none yet.
    /// `length`: the whole file's length it announced, when it did.
    public func recordResponse(_ key: ResourceKey, urlHash: String, _ response: ResponseFacts, length: UInt64?,
                               at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO resources (feed, path, url_hash, response_etag, response_last_modified, response_date, response_accept_ranges_none,
                                   response_encoding, response_at, response_length)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (feed, path) DO UPDATE SET response_etag = excluded.response_etag,
                response_last_modified = excluded.response_last_modified, response_date = excluded.response_date,
                response_accept_ranges_none = excluded.response_accept_ranges_none, response_encoding = excluded.response_encoding,
                response_at = excluded.response_at, response_length = excluded.response_length
            """, [.text(key.feed), .text(key.path), .text(urlHash), .optional(response.etag), .optional(response.lastModified),
                  .optional(response.date), .int(response.acceptRangesNone ? 1 : 0), .optional(response.contentEncoding), .instant(time),
                  .optional(length)])
    }

    /// Group commit: writes between `begin` and `commit` land together (the engine commits
    /// a few times a second rather than once per file).
    public func begin() throws(SQLiteError) { try db.begin() }
    public func commit() throws(SQLiteError) { try db.commit() }
    /// Undoes what was written since `begin`.
    public func rollback() { db.rollback() }

    /// Forgets a partial (its file is gone or no longer trusted).
    public func deletePartial(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("DELETE FROM partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
    }

    /// Forgets everything about a resource (it left the manifest or expired).
    public func deleteResource(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("DELETE FROM resources WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        try db.run("DELETE FROM url_validators WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        try deletePartial(key)
    }

    /// Records one attempt in the history.
    public func recordAttempt(_ key: ResourceKey, startedAt: Instant, finishedAt: Instant, bytes: UInt64, httpStatus: Int?,
                              outcome: String, error: String?) throws(SQLiteError) {
        try db.run("""
            INSERT INTO attempts (feed, path, started_at, finished_at, bytes, http_status, outcome, error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(key.feed), .text(key.path), .instant(startedAt), .instant(finishedAt), .optional(bytes),
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
    /// Every feed state.db knows of, with when its manifest was first found gone (nil: listed).
    public func recordedFeeds() throws(SQLiteError) -> [String: Instant?] {
        var feeds: [String: Instant?] = [:]
        let rows = try db.prepare("SELECT feed, removed_since FROM feeds")
        while try rows.step() { feeds[rows.text(0) ?? ""] = .some(rows.instant(1)) }
        let others = try db.prepare("SELECT DISTINCT feed FROM resources")
        while try others.step() { if let feed = others.text(0), feeds[feed] == nil { feeds[feed] = .some(nil) } }
        return feeds
    }

    /// The feed's manifest is gone, noticed now (an earlier notice stands).
    public func markFeedRemoved(_ feed: String, at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO feeds (feed, removed_since) VALUES (?, ?)
            ON CONFLICT (feed) DO UPDATE SET removed_since = COALESCE(feeds.removed_since, excluded.removed_since)
            """, [.text(feed), .instant(time)])
    }

    /// The feed's manifest is back.
    public func clearFeedRemoved(_ feed: String) throws(SQLiteError) {
        try db.run("UPDATE feeds SET removed_since = NULL WHERE feed = ?", [.text(feed)])
    }

    /// Everything state.db holds of a feed whose folder went.
    public func forgetFeed(_ feed: String) throws(SQLiteError) {
        try db.run("DELETE FROM resources WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM partials WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM url_validators WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM feeds WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM attempts WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM metered_usage WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM counters WHERE feed = ?", [.text(feed)])
    }

    /// When the cache was last verified whole (the daemon's own `verify`, SPEC §6).
    public func lastVerification() throws(SQLiteError) -> Instant? {
        let row = try db.prepare("SELECT value FROM counters WHERE feed = '' AND name = 'last_verification'")
        guard try row.step(), let nanoseconds = row.int(0) else { return nil }
        return Instant(nanoseconds: nanoseconds)
    }

    /// Where the daemon's verification that was cut short goes on from (a position over the
    /// feeds' resources), nil when none was.
    public func verificationCursor() throws(SQLiteError) -> Int? {
        let row = try db.prepare("SELECT value FROM counters WHERE feed = '' AND name = 'verify_cursor'")
        guard try row.step(), let value = row.int(0) else { return nil }
        return Int(value)
    }

    /// Records where to go on from (nil: the verification finished, none is pending).
    public func recordVerificationCursor(_ position: Int?) throws(SQLiteError) {
        guard let position else {
            try db.run("DELETE FROM counters WHERE feed = '' AND name = 'verify_cursor'", [])
            return
        }
        try db.run("""
            INSERT INTO counters (feed, name, value) VALUES ('', 'verify_cursor', ?)
            ON CONFLICT (feed, name) DO UPDATE SET value = excluded.value
            """, [.int(Int64(position))])
    }

    public func recordVerification(at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO counters (feed, name, value) VALUES ('', 'last_verification', ?)
            ON CONFLICT (feed, name) DO UPDATE SET value = excluded.value
            """, [.instant(time)])
    }

    /// Holds an origin (or extends its hold).
    public func holdOrigin(_ hold: OriginHold) throws(SQLiteError) {
        try db.run("""
            INSERT INTO origin_holds (origin, until, reason, since, failures) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (origin) DO UPDATE SET until = excluded.until, reason = excluded.reason, failures = excluded.failures
            """, [.text(hold.origin), .instant(hold.until), .text(hold.reason), .instant(hold.since), .int(Int64(hold.failures))])
        // Remembered once cleared too: its metric goes to 0 rather than vanishing (SPEC §6).
        try db.run("INSERT OR IGNORE INTO counters (feed, name, value) VALUES ('', ?, 0)", [.text("held:" + hold.origin)])
    }

    /// Every origin ever held (the metrics say 0 for one no longer held).
    public func originsEverHeld() throws(SQLiteError) -> [String] {
        let rows = try db.prepare("SELECT name FROM counters WHERE feed = '' AND name LIKE 'held:%' ORDER BY name")
        var origins: [String] = []
        while try rows.step() { if let name = rows.text(0) { origins.append(String(name.dropFirst(5))) } }
        return origins
    }

    /// Adds a pass's transfers to the feed's counters, which never go back (the metrics'
    /// `_total`s, SPEC §6): `transfers_<result>` and `body_bytes`.
    public func addCounts(feed: String, _ counts: [String: UInt64]) throws(SQLiteError) {
        for (name, value) in counts.sorted(by: { $0.key < $1.key }) where value > 0 {
            try db.run("""
                INSERT INTO counters (feed, name, value) VALUES (?, ?, ?)
                ON CONFLICT (feed, name) DO UPDATE SET value = counters.value + excluded.value
                """, [.text(feed), .text(name), .int(Int64(clamping: value))])
        }
    }

    /// Every feed's counters by name (`transfers_placed`, `body_bytes`, …; not `first_seen`).
    public func counts() throws(SQLiteError) -> [String: [String: UInt64]] {
        let rows = try db.prepare("SELECT feed, name, value FROM counters WHERE feed <> '' AND name <> 'first_seen'")
        var counts: [String: [String: UInt64]] = [:]
        while try rows.step() {
            counts[rows.text(0) ?? "", default: [:]][rows.text(1) ?? ""] = UInt64(max(0, rows.int(2) ?? 0))
        }
        return counts
    }

    /// An answer came from the origin: its hold ends.
    public func clearOrigin(_ origin: String) throws(SQLiteError) {
        try db.run("DELETE FROM origin_holds WHERE origin = ?", [.text(origin)])
    }

    public func addMeteredBytes(_ day: MeteredDay, _ bytes: UInt64) throws(SQLiteError) {
        try db.run("""
            INSERT INTO metered_usage (feed, day, bytes) VALUES (?, ?, ?)
            ON CONFLICT (feed, day) DO UPDATE SET bytes = metered_usage.bytes + excluded.bytes
            """, [.text(day.feed), .text(day.day), .optional(bytes)])
    }

    /// Records a finished run and its transfer throughput.
    public func recordRun(startedAt: Instant, finishedAt: Instant, bodyBytes: UInt64, transferSeconds: Double,
                          placed: Int, fresh: Int, failed: Int) throws(SQLiteError) {
        try db.run("""
            INSERT INTO runs (started_at, finished_at, body_bytes, transfer_seconds, placed, fresh, failed)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.instant(startedAt), .instant(finishedAt), .optional(bodyBytes), .real(transferSeconds),
                  .int(Int64(placed)), .int(Int64(fresh)), .int(Int64(failed))])
    }

    // MARK: Feed sources (SPEC §8)

    /// Every source's record by label.
    public func sourceStates() throws(SQLiteError) -> [String: SourceState] {
        var states: [String: SourceState] = [:]
        let rows = try db.prepare("SELECT source, last_check, last_success, failures, stale_since, error, retry_at FROM sources")
        while try rows.step() {
            states[rows.text(0) ?? ""] = SourceState(lastCheck: rows.instant(1), lastSuccess: rows.instant(2), failures: Int(rows.int(3) ?? 0),
                                                     staleSince: rows.instant(4), error: rows.text(5), retryAt: rows.instant(6))
        }
        return states
    }

    /// A check that applied a copy or found it current (a 304): the source is ok.
    public func recordSourceSuccess(_ source: String, at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO sources (source, last_check, last_success, failures, stale_since, error, retry_at) VALUES (?, ?, ?, 0, NULL, NULL, NULL)
            ON CONFLICT (source) DO UPDATE SET last_check = excluded.last_check, last_success = excluded.last_success,
                failures = 0, stale_since = NULL, error = NULL, retry_at = NULL
            """, [.text(source), .instant(time), .instant(time)])
    }

    /// A check that failed (`checked`), or a copy in force that cannot be run (`name taken`,
    /// no check made): stale since the first such failure, with the latest reason. A failed
    /// check counts one more failure, retried at `retryAt`.
    public func recordSourceFailure(_ source: String, error: String, at time: Instant, checked: Bool, retryAt: Instant?) throws(SQLiteError) {
        if checked {
            try db.run("""
                INSERT INTO sources (source, last_check, failures, stale_since, error, retry_at) VALUES (?, ?, 1, ?, ?, ?)
                ON CONFLICT (source) DO UPDATE SET last_check = excluded.last_check, failures = sources.failures + 1,
                    stale_since = COALESCE(sources.stale_since, excluded.stale_since), error = excluded.error, retry_at = excluded.retry_at
                """, [.text(source), .instant(time), .instant(time), .text(error), retryAt.map(SQLiteValue.instant) ?? .null])
        } else {
            try db.run("""
                INSERT INTO sources (source, stale_since, error) VALUES (?, ?, ?)
                ON CONFLICT (source) DO UPDATE SET stale_since = COALESCE(sources.stale_since, excluded.stale_since), error = excluded.error
                """, [.text(source), .instant(time), .text(error)])
        }
    }

    /// A source's copy in force runs again (a clash of names is over): no longer stale,
    /// unless its last check failed.
    public func clearSourceStale(_ source: String) throws(SQLiteError) {
        try db.run("UPDATE sources SET stale_since = NULL, error = NULL WHERE source = ? AND failures = 0", [.text(source)])
    }

    /// Forgets the sources the config no longer lists.
    public func forgetSources(except listed: Set<String>) throws(SQLiteError) {
        for source in try sourceStates().keys where !listed.contains(source) {
            try db.run("DELETE FROM sources WHERE source = ?", [.text(source)])
        }
    }
}
