import Foundation
internal import CSQLite

/// An SQLite error with the library's message.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { message }
}

/// One SQLite connection; owns the `sqlite3` handle (closed in `deinit`).
final class SQLiteConnection {
    private let handle: OpaquePointer

    /// Opens `path`. Read-only connections never create the file.
    init(path: String, readOnly: Bool) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let status = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            if let db { sqlite3_close(db) }
            throw SQLiteError(code: status, message: message)
        }
        handle = db
        sqlite3_busy_timeout(db, 5_000)
    }

    deinit {
        statements = [:]  // finalized before the close
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(SQLiteError) {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if status != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? "SQLite error \(status)"
            sqlite3_free(errorMessage)
            throw SQLiteError(code: status, message: message)
        }
    }

    /// A prepared statement.
    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status) }
        return SQLiteStatement(statement, connection: self)
    }

    /// Runs `sql` with `values` bound to its `?` parameters. The SQL is a literal: its
    /// prepared statement is kept, found again by the literal's address (no hashing of the
    /// text on each of a run's thousands of state writes).
    /// Returns the rows it changed (`sqlite3_changes`).
    @discardableResult
    func run(_ sql: StaticString, _ values: [SQLiteValue]) throws(SQLiteError) -> Int {
        let statement = try cached(sql)
        try statement.bind(values)
        defer { statement.reset() }
        while try statement.step() {}
        return Int(sqlite3_changes(handle))
    }

    /// Rows changed through this connection so far, and SQLite's counter of commits by
    /// other connections: together they say whether anything was written since a read.
    var changeStamp: (Int64, Int64) {
        get throws(SQLiteError) {
            let statement = try cached("PRAGMA data_version")
            defer { statement.reset() }
            _ = try statement.step()
            return (Int64(sqlite3_total_changes64(handle)), statement.int(0) ?? 0)
        }
    }

    private var depth = 0

    /// Opens a transaction that stays open across calls (`transaction` nests inside it as
    /// savepoints) until `commit`.
    func begin() throws(SQLiteError) {
        precondition(depth == 0, "begin inside a transaction")
        try execute("BEGIN IMMEDIATE")
        depth = 1
    }

    func commit() throws(SQLiteError) {
        precondition(depth == 1, "commit without begin")
        depth = 0
        do {
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Ends the transaction `begin` opened, undoing its writes.
    func rollback() {
        precondition(depth == 1, "rollback without begin")
        depth = 0
        try? execute("ROLLBACK")  // fails only when SQLite already rolled back (a full disk)
    }

    /// Runs `body` in a transaction (committed when it returns, rolled back when it throws).
    /// Nested calls become savepoints, so a batch can wrap calls that have their own.
    func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        let name = "t\(depth)"
        try execute(depth == 0 ? "BEGIN IMMEDIATE" : "SAVEPOINT \(name)")
        depth += 1
        defer { depth -= 1 }
        do {
            let value = try body()
            try execute(depth == 1 ? "COMMIT" : "RELEASE \(name)")
            return value
        } catch {
            try? execute(depth == 1 ? "ROLLBACK" : "ROLLBACK TO \(name); RELEASE \(name)")
            throw error
        }
    }

    private var statements: [UnsafeRawPointer: SQLiteStatement] = [:]

    /// A prepared statement kept for reuse: the state writes of a run repeat a few statements.
    func cached(_ sql: StaticString) throws(SQLiteError) -> SQLiteStatement {
        let address = UnsafeRawPointer(sql.utf8Start)
        if let statement = statements[address] { return statement }
        let statement = try prepare(sql.description)
        statements[address] = statement
        return statement
    }

    /// A private in-memory copy of this database (SQLite's online backup): a reader can
    /// migrate an older schema there without writing the file.
    func copyIntoMemory() throws(SQLiteError) -> SQLiteConnection {
        let copy = try SQLiteConnection(path: ":memory:", readOnly: false)
        guard let backup = sqlite3_backup_init(copy.handle, "main", handle, "main") else { throw copy.error(sqlite3_errcode(copy.handle)) }
        let status = sqlite3_backup_step(backup, -1)
        sqlite3_backup_finish(backup)
        guard status == SQLITE_DONE else { throw error(status) }
        return copy
    }

    /// `PRAGMA user_version`: the schema version.
    var userVersion: Int {
        get throws(SQLiteError) {
            let statement = try prepare("PRAGMA user_version")
            _ = try statement.step()
            return Int(statement.int(0) ?? 0)
        }
    }

    func error(_ status: Int32) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// A value bound to a statement parameter.
enum SQLiteValue {
    case null
    case int(Int64)
    case text(String)
    case real(Double)

    static func optional(_ value: Int64?) -> SQLiteValue { value.map { .int($0) } ?? .null }
    static func optional(_ value: UInt64?) -> SQLiteValue { value.map { .int(Int64(bitPattern: $0)) } ?? .null }
    static func optional(_ value: String?) -> SQLiteValue { value.map { .text($0) } ?? .null }
    /// An instant as its nanoseconds since the epoch (state.db keeps full precision).
    static func instant(_ value: Instant) -> SQLiteValue { .int(value.nanoseconds) }
    static func optional(_ value: Instant?) -> SQLiteValue { value.map(instant) ?? .null }
}

/// A prepared statement; finalized in `deinit`.
final class SQLiteStatement {
    private let handle: OpaquePointer
    /// Unowned: the connection caches its statements, and must still be able to close.
    private unowned let connection: SQLiteConnection

    init(_ handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// SQLite copies bound text at once (`SQLITE_TRANSIENT`).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(handle, index)
            case .int(let n): status = sqlite3_bind_int64(handle, index, n)
            case .real(let d): status = sqlite3_bind_double(handle, index, d)
            case .text(let s): status = sqlite3_bind_text(handle, index, s, -1, Self.transient)
            }
            if status != SQLITE_OK { throw connection.error(status) }
        }
    }

    /// Ends the statement's current execution (releases its read or write locks).
    func reset() {
        sqlite3_reset(handle)
    }

    /// Advances to the next row; false when done.
    func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(handle)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(status)
        }
    }

    func int(_ column: Int32) -> Int64? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, column)
    }

    /// A column of nanoseconds since the epoch.
    func instant(_ column: Int32) -> Instant? {
        int(column).map(Instant.init(nanoseconds:))
    }

    func real(_ column: Int32) -> Double? {
        sqlite3_column_type(handle, column) == SQLITE_NULL ? nil : sqlite3_column_double(handle, column)
    }

    /// A text column's bytes as SQLite holds them for this row (nil for NULL): the one place a
    /// column is read as a buffer; valid until the next step or read of another type.
    private func textBytes(_ column: Int32) -> UnsafeBufferPointer<UInt8>? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        return UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: pointer)
    }

    /// A text column's bytes appended to `bytes` (none for NULL): no string made of them.
    func appendText(_ column: Int32, to bytes: inout [UInt8]) {
        if let column = textBytes(column) { bytes.append(contentsOf: column) }
    }

    /// A text column that repeats across rows (feed names, dates): the interner's string
    /// with its bytes, made only when the interner has none yet.
    func text(_ column: Int32, interning interner: inout StringInterner) -> String? {
        guard let bytes = textBytes(column) else { return nil }
        return interner.intern(bytes) { String(cString: bytes.baseAddress!) }
    }

    /// A text column that is usually a SHA-256's hex (`HexText`): no string made of a digest.
    func hexText(_ column: Int32) -> HexText? {
        textBytes(column).map(HexText.init(bytes:))
    }

    /// A text column that is usually an IMF-fixdate (`DateText`): no string made of a date.
    func dateText(_ column: Int32) -> DateText? {
        textBytes(column).map(DateText.init(bytes:))
    }

    /// The same for a column usually the same as an earlier one of the row, `other`, read as
    /// `value`: `value` when the bytes are the same (no date parsed twice).
    func dateText(_ column: Int32, sameAs other: Int32, value: DateText?) -> DateText? {
        guard let bytes = textBytes(column) else { return nil }
        if value != nil, let earlier = textBytes(other), SameBytes.equal(bytes, earlier) { return value }
        return DateText(bytes: bytes)
    }

    /// A text column that is often the same as `other` (another column of the row, read
    /// before): `other` itself when the bytes are the same, so they share one string.
    func text(_ column: Int32, sameAs other: String?) -> String? {
        guard let bytes = textBytes(column) else { return nil }
        if let other, SameBytes.equal(other, bytes) { return other }
        return String(cString: bytes.baseAddress!)
    }
}
