/// What a fleet's operation keeps in state.db (SPEC §6): feeds whose manifest went (their
/// grace), the daemon's verification, origins held after failures, and the counters the
/// metrics report.
extension StateStore {
    // MARK: Removed feeds

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
        try db.run("DELETE FROM delta_partials WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM feeds WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM attempts WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM metered_usage WHERE feed = ?", [.text(feed)])
        try db.run("DELETE FROM counters WHERE feed = ?", [.text(feed)])
        try forgetKept(feed: feed)
    }

    // MARK: Verification

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

    /// Records that the cache was verified whole at `time`.
    public func recordVerification(at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT INTO counters (feed, name, value) VALUES ('', 'last_verification', ?)
            ON CONFLICT (feed, name) DO UPDATE SET value = excluded.value
            """, [.instant(time)])
    }

    // MARK: Origin holds

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

    /// An answer came from the origin: its hold ends.
    public func clearOrigin(_ origin: String) throws(SQLiteError) {
        try db.run("DELETE FROM origin_holds WHERE origin = ?", [.text(origin)])
    }

    // MARK: Counters (the metrics)

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
}
