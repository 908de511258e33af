import Foundation
import Testing
@testable import PrefetchCore

/// Journal priority prefixes (SPEC §6): which lines are errors, warnings or information, and
/// where a prefix goes when writes split or join lines.
@Suite struct JournalPriorityTests {
    @Test(arguments: [
        ("feeds/lobby.yaml:7:12: error: unknown key 'windw' (did you mean 'window'?)", JournalPriority.error),
        ("prefetch: error: unknown command 'rnu' (did you mean 'run'?)", .error),
        ("prefetch: error: disk full: transfers paused; partial data kept for resume", .error),
        ("failed  lobby/loop/broken.mp4  HTTP 404", .error),
        ("failed  https://cdn.example.com:443  HTTP 503; 40 resources held until Mon 2026-11-30 03:10 +01:00", .error),
        ("prefetch: 2 errors in 1 of 3 files, 1 warning", .error),
        ("prefetch: 1 error in the configuration", .error),
        ("prefetch: another prefetch holds the cache lock (cache/.prefetch/lock); send the daemon SIGUSR1", .error),
        ("feeds/: warning: no feed manifests (*.yaml, *.yml) in this folder", .warning),
        ("prefetch: warning: cannot remove cache/t/old.bin: Permission denied", .warning),
        ("cache/.prefetch/state.db: warning: cannot read the state (corrupt); planning as if nothing were recorded", .warning),
        ("prefetch daemon: waiting for the cache lock held by another prefetch", .warning),
        ("prefetch daemon: reload failed; keeping the previous feeds", .warning),
        ("prefetch: 3 warnings in 2 files", .warning),
    ])
    func stderrLines(line: String, expected: JournalPriority) {
        #expect(JournalPriority.of(line[...], stream: .err, previous: nil) == expected)
    }

    @Test(arguments: ["placed  lobby/a.bin  2MiB in 0.4s", "failed  lobby/x.bin  HTTP 404", "prefetch: error: x", "run: 1 placed"])
    func stdoutLinesAreInformation(line: String) {
        #expect(JournalPriority.of(line[...], stream: .out, previous: .error) == .info)
    }

    /// A diagnostic's quoted source line and caret, and a usage error's usage lines, go with it.
    @Test func continuationLinesTakeThePriorityOfTheirMessage() {
        let stderr = JournalLines(stream: .err)
        #expect(stderr.prefixed("feeds/t.yaml:3:5: warning: 'max_size' above the global cap\n  max_size: 99GiB\n    ^\n")
            == "<4>feeds/t.yaml:3:5: warning: 'max_size' above the global cap\n<4>  max_size: 99GiB\n<4>    ^\n")
        #expect(stderr.prefixed("prefetch: error: unknown option '--fedds'\nUsage: prefetch run [options]\nSee 'prefetch help run'.\n")
            == "<3>prefetch: error: unknown option '--fedds'\n<3>Usage: prefetch run [options]\n<3>See 'prefetch help run'.\n")
    }

    /// A write that ends mid-line gets no second prefix when the line goes on.
    @Test func aPrefixOnlyWhereALineBegins() {
        let stdout = JournalLines(stream: .out)
        #expect(stdout.prefixed("placed  t/a.bin") == "<6>placed  t/a.bin")
        #expect(stdout.prefixed("  1KiB\nplaced  t/b.bin  2KiB\n") == "  1KiB\n<6>placed  t/b.bin  2KiB\n")
        #expect(stdout.prefixed("") == "")
        #expect(stdout.prefixed("\n\n") == "<6>\n<6>\n")
    }
}
