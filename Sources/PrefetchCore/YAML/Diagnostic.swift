/// One problem found in a manifest or config file, with the place it was found.
public struct Diagnostic: Sendable, Hashable, Error {
    /// How serious a diagnostic is: errors stop the command, warnings do not.
    public enum Severity: String, Sendable, Hashable {
        case error
        case warning
    }

    /// Error or warning.
    public var severity: Severity
    /// The file as the user named it.
    public var file: String
    /// Where in the file, when the problem has a place.
    public var location: SourceLocation?
    /// A short sentence saying what is wrong and, where possible, how to fix it.
    public var message: String

    /// Creates a diagnostic.
    public init(_ severity: Severity, file: String, at location: SourceLocation?, _ message: String) {
        self.severity = severity
        self.file = file
        self.location = location
        self.message = message
    }

    /// `file:line:column: error: message`, without the source excerpt.
    public var headline: String {
        let message = Self.oneLine(self.message)
        if let location {
            return "\(file):\(location.line):\(location.column): \(severity.rawValue): \(message)"
        }
        return "\(file): \(severity.rawValue): \(message)"
    }

    /// `text` with its line breaks and control characters escaped (`\n`, `\u{1B}`): a message
    /// quotes the manifest's values, and one of several lines would be a diagnostic of its own
    /// to whoever reads the output line by line (a plain scalar folds a blank line into "\n").
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case _ where isControl(scalar): out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// C0 and C1 controls, DEL, and the line and paragraph separators; not a tab.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.value < 0x20 && scalar != "\t") || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

/// Renders diagnostics like a compiler: the headline, the source line, and a caret
/// under the column. A line longer than 200 characters is cut around the column, URL
/// query values are elided and control characters shown as U+FFFD (`SourceExcerpt`).
///
/// One renderer remembers where it last was in each file, so a file's diagnostics, in
/// order, are rendered in time linear in the file, however long its lines (a generated
/// manifest can be one line of many MiB, with an error in every entry).
public final class DiagnosticRenderer {
    private let sources: [String: SourceText]
    private var cursors: [String: SourceText.Cursor] = [:]

    /// Creates a renderer that can quote lines from the given sources, keyed by file name.
    public init(sources: [String: SourceText] = [:]) {
        self.sources = sources
    }

    /// The diagnostic as it is printed on stderr, ending with a newline.
    public func render(_ diagnostic: Diagnostic) -> String {
        var out = diagnostic.headline + "\n"  // one line, its controls escaped
        guard let location = diagnostic.location, let source = sources[diagnostic.file] else { return out }
        var cursor = cursors[diagnostic.file] ?? SourceText.Cursor()
        defer { cursors[diagnostic.file] = cursor }
        guard let excerpt = source.excerpt(at: location, cursor: &cursor) else { return out }
        out += excerpt.line + "\n" + excerpt.caret + "\n"
        return out
    }
}

/// The bytes of a source file, with lookup of single lines for error excerpts. Lines end
/// where libyaml ends them (LF, CR LF, a lone CR, NEL, LS, PS), so its marks find them.
public struct SourceText: Sendable {
    /// The file's raw bytes.
    public let bytes: [UInt8]

    /// Wraps a file's bytes.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The text of the 1-based line `number`, without its line break. Lines are split where
    /// libyaml splits them, whose marks the locations are: LF, CR LF, a lone CR, NEL, LS, PS.
    public func line(_ number: Int) -> String? {
        var cursor = Cursor()
        return bytes.withUnsafeBufferPointer { buffer in
            guard cursor.seek(line: number, in: buffer) else { return nil }
            return String(decoding: buffer[cursor.lineStart..<cursor.lineEnd], as: UTF8.self)
        }
    }

    /// `location` moved inside the text. libyaml reports the end of a file whose last line
    /// has no line break on a line after it: that is the end of the last line.
    public func clamped(_ location: SourceLocation) -> SourceLocation {
        bytes.withUnsafeBufferPointer { buffer in
            var lines = 1
            var start = 0
            var index = 0
            while index < buffer.count {
                let width = YAMLText.breakLength(buffer, at: index)
                if width > 0 {
                    lines += 1
                    start = index + width
                }
                index += max(width, 1)
            }
            guard location.line > lines else { return location }
            let last = String(decoding: buffer[start...], as: UTF8.self)
            return SourceLocation(line: lines, column: last.unicodeScalars.count + 1)
        }
    }

    /// The excerpt that shows `location`, found from where `cursor` was.
    func excerpt(at location: SourceLocation, cursor: inout Cursor) -> SourceExcerpt? {
        bytes.withUnsafeBufferPointer { buffer in
            guard cursor.seek(line: location.line, in: buffer) else { return nil }
            let (offset, beyond) = cursor.offset(ofColumn: location.column, in: buffer)
            return SourceExcerpt(buffer, lineStart: cursor.lineStart, lineEnd: cursor.lineEnd, at: offset, beyond: beyond,
                                 elision: &cursor.elision)
        }
    }

    /// A place in the file that the next lookup starts from: a line, and a column on it.
    struct Cursor {
        private(set) var line = 1
        private(set) var lineStart = 0
        private(set) var lineEnd = -1  // not measured yet
        private var column = 1
        private var columnOffset = 0
        /// What the excerpts of this line have learnt of its words (URL queries to hide).
        var elision = SourceExcerpt.Elision(position: 0)

        /// Moves to the start of line `number`; false when the file has fewer lines.
        mutating func seek(line number: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            guard number >= 1 else { return false }
            if number < line { self = Cursor() }
            if lineEnd < 0 { lineEnd = Self.end(of: lineStart, in: bytes) }
            while line < number {
                guard lineEnd < bytes.count else { return false }
                lineStart = lineEnd + YAMLText.breakLength(bytes, at: lineEnd)
                line += 1
                lineEnd = Self.end(of: lineStart, in: bytes)
                column = 1
                columnOffset = lineStart
            }
            if columnOffset < lineStart { columnOffset = lineStart }
            return true
        }

        /// The byte offset of 1-based `target` on the current line, and how many columns
        /// past the line's end it lies (0 when on the line).
        mutating func offset(ofColumn target: Int, in bytes: UnsafeBufferPointer<UInt8>) -> (offset: Int, beyond: Int) {
            if target < column {
                column = 1
                columnOffset = lineStart
            }
            while column < target, columnOffset < lineEnd {
                columnOffset += YAMLText.decode(bytes, at: columnOffset)?.1 ?? 1
                column += 1
            }
            return (min(columnOffset, lineEnd), max(0, target - column))
        }

        private static func end(of start: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Int {
            var index = start
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0x0A || byte == 0x0D || byte == 0xC2 || byte == 0xE2, YAMLText.breakLength(bytes, at: index) > 0 { break }
                index += 1
            }
            return index
        }
    }
}
