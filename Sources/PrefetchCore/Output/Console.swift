import Foundation

/// Where commands write: stdout for results and JSON, stderr for errors and warnings.
public struct Console: Sendable {
    public var out: @Sendable (String) -> Void
    public var err: @Sendable (String) -> Void
    /// True when stderr is a terminal that takes colour (not `NO_COLOR`, not `TERM=dumb`).
    public var colorErrors: Bool
    /// The same for stdout.
    public var colorOut: Bool
    /// stdout's terminal width, when stdout is a terminal that reports one.
    public var outColumns: Int?
    /// stdout without priority prefixes, when `out` adds them (stdout is the journal's
    /// stream): what `--json` writes through (`forJSON`).
    private var unprefixedOut: (@Sendable (String) -> Void)?

    public init(out: @escaping @Sendable (String) -> Void, err: @escaping @Sendable (String) -> Void,
                colorErrors: Bool = false, colorOut: Bool = false) {
        self.out = out
        self.err = err
        self.colorErrors = colorErrors
        self.colorOut = colorOut
    }

    /// The process's own stdout and stderr. A stream that is the one `JOURNAL_STREAM` names
    /// gets a priority prefix on each line (`JournalPriority`, SPEC §6).
    public static func standard(environment: [String: String]) -> Console {
        let allowed = environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
        let write: @Sendable (String) -> Void = { FileSystem.writeAll(1, $0) }
        var console = Console(out: write, err: { FileSystem.writeAll(2, $0) },
                              colorErrors: allowed && isatty(2) == 1, colorOut: allowed && isatty(1) == 1)
        console.outColumns = TerminalSize.columns(of: 1)
        if JournalStream.connects(1, environment: environment) {
            let lines = JournalLines(stream: .out)
            console.out = { FileSystem.writeAll(1, lines.prefixed($0)) }
            console.unprefixedOut = write
        }
        if JournalStream.connects(2, environment: environment) {
            let lines = JournalLines(stream: .err)
            console.err = { FileSystem.writeAll(2, lines.prefixed($0)) }
        }
        return console
    }

    /// This console for a command given `--json`: its stdout lines are JSON, never prefixed.
    func forJSON() -> Console {
        var console = self
        if let unprefixedOut { console.out = unprefixedOut }
        return console
    }

    /// Prints diagnostics as a compiler would, quoting source lines when known.
    func report(_ diagnostics: [Diagnostic], sources: [String: SourceText]) {
        let renderer = DiagnosticRenderer(sources: sources)
        for diagnostic in diagnostics {
            var text = renderer.render(diagnostic)
            if colorErrors {
                let label = diagnostic.severity.rawValue + ":"
                let color = diagnostic.severity == .error ? "\u{1b}[1;31m" : "\u{1b}[1;35m"
                if let range = text.range(of: " " + label) {
                    text.replaceSubrange(range, with: " " + color + label + "\u{1b}[0m")
                }
            }
            err(text)
        }
    }
}
