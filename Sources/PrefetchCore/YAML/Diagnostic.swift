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
        if let location {
            return "\(file):\(location.line):\(location.column): \(severity.rawValue): \(message)"
        }
        return "\(file): \(severity.rawValue): \(message)"
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
        out += line + "\n"
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

    /// The text of the 1-based line `number`, without its line break.
    public func line(_ number: Int) -> String? {
        guard number >= 1 else { return nil }
        var current = 1
        var start = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                if current == number { break }
                current += 1
                start = index + 1
            }
            index += 1
        }
        guard current == number, start <= bytes.count else { return nil }
        var end = index
        if end > start, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
