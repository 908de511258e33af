import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §3: a placed file is durable before state.db records it — and so is every folder
/// created on its way. Placing `a/b/x` creates `a/` and `a/b/`: each folder in which one
/// was made (`CACHE/<feed>/`, `a/`, and the cache root for the feed's own folder) is fsynced
/// before the commit that records the file, else a power cut could lose the file while
/// state.db says it is placed. Checked on the real binary's system calls (strace).
@Suite struct FolderDurabilityTests {
    static let canTrace = FileManager.default.isExecutableFile(atPath: "/usr/bin/strace")
        && (try? BinaryRunner.run(["--version"], executable: URL(fileURLWithPath: "/usr/bin/strace")))?.status == 0

    @Test(.enabled(if: canTrace)) func everyCreatedFolderIsFsyncedBeforeTheRecord() throws {
        let s = try FaultHarness()
        s.origin.serve("/x.bin", OriginResource(FaultTests.bytes(5000, seed: 700)))
        s.origin.serve("/y.bin", OriginResource(FaultTests.bytes(6000, seed: 701)))
        try s.feed("resources:\n  - { url: ORIGIN/x.bin, path: a/b/x.bin }\n  - { url: ORIGIN/y.bin, path: c/y.bin }\n")
        // On tmpfs fsync does nothing and prefetch does not call it: this checks a real disk.
        guard case .success(let probe) = CacheFolder.open(s.dir.url.path + "/probe") else { throw CacheError.unsafePath("probe") }
        try #require(!probe.syncIsFree, "the temporary folder is on tmpfs; this test needs a disk")
        let trace = s.dir.url.appendingPathComponent("trace.txt").path
        // One file per thread (-ff): no call is split across lines by another thread's; one
        // transfer thread, whose file then holds the placements, the fsyncs and the commits.
        let result = try BinaryRunner.run(["-ff", "-e", "trace=mkdirat,fsync,renameat,openat,pwrite64,close", "-e", "signal=none", "-o", trace,
                                           BinaryRunner.executable.path, "run", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"],
                                          in: s.dir.url, environment: BinaryRunner.traced(["PREFETCH_TRANSFER_THREADS": "1"]),
                                          executable: URL(fileURLWithPath: "/usr/bin/strace"))
        #expect(result.status == 0, "\(result.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: s.dir.url.path).filter { $0.hasPrefix("trace.txt.") }
        let traces = try files.map { try String(contentsOfFile: s.dir.url.path + "/" + $0, encoding: .utf8) }
        let main = try #require(traces.first { $0.contains("mkdirat(") }, "no thread created a folder")
        let lines = main.split(separator: "\n").map(String.init)
        func fd(after marker: String, in line: String) -> String? {
            guard let range = line.range(of: marker) else { return nil }
            return String(line[range.upperBound...].prefix { $0.isNumber })
        }
        let wal = lines.first { $0.contains("state.db-wal\"") }.flatMap { line in line.components(separatedBy: "= ").last }
        let walFD = try #require(wal, "no WAL opened")
        var created = 0
        for (index, line) in lines.enumerated() where line.contains("mkdirat(") && line.hasSuffix("= 0") {
            let parent = try #require(fd(after: "mkdirat(", in: line))
            let name = line.components(separatedBy: "\"").dropFirst().first ?? ""
            guard name != ".prefetch", name != "partial" else { continue }  // the cache's own folders
            created += 1
            // Up to the descriptor's close: a later descriptor of the same number is another folder.
            let closed = lines[(index + 1)...].firstIndex { $0.contains(" close(\(parent))") } ?? lines.endIndex
            let rest = lines[(index + 1)..<closed]
            let synced = rest.firstIndex { $0.contains("fsync(\(parent))") }
            let committed = lines[(index + 1)...].firstIndex { $0.contains("pwrite64(\(walFD),") }
            #expect(synced != nil, "the folder (fd \(parent)) in which '\(name)' was created is never fsynced")
            if let synced, let committed { #expect(synced < committed, "'\(name)': state.db was written before its folder's fsync") }
        }
        #expect(created == 4, "expected t, a, b and c to be created: \(created)")  // t in the root, a and c in t, b in a
    }
}
