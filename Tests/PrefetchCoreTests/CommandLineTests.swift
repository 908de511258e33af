import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// The argument parser and the help pages (compared with golden files).
@Suite struct CommandLineTests {
    static let validate = Commands.named("validate")!
    static let plan = Commands.named("plan")!

    @Test func parsesOptionsFlagsAndPositionals() throws {
        let parsed = try ArgumentParser.parse(["a.yaml", "--feeds", "dir", "--config=c.yaml", "--", "--odd.yaml"], for: Self.validate)
        #expect(parsed.positionals == ["a.yaml", "--odd.yaml"])
        #expect(parsed["--feeds"] == "dir" && parsed["--config"] == "c.yaml")
        let plan = try ArgumentParser.parse(["--dry-run", "--json", "--at", "02:30", "--assume", "battery=35"], for: Self.plan)
        #expect(plan.flags == ["--dry-run", "--json"])
        #expect(plan["--at"] == "02:30" && plan["--assume"] == "battery=35")
        #expect(try ArgumentParser.parse(["-h"], for: Self.plan).wantsHelp)
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let arguments: [String]
        let command: String
        let message: String
        var testDescription: String { message }
    }

    @Test(arguments: [
        Bad(arguments: ["--bogus"], command: "validate", message: "unknown option '--bogus'"),
        Bad(arguments: ["--feed", "x"], command: "validate", message: "unknown option '--feed' (did you mean '--feeds'?)"),
        Bad(arguments: ["--feeds"], command: "validate", message: "option '--feeds' needs a value (DIR)"),
        Bad(arguments: ["--feeds="], command: "validate", message: "option '--feeds' needs a value (DIR)"),
        Bad(arguments: ["--json=yes"], command: "plan", message: "option '--json' takes no value"),
        Bad(arguments: ["extra"], command: "plan", message: "unexpected argument 'extra'"),
    ])
    func usageErrors(_ bad: Bad) {
        #expect(throws: UsageError(bad.message, command: bad.command)) {
            try ArgumentParser.parse(bad.arguments, for: Commands.named(bad.command)!)
        }
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/help")

    /// Compares with `Fixtures/help/NAME.txt`; `PREFETCH_RECORD_GOLDEN=1` rewrites the file instead.
    static func expectGolden(_ text: String, _ name: String) throws {
        let file = fixtures.appendingPathComponent(name + ".txt")
        #expect(try Golden.matches(text, file), "help for \(name) differs from \(file.path)")
    }

    @Test func overviewHelp() throws {
        try Self.expectGolden(HelpText.overview, "overview")
    }

    /// `prefetch help` lists every config key with what it does, its type and default.
    @Test func overviewListsEveryConfigKey() {
        let overview = HelpText.overview
        for key in ConfigKey.all {
            #expect(overview.contains("\n  \(key.name) ") && overview.contains(key.summary)
                        && overview.contains("\(key.form); default \(key.defaultValue)."), "help lacks \(key.name)")
        }
        #expect(ConfigLoader.keys == ConfigKey.names)
    }

    @Test(arguments: Commands.all.map(\.name))
    func commandHelp(_ name: String) throws {
        try Self.expectGolden(HelpText.page(for: Commands.named(name)!), name)
    }

    @Test func everyOptionAppearsInItsHelp() {
        for command in Commands.all {
            let page = HelpText.page(for: command)
            for option in command.options {
                #expect(page.contains(option.name), "\(command.name) help lacks \(option.name)")
                #expect(command.usage.contains(option.name))
            }
        }
    }

    /// The man page's roff: option dashes are minus signs (`\-`), a prose hyphen stays one,
    /// backslashes are kept, and a line cannot begin a request.
    @Test(arguments: [
        ("--dry-run and re-hash", "\\-\\-dry\\-run and re-hash"),
        ("e.g. +2h or -90s (kill -9)", "e.g. +2h or \\-90s (kill \\-9)"),
        ("[--feeds DIR] [-h, --help]", "[\\-\\-feeds DIR] [\\-h, \\-\\-help]"),
        ("a\\b", "a\\eb"),
    ])
    func manPageEscapesOptionDashes(_ source: String, _ roff: String) {
        #expect(ManPage.escape(source) == roff)
    }

    @Test func manPageTextCannotStartARequest() {
        #expect(ManPage.text("one\n.two\n'three\n\nfour") == "one\n\\&.two\n\\&'three\n.PP\nfour")
    }

    @Test func diagnosticsQuoteTheLineWithACaret() {
        let source = SourceText(bytes: Array("name: x\n\twindow: \"1\"\r\nlast".utf8))
        let renderer = DiagnosticRenderer(sources: ["f.yaml": source])
        #expect(renderer.render(Diagnostic(.error, file: "f.yaml", at: SourceLocation(line: 2, column: 10), "bad"))
                == "f.yaml:2:10: error: bad\n\twindow: \"1\"\n\t        ^\n")
        #expect(renderer.render(Diagnostic(.warning, file: "f.yaml", at: SourceLocation(line: 3, column: 5), "end"))
                == "f.yaml:3:5: warning: end\nlast\n    ^\n")
        #expect(renderer.render(Diagnostic(.error, file: "g.yaml", at: nil, "no place")) == "g.yaml: error: no place\n")
    }
}
