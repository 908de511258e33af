/// state.db's schema and how an older file migrates to it: `migrations[n]` takes
/// `PRAGMA user_version` n to n + 1, each step in its own transaction.
extension StateStore {
    /// The schema's steps, oldest first (`schemaVersion` is their count).
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
        // 6 → 7: local sources (SPEC §9). Each placed copy's inode and mtime (nanoseconds): a
        // file still the one placed is known without reading it (a pinned copy at a release, a
        // source before it is linked); copies found by SHA-256 (an index of the rows that have
        // one); and the files of a `release` feed's older generations that a newer version
        // replaced in the generation staged after them (`kept_files`, with the validators and
        // the URL that served them), while they are on disk.
        """
        ALTER TABLE resources ADD COLUMN inode INTEGER;
        ALTER TABLE resources ADD COLUMN mtime INTEGER;
        CREATE INDEX resources_by_sha256 ON resources (sha256) WHERE sha256 IS NOT NULL;
        CREATE TABLE kept_files (
            feed TEXT NOT NULL,
            path TEXT NOT NULL,
            inode INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            length INTEGER NOT NULL,
            mtime INTEGER,
            served_by TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            PRIMARY KEY (feed, path, inode)
        ) WITHOUT ROWID;
        CREATE INDEX kept_files_by_sha256 ON kept_files (sha256);
        """,
        // 7 → 8: deltas (SPEC §9). The SHA-1 of a placed zsync resource's copy (what its
        // control file is compared with), and the release in which its delta was not used (no
        // delta is tried again for it in that release); each control file's validators, SHA-1 and length per URL
        // (asked conditionally only while that SHA-1 is the copy's); and a delta partial's
        // record: its control file's URL, validators and SHA-1, the If-Range validator of its
        // 206s, the bytes of its blocks still missing (`plan --json`'s `remaining`) and the file's length.
        """
        ALTER TABLE resources ADD COLUMN sha1 TEXT;
        ALTER TABLE resources ADD COLUMN delta_refused INTEGER;
        CREATE TABLE zsync_controls (
            url TEXT PRIMARY KEY,
            etag TEXT,
            last_modified TEXT,
            sha1 TEXT NOT NULL,
            length INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE delta_partials (
            feed TEXT NOT NULL,
            path TEXT NOT NULL,
            control_url TEXT NOT NULL,
            control_etag TEXT,
            control_last_modified TEXT,
            sha1 TEXT NOT NULL,
            if_range TEXT,
            missing INTEGER NOT NULL,
            length INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (feed, path)
        ) WITHOUT ROWID;
        """,
    ]

    /// Applies every migration after `version`, each in its own transaction; after the
    /// step to version 2, re-keys the URL hashes it marked.
    static func migrate(_ db: SQLiteConnection, from version: Int, currentURL: CurrentURL) throws(SQLiteError) {
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
}
