/// Reading state.db into a `StateSnapshot`: everything the planner needs, table by table.
extension StateStore {
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

    /// Reads the whole snapshot.
    func readSnapshot() throws(SQLiteError) -> StateSnapshot {
        var snapshot = StateSnapshot()
        snapshot.feeds = try feedStates()
        try readResources(into: &snapshot)
        try readOtherURLsValidators(into: &snapshot)
        try readPartials(into: &snapshot)
        try readMeteredUsage(into: &snapshot)
        try readOriginHolds(into: &snapshot)
        snapshot.deltaPartials = try deltaPartials()
        try readThroughput(into: &snapshot)
        return snapshot
    }

    /// Every resource's record (`resources`), keyed by feed and path.
    private func readResources(into snapshot: inout StateSnapshot) throws(SQLiteError) {
        // Sized once: a table grown by doubling holds the old storage beside the new while
        // it grows, and its last growth would fall at the daemon's start-up peak.
        let count = try db.prepare("SELECT count(*), sum(length(CAST(path AS BLOB))) FROM resources")
        if try count.step(), let rows = count.int(0), rows > 0 {
            snapshot.resources.reserveCapacity(Int(rows), pathBytes: Int(count.int(1) ?? 0))
        }
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
            // The path's bytes go straight to the records' keys (state.db's key: unique rows).
            snapshot.resources.appendNew(state, feed: feed) { resources.appendText(1, to: &$0) }
        }
    }

    /// Other URLs' validators of a copy (SPEC §8): only those of the copy's own version.
    private func readOtherURLsValidators(into snapshot: inout StateSnapshot) throws(SQLiteError) {
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
    }

    /// Partial downloads (`partials`), each on its resource's record (made when there is none).
    private func readPartials(into snapshot: inout StateSnapshot) throws(SQLiteError) {
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
    }

    /// Bytes moved over metered links, by feed and local day.
    private func readMeteredUsage(into snapshot: inout StateSnapshot) throws(SQLiteError) {
        let metered = try db.prepare("SELECT feed, day, bytes FROM metered_usage")
        while try metered.step() {
            snapshot.meteredBytes[MeteredDay(feed: metered.text(0) ?? "", day: metered.text(1) ?? "")] =
                UInt64(bitPattern: metered.int(2) ?? 0)
        }
    }

    /// The origins held now (a round that runs after others reads what they held).
    func originHolds() throws(SQLiteError) -> [String: OriginHold] {
        var snapshot = StateSnapshot()
        try readOriginHolds(into: &snapshot)
        return snapshot.originHolds
    }

    /// Origins held after connection failures and 429/5xx.
    private func readOriginHolds(into snapshot: inout StateSnapshot) throws(SQLiteError) {
        let holds = try db.prepare("SELECT origin, until, reason, since, failures FROM origin_holds")
        while try holds.step() {
            let origin = holds.text(0) ?? ""
            snapshot.originHolds[origin] = OriginHold(origin: origin, until: holds.instant(1) ?? Instant(seconds: 0), reason: holds.text(2) ?? "",
                                                      since: holds.instant(3) ?? Instant(seconds: 0), failures: Int(holds.int(4) ?? 1))
        }
    }

    /// The median transfer rate of the last 20 runs that moved at least 1 MiB (left nil when none did).
    private func readThroughput(into snapshot: inout StateSnapshot) throws(SQLiteError) {
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
    }
}
