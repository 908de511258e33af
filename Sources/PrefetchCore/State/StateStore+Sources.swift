/// Feed sources' records in state.db (SPEC §8): each source's last check, its failures in a
/// row and since when it is stale. The copy in force itself lives in CACHE/.prefetch/sources/.
extension StateStore {
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
