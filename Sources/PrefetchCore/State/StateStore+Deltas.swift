import Foundation

/// What state.db keeps for deltas (SPEC §9): the SHA-1 of a zsync resource's copy, each
/// control file's validators and SHA-1 by URL, and a delta partial's record.
extension StateStore {
    /// The SHA-1 recorded for the copy at `key`, when the copy is still the file it was
    /// recorded for (`file`: its inode, mtime and size now).
    func copySHA1(_ key: ResourceKey, file: FileIdentity) throws(SQLiteError) -> String? {
        let row = try db.cached("SELECT sha1, inode, mtime, length FROM resources WHERE feed = ? AND path = ? AND placed_at IS NOT NULL")
        defer { row.reset() }
        try row.bind([.text(key.feed), .text(key.path)])
        guard try row.step(), let sha1 = row.text(0), row.int(1).map({ UInt64(bitPattern: $0) }) == file.inode,
              row.instant(2) == file.mtime, row.int(3).map({ UInt64(bitPattern: $0) }) == file.size else { return nil }
        return sha1
    }

    /// The SHA-1 recorded for the copy at `key`, whatever file is there now (a reader's view).
    public func recordedSHA1(_ key: ResourceKey) throws(SQLiteError) -> String? {
        let row = try db.cached("SELECT sha1 FROM resources WHERE feed = ? AND path = ?")
        defer { row.reset() }
        try row.bind([.text(key.feed), .text(key.path)])
        return try row.step() ? row.text(0) : nil
    }

    /// Records the SHA-1 of the copy at `key` (computed from the file, or its control file's at placement).
    func recordCopySHA1(_ key: ResourceKey, _ sha1: String) throws(SQLiteError) {
        try db.run("UPDATE resources SET sha1 = ? WHERE feed = ? AND path = ?", [.text(sha1), .text(key.feed), .text(key.path)])
    }

    /// The release in which `key`'s delta was not used (its own trouble, SPEC §9): no delta is
    /// tried again for it in that release.
    func deltaRefused(_ key: ResourceKey) throws(SQLiteError) -> Instant? {
        let row = try db.cached("SELECT delta_refused FROM resources WHERE feed = ? AND path = ?")
        defer { row.reset() }
        try row.bind([.text(key.feed), .text(key.path)])
        return try row.step() ? row.instant(0) : nil
    }

    func recordDeltaRefused(_ key: ResourceKey, release: Instant) throws(SQLiteError) {
        try db.run("UPDATE resources SET delta_refused = ? WHERE feed = ? AND path = ?", [.instant(release), .text(key.feed), .text(key.path)])
    }

    /// A control file's validators, SHA-1 and length, as last fetched from `url`.
    func controlFile(_ url: String) throws(SQLiteError) -> (validators: Validators, sha1: String, length: UInt64)? {
        let row = try db.cached("SELECT etag, last_modified, sha1, length FROM zsync_controls WHERE url = ?")
        defer { row.reset() }
        try row.bind([.text(url)])
        guard try row.step(), let sha1 = row.text(2) else { return nil }
        return (Validators(etag: row.text(0), lastModified: row.text(1)), sha1, UInt64(bitPattern: row.int(3) ?? 0))
    }

    func recordControlFile(_ url: String, validators: Validators, sha1: String, length: UInt64) throws(SQLiteError) {
        try db.run("INSERT OR REPLACE INTO zsync_controls (url, etag, last_modified, sha1, length) VALUES (?, ?, ?, ?, ?)",
                   [.text(url), .optional(validators.etag), .optional(validators.lastModified), .text(sha1), .optional(length)])
    }

    /// A delta partial's record (SPEC §9 "Resume").
    func deltaPartial(_ key: ResourceKey) throws(SQLiteError) -> DeltaPartialRecord? {
        let row = try db.cached("""
            SELECT control_url, control_etag, control_last_modified, sha1, if_range, missing, length FROM delta_partials WHERE feed = ? AND path = ?
            """)
        defer { row.reset() }
        try row.bind([.text(key.feed), .text(key.path)])
        guard try row.step(), let url = row.text(0), let sha1 = row.text(3) else { return nil }
        return DeltaPartialRecord(controlURL: url, validators: Validators(etag: row.text(1), lastModified: row.text(2)), sha1: sha1,
                                  ifRange: row.text(4), missing: UInt64(bitPattern: row.int(5) ?? 0), length: UInt64(bitPattern: row.int(6) ?? 0))
    }

    func recordDeltaPartial(_ key: ResourceKey, _ record: DeltaPartialRecord, at time: Instant) throws(SQLiteError) {
        try db.run("""
            INSERT OR REPLACE INTO delta_partials (feed, path, control_url, control_etag, control_last_modified, sha1, if_range, missing, length,
                                                   updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(key.feed), .text(key.path), .text(record.controlURL), .optional(record.validators.etag),
                  .optional(record.validators.lastModified), .text(record.sha1), .optional(record.ifRange), .optional(record.missing),
                  .optional(record.length), .instant(time)])
    }

    func deleteDeltaPartial(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("DELETE FROM delta_partials WHERE feed = ? AND path = ?", [.text(key.feed), .text(key.path)])
    }

    /// Every delta partial's record, by key (`plan`, `status`).
    func deltaPartials() throws(SQLiteError) -> [ResourceKey: DeltaPartialRecord] {
        let rows = try db.prepare("SELECT feed, path, control_url, control_etag, control_last_modified, sha1, if_range, missing, length FROM delta_partials")
        var found: [ResourceKey: DeltaPartialRecord] = [:]
        while try rows.step() {
            found[ResourceKey(feed: rows.text(0) ?? "", path: rows.text(1) ?? "")] = DeltaPartialRecord(
                controlURL: rows.text(2) ?? "", validators: Validators(etag: rows.text(3), lastModified: rows.text(4)), sha1: rows.text(5) ?? "",
                ifRange: rows.text(6), missing: UInt64(bitPattern: rows.int(7) ?? 0), length: UInt64(bitPattern: rows.int(8) ?? 0))
        }
        return found
    }
}

/// What state.db keeps of a delta partial (SPEC §9 "Resume"): its control file's URL,
/// validators and SHA-1, the If-Range validator of its 206s, and the bytes still missing.
public struct DeltaPartialRecord: Sendable, Equatable {
    var controlURL: String
    var validators: Validators
    var sha1: String
    var ifRange: String?
    var missing: UInt64
    /// The file's length (its control file's `Length`).
    var length: UInt64
}
