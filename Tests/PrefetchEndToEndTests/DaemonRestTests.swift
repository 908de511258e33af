import Foundation
import Testing
import TestSupport
import PrefetchCore

/// The daemon at rest (issue 20, target 6): once a pass changed nothing and nothing is due,
/// the next passes skip the state read, the listing and the plan while nothing changed
/// (`RestCheck`). What a person does to the cache between two passes must still be seen by
/// the next pass as a full pass would see it: a file deleted by hand is fetched again and
/// the reader index rewritten (SPEC §6), a file or folder planted in a `prune` feed goes.
/// A skip that is too eager (one that trusted the last plan although a folder changed)
/// leaves the file missing and fails here.
@Suite struct DaemonRestTests {
    @Test func aDaemonAtRestSeesFilesDeletedAndPlantedByHandAtItsNextPass() throws {
        let a = RunCommandTests.random(300, seed: 21), b = RunCommandTests.random(400, seed: 22)
        let setup = try NginxHarness(files: ["a.bin": a, "sub/b.bin": b])
        try setup.feed("refresh: 1h\nprune: true\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/sub/b.bin\n    path: sub/b.bin\n")
        let filled = try setup.run()
        #expect(filled.status == 0 && setup.cached("t/sub/b.bin").map { $0 == b } == true, "\(filled.diagnostics)")
        // Recorded as verified, so the daemon's first idle time verifies nothing (that is a
        // state write, after which the pass plans in full again): the first pass is at rest.
        try StateStore.openForWriting(setup.cache.path + "/.prefetch/state.db").recordVerification(at: Instant(Date()))
        // Past the racy window of the folders the run wrote (`CacheStamp.racyWindow`, 2 s):
        // the daemon's first pass leaves a stamp that holds.
        Thread.sleep(forTimeInterval: 3.2)
        let indexPath = setup.cache.appendingPathComponent("t/.prefetch-index.json")
        let indexBefore = try Data(contentsOf: indexPath)

        let (process, log) = try setup.startDaemon()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(RunCommandTests.waitFor { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("prefetch daemon: 1 feed") })
        Thread.sleep(forTimeInterval: 2)  // past the first pass, which prints nothing (nothing to do)
        #expect(try Data(contentsOf: indexPath) == indexBefore, "a pass that changed nothing rewrote the index")

        try FileManager.default.removeItem(at: setup.cache.appendingPathComponent("t/sub/b.bin"))
        try setup.dir.write("cache/t/sub/planted.txt", "planted")
        try setup.dir.write("cache/t/extra/deeper/x.bin", "planted")
        // The next pass comes by the timer (a minute after the first; SIGUSR1 would plan in
        // full anyway, so it would not test the skip).
        // Until the pass is over: the file fetched, the planted ones pruned, and then (last in
        // a pass) the reader index written.
        func indexRewritten() -> Bool {
            guard let data = try? Data(contentsOf: indexPath), data != indexBefore else { return false }
            return String(decoding: data, as: UTF8.self).contains("\"sub/b.bin\"")
        }
        let deadline = Date().addingTimeInterval(100)
        while Date() < deadline,
              setup.cached("t/sub/b.bin") == nil || setup.exists("t/sub/planted.txt") || setup.exists("t/extra") || !indexRewritten() {
            Thread.sleep(forTimeInterval: 0.5)
        }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(setup.cached("t/sub/b.bin").map { $0 == b } == true, "the file deleted by hand was not fetched again: \(text)")
        #expect(!setup.exists("t/sub/planted.txt") && !setup.exists("t/extra"), "the planted files were not pruned: \(text)")
        #expect(setup.cached("t/a.bin").map { $0 == a } == true)
        let index = try String(contentsOf: indexPath, encoding: .utf8)
        #expect(try Data(contentsOf: indexPath) != indexBefore && index.contains("\"sub/b.bin\""), "the index was not rewritten: \(index)")
        process.terminate()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
    }
}
