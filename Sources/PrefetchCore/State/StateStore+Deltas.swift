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

    /// Records the SHA-1 of the copy at `key` (computed from the file, or its control file's at placement).
    func recordCopySHA1(_ key: ResourceKey, _ sha1: String) throws(SQLiteError) {
        try db.run("UPDATE resources SET sha1 = ? WHERE feed = ? AND path = ?", [.text(sha1), .text(key.feed), .text(key.path)])
    }

    /// A control file's validators and SHA-1, as last fetched from `url`.
    func controlFile(_ url: String) throws(SQLiteError) -> (validators: Validators, sha1: String)? {
        let row = try db.cached("SELECT etag, last_modified, sha1 FROM zsync_controls WHERE url = ?")
        defer { row.reset() }
        try row.bind([.text(url)])
        guard try row.step(), let sha1 = row.text(2) else { return nil }
        return (Validators(etag: row.text(0), lastModified: row.text(1)), sha1)
    }

    func recordControlFile(_ url: String, validators: Validators, sha1: String) throws(SQLiteError) {
        try db.run("INSERT OR REPLACE INTO zsync_controls (url, etag, last_modified, sha1) VALUES (?, ?, ?, ?)",
                   [.text(url), .optional(validators.etag), .optional(validators.lastModified), .text(sha1)])
    }
}
