import Foundation

/// The syslog priority of a line written to a stream the journal reads (SPEC §6): an
/// sd-daemon(3) prefix `<3>` error, `<4>` warning or `<6>` information before each line, which
/// journald strips and keeps as the entry's PRIORITY (`journalctl -p warning` then finds them).
enum JournalPriority: Int, Sendable, Equatable {
    case error = 3
    case warning = 4
    case info = 6

    var prefix: String { "<\(rawValue)>" }

    /// Which stream a line went to.
    enum Stream: Sendable { case out, err }

    /// A line's priority. stdout carries results and progress: information. stderr carries
    /// errors and warnings (SPEC §5), labelled as a compiler labels them — `prefetch: error:`,
    /// `FILE:LINE:COLUMN: warning:` — or as the run log does (`failed  FEED/PATH …`, and the
    /// count lines `prefetch: 2 errors in …`); an unlabelled stderr line is a warning. A line
    /// that continues the one before it (a quoted source line, a caret, `Usage:`, `See …`)
    /// takes that line's priority.
    static func of(_ line: Substring, stream: Stream, previous: JournalPriority?) -> JournalPriority {
        guard stream == .err else { return .info }
        if let previous, continues(line) { return previous }
        if line.hasPrefix("error: ") || line.contains(": error: ") || line.hasPrefix("failed  ") { return .error }
        if line.hasPrefix("warning: ") || line.contains(": warning: ") { return .warning }
        if line.hasPrefix("prefetch: "), let count = line.dropFirst("prefetch: ".count).split(separator: " ").first.map(String.init),
           Int(count) != nil, line.dropFirst("prefetch: ".count + count.count).hasPrefix(" error") {
            return .error  // "prefetch: 3 errors in 2 files", "prefetch: 1 error in the configuration"
        }
        if line.hasPrefix("prefetch: another prefetch holds the cache lock") { return .error }  // exit 75
        return .warning
    }

    /// A line that belongs to the message above it.
    private static func continues(_ line: Substring) -> Bool {
        line.first == " " || line.first == "\t" || line.hasPrefix("Usage: ") || line.hasPrefix("See 'prefetch help")
    }
}

/// Prefixes each line written to one journal stream with its priority. Writes may end
/// mid-line; a prefix goes only where a line begins, and a continued line keeps the
/// priority its beginning got. Each stream has its own, used under its lock.
final class JournalLines: @unchecked Sendable {
    private let stream: JournalPriority.Stream
    private let lock = NSLock()
    private var atLineStart = true
    private var current: JournalPriority?

    init(stream: JournalPriority.Stream) {
        self.stream = stream
    }

    /// `text` with a priority prefix at the start of each of its lines.
    func prefixed(_ text: String) -> String {
        lock.lock()
        defer { lock.unlock() }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        var rest = text[...]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: "\n")
            let line = end.map { rest[..<$0] } ?? rest
            if atLineStart {
                let priority = JournalPriority.of(line, stream: stream, previous: current)
                current = priority
                out += priority.prefix
            }
            out += line
            if let end {
                out += "\n"
                atLineStart = true
                rest = rest[rest.index(after: end)...]
            } else {
                atLineStart = false
                rest = rest[rest.endIndex...]
            }
        }
        return out
    }
}
