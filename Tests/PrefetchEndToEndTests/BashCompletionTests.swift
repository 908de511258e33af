import Foundation
import PrefetchCore
import Testing
import TestSupport

/// `prefetch help --bash-completion`, the script the package installs, sourced by a real
/// bash and asked as bash asks it (COMP_WORDS, COMP_CWORD, then `_prefetch`).
@Suite struct BashCompletionTests {
    static let bash = URL(fileURLWithPath: "/bin/bash")

    /// A folder with the script, a feeds folder (a `name:` key, a stem, a hidden file, a
    /// file that is no manifest), a config naming it relatively, and some files and folders.
    static func fixture() throws -> TemporaryFolder {
        let folder = try TemporaryFolder()
        let script = try BinaryRunner.run(["help", "--bash-completion"])
        #expect(script.status == 0 && script.stderr.isEmpty, "\(script.diagnostics)")
        try folder.write("completion.bash", script.stdout)
        try folder.write("feeds/lobby.yaml", "# the lobby screens\nname: \"lobby-screens\"  # shown as\nresources: []\n")
        try folder.write("feeds/news-nightly.yml", "resources: []\n")
        try folder.write("feeds/.draft.yaml", "name: draft\n")
        try folder.write("feeds/README.txt", "not a manifest\n")
        try folder.write("etc/config.yaml", "feeds: ../feeds  # relative to this file\n")
        try folder.write("data/.keep", "")
        try folder.write("notes.txt", "")
        return folder
    }

    /// What `_prefetch` offers for `words` (the last one being completed), sorted.
    static func complete(_ words: [String], in folder: TemporaryFolder) throws -> [String] {
        let program = "source completion.bash; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _prefetch; printf '%s\\n' \"${COMPREPLY[@]}\""
        let result = try BinaryRunner.run(["-c", program, "_"] + words, in: folder.url, executable: bash)
        #expect(result.status == 0 && result.stderr.isEmpty, "\(words): \(result.diagnostics)")
        return result.stdout.split(separator: "\n").map(String.init).sorted()
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let words: [String]
        let expected: [String]
        var testDescription: String { words.joined(separator: " ") }
    }

    static let commands = Commands.all.map(\.name)

    @Test(arguments: [
        Case(words: ["prefetch", ""], expected: (commands + ["help"]).sorted()),
        Case(words: ["prefetch", "ru"], expected: ["run"]),
        Case(words: ["prefetch", "-"], expected: ["--help", "--version"]),
        Case(words: ["prefetch", "help", ""], expected: (commands + ["--man", "--bash-completion"]).sorted()),
        Case(words: ["prefetch", "help", "run", ""], expected: []),
        Case(words: ["prefetch", "bogus", "--"], expected: []),
        // Values by placeholder: DIR folders, FILE files, TIME and K=V,... nothing.
        Case(words: ["prefetch", "run", "--cache", ""], expected: ["data", "etc", "feeds"]),
        Case(words: ["prefetch", "run", "--cache", "fe"], expected: ["feeds"]),
        Case(words: ["prefetch", "status", "--config", "no"], expected: ["notes.txt"]),
        Case(words: ["prefetch", "plan", "--at", ""], expected: []),
        Case(words: ["prefetch", "plan", "--assume", ""], expected: []),
        Case(words: ["prefetch", "validate", "n"], expected: ["notes.txt"]),
        Case(words: ["prefetch", "validate", "--f"], expected: ["--feeds"]),
        Case(words: ["prefetch", "plan", "--json", "--dr"], expected: ["--dry-run"]),
        Case(words: ["prefetch", "plan", "--d"], expected: ["--days", "--dry-run"]),
        // --feed NAME: the feeds folder's names (name: key, else the stem; hidden files skipped).
        Case(words: ["prefetch", "run", "--feeds", "feeds", "--feed", ""], expected: ["lobby-screens", "news-nightly"]),
        Case(words: ["prefetch", "verify", "--feeds", "feeds", "--feed", "n"], expected: ["news-nightly"]),
        // bash splits --feeds=DIR at '=' (COMP_WORDBREAKS).
        Case(words: ["prefetch", "run", "--feeds", "=", "feeds", "--feed", "=", ""], expected: ["lobby-screens", "news-nightly"]),
        Case(words: ["prefetch", "run", "--cache", "=", "fe"], expected: ["feeds"]),
        Case(words: ["prefetch", "run", "--cache", "="], expected: ["data", "etc", "feeds"]),
        // Without --feeds: the folder the config's feeds key names, relative to the config.
        Case(words: ["prefetch", "run", "--config", "etc/config.yaml", "--feed", ""], expected: ["lobby-screens", "news-nightly"]),
        Case(words: ["prefetch", "run", "--config", "etc/none.yaml", "--feeds", "missing", "--feed", ""], expected: []),
    ])
    func offers(_ example: Case) throws {
        let folder = try Self.fixture()
        #expect(try Self.complete(example.words, in: folder) == example.expected)
    }

    /// Every command offers exactly its own options from the table, and --help.
    @Test(arguments: Commands.all.map(\.name))
    func offersEachCommandsOptions(_ name: String) throws {
        let folder = try Self.fixture()
        let spec = try #require(Commands.named(name))
        #expect(try Self.complete(["prefetch", name, "-"], in: folder) == (spec.options.map(\.name) + ["--help"]).sorted())
    }

    @Test func registersForPrefetch() throws {
        let folder = try Self.fixture()
        let result = try BinaryRunner.run(["-c", "source completion.bash; complete -p prefetch"], in: folder.url, executable: Self.bash)
        #expect(result.stdout == "complete -F _prefetch prefetch\n", "\(result.diagnostics)")
    }
}
