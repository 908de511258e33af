/// `CACHE/.prefetch/state.db`: jobs, validators, attempts and history (SQLite, WAL).
///
/// The schema is versioned with `PRAGMA user_version`; `migrations[n]` takes version n to
/// n + 1. Readers (`plan`, `status`) open read-only and never create the file; an older
/// file is migrated in a private in-memory copy for them, never on disk.
///
/// Times are nanoseconds since the epoch (`Instant`): compared at full precision (SPEC §5).
///
/// This file opens the store and keeps the last snapshot; the rest is split by job:
/// `StateStore+Schema` (the tables and their migrations), `StateStore+Snapshot` (reading
/// what the planner needs), `StateStore+Recording` (what transfers and passes record),
/// `StateStore+Fleet` (removed feeds, verification, origin holds, counters) and
/// `StateStore+Sources` (feed sources).
public final class StateStore {
    /// The connection every part of the store reads and writes through.
    let db: SQLiteConnection
    public let path: String

    /// The schema this build writes.
    public static let schemaVersion = migrations.count

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

    // MARK: The snapshot kept between reads

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

    // MARK: Transactions

    /// Group commit: writes between `begin` and `commit` land together (the engine commits
    /// a few times a second rather than once per file).
    public func begin() throws(SQLiteError) { try db.begin() }
    public func commit() throws(SQLiteError) { try db.commit() }
    /// Undoes what was written since `begin`.
    public func rollback() { db.rollback() }

    /// `body` in one transaction (a savepoint inside an open one), so that its many small
    /// writes take SQLite's locks and commit once; when none can be opened, `body` runs without.
    func batched<T>(_ body: () -> T) -> T {
        var result: T?
        _ = try? db.transaction { () throws(SQLiteError) in result = body() }
        return result ?? body()
    }
}
