import Foundation

/// What state.db knows of the files that may serve as local sources (SPEC §9): every placed
/// copy with its SHA-256 (`resources`), and the files of a `release` feed's older generations
/// that a newer version replaced (`kept_files`), each with its length, inode and mtime.
extension StateStore {
    /// The files recorded with `sha256` (and `length`, when given): the copies at feeds' paths
    /// first, in key order, then (`kept`) the older generations' files. Whether each is still
    /// on disk with those bytes is the caller's to check.
    func localSources(sha256: String, length: UInt64?, kept withKept: Bool = true) throws(SQLiteError) -> [LocalSourceRecord] {
        var found: [LocalSourceRecord] = []
        let copies = try db.cached("""
            SELECT feed, path, length, inode, mtime, COALESCE(served_by, url_hash), etag, last_modified FROM resources
            WHERE sha256 = ? AND placed_at IS NOT NULL AND length IS NOT NULL AND (? IS NULL OR length = ?) ORDER BY feed, path
            """)
        defer { copies.reset() }
        try copies.bind([.text(sha256), .optional(length), .optional(length)])
        while try copies.step() { found.append(Self.sourceRecord(copies, kept: false)) }
        guard withKept else { return found }
        return found + (try keptSources(sha256: sha256, length: length))
    }

    /// The older generations' files recorded with `sha256` (and `length`, when given).
    func keptSources(sha256: String, length: UInt64?) throws(SQLiteError) -> [LocalSourceRecord] {
        var found: [LocalSourceRecord] = []
        let kept = try db.cached("""
            SELECT feed, path, length, inode, mtime, served_by, etag, last_modified FROM kept_files
            WHERE sha256 = ? AND (? IS NULL OR length = ?) ORDER BY feed, path, inode
            """)
        defer { kept.reset() }
        try kept.bind([.text(sha256), .optional(length), .optional(length)])
        while try kept.step() { found.append(Self.sourceRecord(kept, kept: true)) }
        return found
    }

    private static func sourceRecord(_ row: SQLiteStatement, kept: Bool) -> LocalSourceRecord {
        LocalSourceRecord(key: ResourceKey(feed: row.text(0) ?? "", path: row.text(1) ?? ""),
                          length: UInt64(bitPattern: row.int(2) ?? 0), inode: row.int(3).map { UInt64(bitPattern: $0) },
                          mtime: row.instant(4), servedBy: row.text(5) ?? "",
                          validators: Validators(etag: row.text(6), lastModified: row.text(7)), kept: kept)
    }

    /// Whether state.db records any file a local source could be (no lookups are made without).
    func hasLocalSources() throws(SQLiteError) -> Bool {
        let any = try db.cached("""
            SELECT EXISTS (SELECT 1 FROM resources WHERE sha256 IS NOT NULL AND placed_at IS NOT NULL)
                OR EXISTS (SELECT 1 FROM kept_files)
            """)
        defer { any.reset() }
        return try any.step() && any.int(0) == 1
    }

    /// The copy at `key` is about to be replaced in a staged release whose live generation
    /// keeps it (a hard link): its record moves to `kept_files` while that file is on disk.
    func keepReplaced(_ key: ResourceKey) throws(SQLiteError) {
        try db.run("""
            INSERT OR REPLACE INTO kept_files (feed, path, inode, sha256, length, mtime, served_by, etag, last_modified)
            SELECT feed, path, inode, sha256, length, mtime, COALESCE(served_by, url_hash), etag, last_modified FROM resources
            WHERE feed = ? AND path = ? AND inode IS NOT NULL AND sha256 IS NOT NULL AND length IS NOT NULL AND placed_at IS NOT NULL
            """, [.text(key.feed), .text(key.path)])
    }

    /// Forgets an older generation's file (gone from disk, or its bytes no longer match).
    func forgetKept(_ key: ResourceKey, inode: UInt64) throws(SQLiteError) {
        try db.run("DELETE FROM kept_files WHERE feed = ? AND path = ? AND inode = ?",
                   [.text(key.feed), .text(key.path), .int(Int64(bitPattern: inode))])
    }

    /// The older generations' files recorded for `feed` (to forget those no longer on disk).
    func keptFiles(feed: String) throws(SQLiteError) -> [(path: String, inode: UInt64)] {
        let rows = try db.prepare("SELECT path, inode FROM kept_files WHERE feed = ?")
        try rows.bind([.text(feed)])
        var found: [(path: String, inode: UInt64)] = []
        while try rows.step() { found.append((rows.text(0) ?? "", UInt64(bitPattern: rows.int(1) ?? 0))) }
        return found
    }

    /// Forgets every older generation's file of `feed` (its generations are gone).
    func forgetKept(feed: String) throws(SQLiteError) {
        try db.run("DELETE FROM kept_files WHERE feed = ?", [.text(feed)])
    }

    /// A pinned copy validated with no request at `time` (SPEC §9), with its inode and mtime
    /// as they are now when it was hashed again and found the same.
    func recordPinnedValidated(_ key: ResourceKey, at time: Instant, file: FileIdentity?) throws(SQLiteError) {
        try db.run("""
            UPDATE resources SET validated_at = ?, last_success = ?, inode = COALESCE(?, inode), mtime = COALESCE(?, mtime)
            WHERE feed = ? AND path = ?
            """, [.instant(time), .instant(time), .optional(file.map { Int64(bitPattern: $0.inode) }), .optional(file?.mtime),
                  .text(key.feed), .text(key.path)])
    }

    /// The recorded inode, mtime and length of the copy at `key`, when all are recorded.
    func fileIdentity(_ key: ResourceKey) throws(SQLiteError) -> FileIdentity? {
        let row = try db.cached("SELECT inode, mtime, length FROM resources WHERE feed = ? AND path = ? AND placed_at IS NOT NULL")
        defer { row.reset() }
        try row.bind([.text(key.feed), .text(key.path)])
        guard try row.step(), let inode = row.int(0), let mtime = row.instant(1), let length = row.int(2) else { return nil }
        return FileIdentity(inode: UInt64(bitPattern: inode), mtime: mtime, size: UInt64(bitPattern: length))
    }
}

/// A file state.db records that may serve as a local source (SPEC §9): a copy at a feed's
/// path (its `resources` row), or a file of a `release` feed's older generation (`kept_files`).
struct LocalSourceRecord: Sendable, Equatable {
    let key: ResourceKey
    let length: UInt64
    /// Recorded since schema 7: an older generation's file is found by it.
    let inode: UInt64?
    let mtime: Instant?
    /// The identity hash of the URL that served it: its validators go only to a copy of
    /// that same URL.
    let servedBy: String
    let validators: Validators
    /// A file of an older generation (`kept_files`), not the one at the feed's path.
    let kept: Bool

    /// `FEED/PATH`, as output names it.
    var shown: String { "\(key.feed)/\(key.path)" }
}

/// What tells a placed file from another without reading it: its inode, mtime and size.
public struct FileIdentity: Sendable, Equatable {
    public let inode: UInt64
    public let mtime: Instant
    public let size: UInt64

    init(inode: UInt64, mtime: Instant, size: UInt64) {
        self.inode = inode
        self.mtime = mtime
        self.size = size
    }

    init(_ info: stat) {
        inode = UInt64(info.st_ino)
        mtime = Instant(nanoseconds: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
        size = UInt64(info.st_size)
    }
}
