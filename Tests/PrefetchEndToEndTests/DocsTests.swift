import Foundation
import PrefetchCore
import Testing
import TestSupport

/// The README and the manual (`docs/`) say what the binary does, and these tests hold them to
/// it: every relative link resolves (to the file and to the heading), every page has a table
/// of contents, every manifest and config shown is valid, every command shown with its output
/// is run and its output compared, and the synopsis is what `prefetch help` prints.
///
/// The fenced blocks follow one convention (docs/architecture.md, "The docs are tested"):
/// a `yaml` block with `resources:` is a manifest, any other `yaml` block a config, unless
/// its info string says `fragment` (part of a file), `invalid` (shown for its errors, next
/// to them) or `prometheus` (alerting rules); a block that starts with `$ prefetch` is run,
/// unless it is a `console` block (an illustration with made-up state).
@Suite struct DocsTests {
    static let root = MarkdownDocument.root

    @Test func everyRelativeLinkResolves() throws {
        var anchors: [String: Set<String>] = [:]
        var broken: [String] = []
        for document in try MarkdownDocument.all() {
            for link in document.links where !link.target.contains(":") {
                let parts = link.target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = String(parts[0])
                let target = file.isEmpty ? document.path
                    : (URL(fileURLWithPath: document.path).deletingLastPathComponent().path + "/" + file)
                let resolved = URL(fileURLWithPath: target, relativeTo: Self.root).standardized
                let relative = String(resolved.path.dropFirst(Self.root.path.count + 1))
                guard FileManager.default.fileExists(atPath: resolved.path) else {
                    broken.append("\(document.path):\(link.line): \(link.target): no such file")
                    continue
                }
                guard parts.count == 2, relative.hasSuffix(".md") else { continue }
                if anchors[relative] == nil { anchors[relative] = try MarkdownDocument(relative).anchors }
                if !(anchors[relative]?.contains(String(parts[1])) ?? false) {
                    broken.append("\(document.path):\(link.line): \(link.target): \(relative) has no such heading")
                }
            }
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    /// Each page of the manual opens with a list of its sections: every `##` heading is linked
    /// before the first of them.
    @Test func everyManualPageHasATableOfContents() throws {
        for document in try MarkdownDocument.all() where document.path.hasPrefix("docs/") {
            let sections = document.headings.filter { $0.level == 2 }
            let first = sections.first?.line ?? 0
            let contents = Set(document.links.filter { $0.line < first }.map(\.target))
            let missing = sections.filter { !contents.contains("#" + MarkdownDocument.slug($0.text)) }.map(\.text)
            #expect(!sections.isEmpty && missing.isEmpty, "\(document.path): the table of contents lacks \(missing)")
        }
    }

    /// Every manifest shown is valid, and every config shown is a valid config.
    @Test func everyManifestAndConfigShownIsValid() throws {
        var checked = 0
        for document in try MarkdownDocument.all() {
            for block in document.blocks where block.tags.first == "yaml" {
                let tags = Set(block.tags)
                if !tags.isDisjoint(with: ["fragment", "invalid", "prometheus"]) { continue }
                let place = "\(document.path):\(block.line)"
                let dir = try TemporaryFolder()
                let isManifest = block.text.split(separator: "\n").contains { $0.hasPrefix("resources:") }
                let result: RunResult
                if isManifest {
                    try dir.write("feeds/example.yaml", block.text)
                    try dir.write("config.yaml", "")
                    result = try BinaryRunner.run(["validate", "feeds/example.yaml", "--config", "config.yaml"], in: dir.url)
                } else {
                    try dir.write("config.yaml", block.text)
                    try dir.write("feeds/t.yaml", "resources:\n  - url: http://files.example/a.bin\n")
                    result = try BinaryRunner.run(["validate", "--feeds", "feeds", "--config", "config.yaml"], in: dir.url)
                }
                #expect(result.status == 0, "\(place): the \(isManifest ? "manifest" : "config") shown is not valid:\n\(result.stderr)")
                checked += 1
            }
        }
        #expect(checked >= 5, "the docs show manifests and configs: \(checked) checked")
    }

    /// Every block that shows a `prefetch` command with its output is run, with the environment
    /// the line sets (`TZ=Europe/Berlin prefetch …`): `validate` and `plan` examples in the
    /// repository's root as shown (`plan` with an empty cache of its own); the README's feed
    /// example needs an origin and has its own test; anything else must be a `console` block.
    @Test func everyCommandShownIsRun() throws {
        var run = 0
        for document in try MarkdownDocument.all() {
            for block in document.blocks where block.tags.first != "console" {
                guard let (environment, command) = Self.shownCommand(block.firstLine) else { continue }
                let place = "\(document.path):\(block.line)"
                if document.path == "README.md" && Self.readmeFeedCommands.contains(where: command.joined(separator: " ").hasPrefix) { continue }
                #expect(["validate", "plan"].contains(command.first), "\(place): `\(block.firstLine)` is not run by a test: make it a `console` block if it is an illustration")
                guard ["validate", "plan"].contains(command.first) else { continue }
                let dir = try TemporaryFolder()
                let cache = command.first == "plan" && !command.contains("--cache") ? ["--cache", dir.url.path + "/cache"] : []
                let result = try BinaryRunner.run(command + cache + ["--config", "/dev/null"], in: Self.root, environment: environment)
                let shown = block.text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n")
                #expect(result.stdout + result.stderr == shown, "\(place): the binary prints\n\(result.stdout + result.stderr)")
                run += 1
            }
        }
        #expect(run >= 2)
    }

    /// `$ A=1 B=2 prefetch plan --at T` → (["A": "1", "B": "2"], ["plan", "--at", "T"]); nil for
    /// a line that runs no prefetch.
    static func shownCommand(_ line: String) -> (environment: [String: String], arguments: [String])? {
        guard line.hasPrefix("$ ") else { return nil }
        var words = line.dropFirst(2).split(separator: " ").map(String.init)
        var environment: [String: String] = [:]
        while let word = words.first, let equals = word.firstIndex(of: "="),
              word[..<equals].allSatisfy({ $0.isUppercase || $0.isNumber || $0 == "_" }) {
            environment[String(word[..<equals])] = String(word[word.index(after: equals)...])
            words.removeFirst()
        }
        guard words.first == "prefetch" else { return nil }
        return (environment, Array(words.dropFirst()))
    }

    static let readmeFeedCommands = ["plan --at ", "plan --timeline --at ", "run", "status"]

    /// docs/commands.md's synopsis, and the usage block that opens each command's section, are
    /// the usage lines `prefetch help COMMAND` prints (both come from the command table).
    @Test func theSynopsisIsWhatHelpPrints() throws {
        let document = try MarkdownDocument("docs/commands.md")
        let synopsis = try #require(document.blocks(under: "Synopsis").first).text
        for command in ["validate", "plan", "run", "daemon", "status", "verify", "gc"] {
            let help = try BinaryRunner.run(["help", command])
            let usage = try #require(help.stdout.split(separator: "\n").first { $0.hasPrefix("USAGE: ") }).dropFirst("USAGE: ".count)
            #expect(synopsis.contains(usage + "\n"), "docs/commands.md's synopsis lacks `\(usage)`")
            let section = document.blocks(under: "`\(command)`").first?.text
            #expect(section == usage + "\n", "docs/commands.md, `\(command)`: its usage block is not `\(usage)`")
        }
    }

    /// docs/configuration.md's key table is the one `help` and the man page print
    /// (`ConfigKey.all`, from which the loader takes its keys): the same keys in the same
    /// order, each with the same type and default.
    @Test func theConfigKeyTableIsTheLoaders() throws {
        let document = try MarkdownDocument("docs/configuration.md")
        let plain = { (cell: String) in cell.replacingOccurrences(of: "`", with: "") }
        let rows = document.tableRows(under: "The config file").filter { $0.first?.hasPrefix("`") == true }
        #expect(rows.map { plain($0[0]) } == ConfigKey.names)
        for row in rows {
            guard let key = ConfigKey.all.first(where: { $0.name == plain(row[0]) }), row.count >= 3 else { continue }
            #expect(plain(row[1]) == key.form, "docs/configuration.md, \(key.name): type '\(plain(row[1]))', help says '\(key.form)'")
            #expect(plain(row[2]) == key.defaultValue,
                    "docs/configuration.md, \(key.name): default '\(plain(row[2]))', help says '\(key.defaultValue)'")
        }
    }

    /// etc/config.example.yaml, which docs/configuration.md says "lists every key with its
    /// default", does: each key set (`key: …`) or shown commented out (`# key: …`).
    @Test func theExampleConfigListsEveryKey() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("etc/config.example.yaml"), encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.hasPrefix("# ") ? $0.dropFirst(2) : $0[...] }
        for key in ConfigKey.names {
            #expect(lines.contains { $0.hasPrefix(key + ":") }, "etc/config.example.yaml does not list \(key)")
        }
    }

    // MARK: The README's example

    /// The README's lobby feed: `plan` prints what the README shows, byte for byte; `run` and
    /// `status` too, but for the seconds and rates that differ from run to run. The feed is
    /// fetched from the test origin in place of media.example.com; the clock is set to the
    /// plan's moment with `PREFETCH_CLOCK_OFFSET`.
    @Test func theReadmeFeedPrintsWhatTheReadmeShows() throws {
        let readme = try MarkdownDocument("README.md")
        let section = readme.blocks(under: "A feed, its plan, a run")
        let manifest = try #require(section.first { $0.tags.first == "yaml" }).text
        func shown(_ command: String) throws -> (arguments: [String], output: String) {
            let block = try #require(section.first { $0.firstLine.hasPrefix("$ prefetch " + command + " ") || $0.firstLine == "$ prefetch " + command },
                                     "README shows `prefetch \(command)`")
            let arguments = block.firstLine.dropFirst("$ prefetch ".count).split(separator: " ").map(String.init)
            return (arguments, block.text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n"))
        }
        let origin = try TestOrigin()
        origin.serve("/lobby/welcome.txt", OriginResource(text: "Welcome to the lobby: this file was fetched before anyone needed it.\n"))
        origin.serve("/lobby/loop.mp4", OriginResource([UInt8](repeating: 0, count: 3 << 20)))
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby.yaml", manifest.replacingOccurrences(of: "https://media.example.com", with: origin.url("")))
        let common = ["--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
        var environment = ["PREFETCH_MACHINE_ID": "kiosk-17", "TZ": "Europe/Berlin"]  // the README's machine

        let plan = try shown("plan")
        let planned = try BinaryRunner.run(plan.arguments + common, in: dir.url, environment: environment)
        #expect(planned.status == 0 && planned.stdout == plan.output, "prefetch plan prints\n\(planned.stdout)\(planned.stderr)")
        let timeline = try shown("plan --timeline")
        let drawn = try BinaryRunner.run(timeline.arguments + common, in: dir.url, environment: environment)
        #expect(drawn.status == 0 && drawn.stdout == timeline.output, "prefetch plan --timeline prints\n\(drawn.stdout)\(drawn.stderr)")

        // The run happens at the plan's moment: the window open, the jitter passed.
        let at = try #require(plan.arguments.firstIndex(of: "--at").map { plan.arguments[$0 + 1] })
        let moment = try #require(ISO8601DateFormatter().date(from: at))
        environment["PREFETCH_CLOCK_OFFSET"] = "\(Int(moment.timeIntervalSinceNow.rounded(.up)))s"  // never before the moment
        let probes = ["--assume", "network=unmetered,power=ac"]  // what the README's machine reads
        let run = try shown("run")
        let ran = try BinaryRunner.run(run.arguments + common + probes, in: dir.url, environment: environment)
        #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
        #expect(Self.masked(ran.stdout).sorted() == Self.masked(run.output).sorted(), "prefetch run prints\n\(ran.stdout)")

        let status = try shown("status")
        let stated = try BinaryRunner.run(status.arguments + common, in: dir.url, environment: environment)
        #expect(stated.status == 0, "\(stated.stderr)")
        #expect(Self.masked(stated.stdout) == Self.masked(status.output), "prefetch status prints\n\(stated.stdout)")
    }

    /// Lines with what differs between runs made alike: seconds taken, rates (a transfer too
    /// quick to measure shows none), and the seconds of a time of day.
    static func masked(_ text: String) -> [String] {
        text.split(separator: "\n").map { line in
            var line = String(line)
            for (pattern, replacement) in [(#"in [0-9.]+s"#, "in Ts"), (#" \([0-9.]+[KMG]?i?B/s\)"#, ""),
                                           (#"([0-9]{2}:[0-9]{2}):[0-9]{2}"#, "$1")] {
                line = line.replacingOccurrences(of: pattern, with: replacement, options: .regularExpression)
            }
            return line
        }
    }

    // MARK: Examples with a test of their own

    /// The error-format example (docs/commands.md) is run as written (a stale example once
    /// showed 5 errors where the binary printed 6).
    @Test func theErrorFormatExampleIsWhatValidatePrints() throws {
        let commands = try MarkdownDocument("docs/commands.md")
        let manifest = try #require(commands.block(after: "For this manifest, `feeds/lobby-screens.yaml`:"))
        #expect(manifest.tags == ["yaml", "invalid"])
        let expected = try #require(commands.block(after: "`prefetch validate feeds/` (the folder also holds a valid")).text
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby-screens.yaml", manifest.text)
        try dir.write("feeds/news-nightly.yaml", try String(contentsOf: Self.root.appendingPathComponent("feeds/news-nightly.yaml"), encoding: .utf8))
        let result = try BinaryRunner.run(["validate", "feeds/", "--config", "/dev/null"], in: dir.url)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == expected, "docs/commands.md's example differs from the binary's output:\n\(result.stderr)")
    }

    /// The site cache's kiosk config (docs/fleet.md, "A site cache (Squid)") sets a proxy; its
    /// squid.conf lines are what `SquidTests` run (`SquidProxy.siteSettings` reads them).
    @Test func theSiteCacheExampleHasItsSettings() throws {
        let fleet = try MarkdownDocument("docs/fleet.md")
        let config = try #require(fleet.blocks(under: "A site cache (Squid)").first).text
        #expect(config.contains("proxy: ") && config.contains("no_proxy: "), "\(config)")
        #expect(try SquidProxy.siteSettings().count == 5)
    }
}
