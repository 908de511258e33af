import Foundation
import PrefetchCore
import Testing
import TestSupport

/// `prefetch help --man`, the page the package installs as prefetch(1), through the real
/// groff and man: it renders without a warning, and holds every command, option,
/// environment variable and exit status of the table.
@Suite struct ManPageTests {
    static let groff = URL(fileURLWithPath: "/usr/bin/groff")
    static let man = URL(fileURLWithPath: "/usr/bin/man")

    /// The page, written to a file in `folder`.
    static func page(in folder: TemporaryFolder) throws -> String {
        let result = try BinaryRunner.run(["help", "--man"])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.diagnostics)")
        return try folder.write("prefetch.1", result.stdout)
    }

    /// The page as plain text, one paragraph a line (a line length no paragraph reaches), and
    /// spaces collapsed.
    static func rendered(_ file: String) throws -> [String] {
        let result = try BinaryRunner.run(["-man", "-Tutf8", "-P-cbou", "-rLL=5000n", file], executable: groff)
        #expect(result.status == 0, "\(result.diagnostics)")
        return result.stdout.split(separator: "\n").map {
            $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        }
    }

    /// The lines of section `name` (from its heading to the next one).
    static func section(_ name: String, of lines: [String]) throws -> [String] {
        let start = try #require(lines.firstIndex(of: name), "no section \(name)")
        let headings = ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "CONFIGURATION", "ENVIRONMENT", "FILES", "EXIT STATUS", "SEE ALSO"]
        let end = lines[(start + 1)...].firstIndex { headings.contains($0) } ?? lines.count
        return Array(lines[(start + 1)..<end])
    }

    @Test func rendersWithoutAWarning() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.groff.path) else {
            Issue.record("groff is not installed (scripts/test installs groff-base)")
            return
        }
        let folder = try TemporaryFolder()
        let file = try Self.page(in: folder)
        let groff = try BinaryRunner.run(["-man", "-ww", "-z", "-Tutf8", file], executable: Self.groff)
        #expect(groff.status == 0 && groff.stderr.isEmpty, "\(groff.diagnostics)")
        // lintian's own check of a manual page, as it runs it.
        let man = try BinaryRunner.run(["--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", file],
                                       environment: ["LC_ALL": "C.UTF-8", "MANROFFSEQ": "", "MANWIDTH": "80"], executable: Self.man)
        #expect(man.status == 0 && man.stderr.isEmpty, "\(man.diagnostics)")
        #expect(man.stdout.contains("PREFETCH(1)"))
    }

    @Test func holdsEveryCommandOptionVariableAndStatusOfTheTable() throws {
        let folder = try TemporaryFolder()
        let lines = try Self.rendered(try Self.page(in: folder))
        #expect(lines.first?.hasPrefix("PREFETCH(1)") == true)
        #expect(lines.last?.hasPrefix("prefetch \(ProgramVersion.text)") == true, "footer: \(lines.last ?? "")")

        // The synopsis is each command's usage line, as help prints it.
        let synopsis = try Self.section("SYNOPSIS", of: lines)
        for spec in Commands.all {
            #expect(synopsis.contains(spec.usage), "SYNOPSIS lacks '\(spec.usage)'")
        }
        #expect(synopsis.contains("prefetch help [command]") && synopsis.contains("prefetch --version"))

        // Each command's subsection: its abstract, arguments, every option with its help.
        let commands = try Self.section("COMMANDS", of: lines)
        for (index, spec) in Commands.all.enumerated() {
            let start = try #require(commands.firstIndex(of: spec.name), "COMMANDS has no \(spec.name)")
            let next = index + 1 < Commands.all.count ? Commands.all[index + 1].name : "help"
            let end = try #require(commands[start...].firstIndex(of: next))
            let text = commands[start..<end].joined(separator: "\n")
            #expect(text.contains(spec.abstract), "\(spec.name): no abstract")
            if let arguments = spec.arguments { #expect(text.contains(arguments.usage)) }
            for option in spec.options {
                #expect(text.contains(option.synopsis), "\(spec.name) lacks \(option.synopsis)")
                #expect(text.contains(Self.joined(option.help)), "\(spec.name) \(option.name): no help")
            }
            for variable in spec.environment { #expect(text.contains(variable.name), "\(spec.name) lacks \(variable.name)") }
        }

        let options = try Self.section("OPTIONS", of: lines).joined(separator: "\n")
        for option in Commands.programOptions + Commands.all.flatMap(\.options) {
            #expect(options.contains(option.synopsis), "OPTIONS lacks \(option.synopsis)")
        }
        // Every config key (issue 21: the new ones among them), with its default.
        let configuration = try Self.section("CONFIGURATION", of: lines).joined(separator: "\n")
        for key in ConfigKey.all {
            #expect(configuration.contains(key.name) && configuration.contains(key.summary)
                        && configuration.contains("default: \(key.defaultValue)."), "CONFIGURATION lacks \(key.name)")
        }
        let environment = try Self.section("ENVIRONMENT", of: lines).joined(separator: "\n")
        for variable in Commands.all.flatMap(\.environment) {
            #expect(environment.contains(variable.name) && environment.contains(Self.joined(variable.help)),
                    "ENVIRONMENT lacks \(variable.name)")
        }
        let files = try Self.section("FILES", of: lines)
        for path in [Config.defaultPath, Config().feeds + "/", Config().cache + "/"] {
            #expect(files.contains(path), "FILES lacks \(path)")
        }
        let statuses = try Self.section("EXIT STATUS", of: lines).joined(separator: "\n")
        for code in ExitCode.allCases {
            #expect(statuses.contains("\(code.rawValue) \(code.meaning)"), "EXIT STATUS lacks \(code.rawValue)")
        }
    }

    /// A table help's lines as the page fills them: joined by one space.
    static func joined(_ help: String) -> String {
        help.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }
}
