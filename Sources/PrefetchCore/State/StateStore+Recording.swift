/// What passes and transfers record in state.db: releases, a resource's validated copy,
/// failures, partials and responses, and the history of attempts and runs.
extension StateStore {
    /// Records that a run began working on a release of `feed`.
    public func recordRelease(feed: String, release: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO feeds (feed, last_release) VALUES (?, ?)
            ON CONFLICT (feed) DO UPDATE SET last_release = excluded.last_release,
                last_release_finished = CASE WHEN feeds.last_release = excluded.last_release THEN feeds.last_release_finished END
            """, [.text(feed), .instant(release)])
    }

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

    /// Records that the current release of `feed` finished at `time`.
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
                                response: ResponseFacts? = nil, answeredBy mirror: MirrorURL? = nil, file: FileIdentity? = nil,
                                keepingReplaced: Bool = false, servedByNone: Bool = false) throws(SQLiteError) {
        let validation = Validation(key: key, urlHash: urlHash, validators: validators, length: length, sha256: sha256, placed: placed,
                                    encoding: encoding, time: time, response: response, mirror: mirror, file: file, servedByNone: servedByNone)
        // A staged release's older generation keeps the copy replaced here (SPEC §9: a local source while on disk).
        if placed, keepingReplaced { try keepReplaced(key) }
        guard clearPartial else { return try confirmOrUpsert(validation) }
        try db.transaction { () throws(SQLiteError) in
            try confirmOrUpsert(validation)
            try db.run("DELETE FROM partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        }
    }

    /// The fewest writes that record `validation`: a mirror's placed copy or 304, a 304 of a
    /// copy state.db knows, else the whole row.
    private func confirmOrUpsert(_ validation: Validation) throws(SQLiteError) {
        if let mirror = validation.mirror {
            if validation.placed { return try placedByMirror(validation, mirror) }
            if !mirror.servedCopy, validation.response == nil, try confirmedByOther(validation, mirror) { return }
        }
        if !validation.placed, validation.response == nil, try confirm(validation) { return }
        try upsert(validation)
    }

    /// Writes the whole row, creating it when there is none: a 304 (`placed: false`) keeps the
    /// copy's length, sha256, encoding and URL; no `response` keeps the last one recorded.
    private func upsert(_ v: Validation) throws(SQLiteError) {
        try db.run("""
            INSERT INTO resources (feed, path, url_hash, etag, last_modified, length, sha256, placed_at, validated_at, last_success, failures, permanent,
                                   response_etag, response_last_modified, response_date, response_accept_ranges_none, response_encoding, response_at,
                                   response_length, copy_encoding, served_by, served_by_url, inode, mtime)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
                served_by_url = CASE WHEN excluded.placed_at IS NULL THEN resources.served_by_url ELSE excluded.served_by_url END,
                inode = CASE WHEN excluded.placed_at IS NULL THEN resources.inode ELSE excluded.inode END,
                mtime = CASE WHEN excluded.placed_at IS NULL THEN resources.mtime ELSE excluded.mtime END,
                delta_refused = CASE WHEN excluded.placed_at IS NULL THEN resources.delta_refused END
            """, [.text(v.key.feed), .text(v.key.path), .text(v.urlHash), .optional(v.validators.etag), .optional(v.validators.lastModified),
                  .optional(v.length), .optional(v.sha256), v.placed ? .instant(v.time) : .null, .instant(v.time), .instant(v.time),
                  .optional(v.response?.etag), .optional(v.response?.lastModified), .optional(v.response?.date),
                  .int(v.response?.acceptRangesNone == true ? 1 : 0), .optional(v.response?.contentEncoding),
                  v.response == nil ? .null : .instant(v.time), v.response == nil ? .null : .optional(v.length),
                  v.placed ? .text(v.encoding.rawValue) : .null,
                  v.servedByNone ? .text("") : .optional(v.mirror?.shown == nil ? nil : v.mirror?.hash), v.servedByNone ? .text("") : .optional(v.mirror?.shown),
                  v.placed ? .optional(v.file.map { Int64(bitPattern: $0.inode) }) : .null, v.placed ? .optional(v.file?.mtime) : .null])
    }

    /// SPEC §8, a copy placed from one of a resource's URLs: the URL that served the copy
    /// before keeps its validators when the bytes are the same; other versions' go.
    private func placedByMirror(_ v: Validation, _ mirror: MirrorURL) throws(SQLiteError) {
        try db.run("""
            INSERT OR REPLACE INTO url_validators (feed, path, url_hash, etag, last_modified, sha256)
            SELECT feed, path, COALESCE(served_by, url_hash), etag, last_modified, sha256 FROM resources
            WHERE feed = ? AND path = ? AND sha256 = ? AND COALESCE(served_by, url_hash) != ?
                AND (etag IS NOT NULL OR last_modified IS NOT NULL)
            """, [.text(v.key.feed), .text(v.key.path), .optional(v.sha256), .text(mirror.hash)])
        try upsert(v)
        try db.run("DELETE FROM url_validators WHERE feed = ? AND path = ? AND (sha256 IS NOT ? OR url_hash = ?)",
                   [.text(v.key.feed), .text(v.key.path), .optional(v.sha256), .text(mirror.hash)])
    }

    /// SPEC §8, a 304 from a URL other than the one that served the copy: that URL's own
    /// validators are recorded beside the copy's; the copy is confirmed. False when there is
    /// no row to update.
    private func confirmedByOther(_ v: Validation, _ mirror: MirrorURL) throws(SQLiteError) -> Bool {
        guard try db.run("""
            UPDATE resources SET url_hash = ?, validated_at = ?, last_success = ?, last_error = NULL,
                last_error_at = NULL, failures = 0, failure_release = NULL, permanent = 0, next_retry = NULL, failure_entry = NULL
            WHERE feed = ? AND path = ?
            """, [.text(v.urlHash), .instant(v.time), .instant(v.time), .text(v.key.feed), .text(v.key.path)]) == 1 else { return false }
        try db.run("""
            INSERT OR REPLACE INTO url_validators (feed, path, url_hash, etag, last_modified, sha256)
            SELECT feed, path, ?, ?, ?, sha256 FROM resources WHERE feed = ? AND path = ?
            """, [.text(mirror.hash), .optional(v.validators.etag), .optional(v.validators.lastModified), .text(v.key.feed), .text(v.key.path)])
        return true
    }

    /// A 304 of a copy state.db knows (a revalidation's common case): one UPDATE of what a
    /// 304 changes (the validators are now those of the URL that answered, SPEC §8), as the
    /// upsert's DO UPDATE would (the copy's length, sha256, encoding, placement and last
    /// response kept), instead of its twenty values and CASEs. False when there is no row to
    /// update.
    private func confirm(_ v: Validation) throws(SQLiteError) -> Bool {
        try db.run("""
            UPDATE resources SET url_hash = ?, etag = ?, last_modified = ?, validated_at = ?, last_success = ?, last_error = NULL,
                last_error_at = NULL, failures = 0, failure_release = NULL, permanent = 0, next_retry = NULL, failure_entry = NULL,
                served_by = ?, served_by_url = ?
            WHERE feed = ? AND path = ?
            """, [.text(v.urlHash), .optional(v.validators.etag), .optional(v.validators.lastModified), .instant(v.time), .instant(v.time),
                  .optional(v.mirror?.shown == nil ? nil : v.mirror?.hash), .optional(v.mirror?.shown),
                  .text(v.key.feed), .text(v.key.path)]) == 1
    }

    /// Records a failed attempt within `release`. Failures of an older release, or of
    /// another version of the manifest entry (`entry`, `Resource.fingerprint`), do not
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

    /// Forgets a partial (its file is gone or no longer trusted).
    public func deletePartial(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("DELETE FROM partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
    }

    /// Forgets everything about a resource (it left the manifest or expired).
    public func deleteResource(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("DELETE FROM resources WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        try db.run("DELETE FROM url_validators WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
        try db.run("DELETE FROM delta_partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
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
}

/// What one `recordValidated` call records, for the statements that write it.
private struct Validation {
    let key: ResourceKey
    let urlHash: String
    let validators: Validators
    let length: UInt64?
    let sha256: String?
    let placed: Bool
    let encoding: EncodingMode
    let time: Instant
    let response: ResponseFacts?
    let mirror: MirrorURL?
    /// A placed copy's inode and mtime (SPEC §9).
    let file: FileIdentity?
    /// A copy from a local source another URL served: no listed URL served it (marked "").
    var servedByNone = false
}
