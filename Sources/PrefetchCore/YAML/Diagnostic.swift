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
/// under the column.
public struct DiagnosticRenderer: Sendable {
    private let sources: [String: SourceText]

    /// Creates a renderer that can quote lines from the given sources, keyed by file name.
    public init(sources: [String: SourceText] = [:]) {
        self.sources = sources
    }

    /// The diagnostic as it is printed on stderr, ending with a newline.
    public func render(_ diagnostic: Diagnostic) -> String {
        var out = diagnostic.headline + "\n"
        guard let location = diagnostic.location,
              let line = sources[diagnostic.file]?.line(location.line) else { return out }
        // A control character of the line (an escape sequence to the terminal) is shown as
        // U+FFFD, one character for one, so the caret stays under its column.
        let shown = line.unicodeScalars.contains(where: Diagnostic.isControl)
            ? String(String.UnicodeScalarView(line.unicodeScalars.map { Diagnostic.isControl($0) ? "\u{FFFD}" : $0 }))
            : line
        out += shown + "\n"
        // Keep tabs as tabs so the caret lines up in any tab width.
        var pad = ""
        for (index, character) in line.enumerated() where index < location.column - 1 {
            pad.append(character == "\t" ? "\t" : " ")
        }
        let shortfall = location.column - 1 - min(line.count, location.column - 1)
        pad += String(repeating: " ", count: max(0, shortfall))
        out += pad + "^\n"
        return out
    }
}

/// The bytes of a source file, with lookup of single lines for error excerpts.
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
        guard number >= 1 else { return nil }
        var current = 1
        var start = 0
        var index = 0
        while index < bytes.count {
            let width = Self.lineBreak(bytes, at: index)
            if width > 0 {
                if current == number { break }
                current += 1
                start = index + width
                index += width
                continue
            }
            index += 1
        }
        guard current == number else { return nil }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// `location` moved inside the text. libyaml reports the end of a file whose last line
    /// has no line break on a line after it: that is the end of the last line.
    public func clamped(_ location: SourceLocation) -> SourceLocation {
        var lines = 1
        var index = 0
        while index < bytes.count {
            let width = Self.lineBreak(bytes, at: index)
            if width > 0 { lines += 1 }
            index += max(width, 1)
        }
        guard location.line > lines, let last = line(lines) else { return location }
        return SourceLocation(line: lines, column: last.unicodeScalars.count + 1)
    }

    /// The length in bytes of the line break at `index`, or 0.
    private static func lineBreak(_ bytes: [UInt8], at index: Int) -> Int {
        switch bytes[index] {
        case 0x0A: return 1
        case 0x0D: return index + 1 < bytes.count && bytes[index + 1] == 0x0A ? 2 : 1
        case 0xC2: return index + 1 < bytes.count && bytes[index + 1] == 0x85 ? 2 : 0  // NEL
        case 0xE2:  // LS, PS
            return index + 2 < bytes.count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9) ? 3 : 0
        default: return 0
        }
    }
}
