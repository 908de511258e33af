import Foundation
import Glibc
import Testing
import PrefetchCore

/// The real binary stopped or failed at each step of finishing a file and committing state,
/// through its fault points (`PREFETCH_FAULT`, debug builds only: System/FaultPoints.swift).
/// A new version is on its way over a good cached one when the fault strikes; afterwards
/// the cache holds the old version or the new one whole (never a mix, never a stray file),
/// state.db opens, and the next run without faults ends with the new version in place.
@Suite(.serialized) struct CrashTests {
    static let v1 = FaultTests.bytes(3 << 20, seed: 900)
    static let v2 = FaultTests.bytes(3 << 20 + 12_345, seed: 901)
    static let small1 = FaultTests.bytes(1000, seed: 902)
    static let small2 = FaultTests.bytes(1500, seed: 903)
    /// Every step of finishing a file that a plain run reaches (`partial-fsync` is reached
    /// only by a transfer that pauses, fails or runs for seconds: see its own test).
    static let steps = ["body-write", "partial-record", "file-fsync", "rename", "folder-fsync", "commit"]

    /// v1 of both files placed by a clean run; the origin then serves v2, due two hours on.
    static func scenarioWithANewVersion() throws -> FaultHarness {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(v1, etag: "\"a1\""))
        s.origin.serve("/b.bin", OriginResource(small1, etag: "\"b1\""))
        try s.feed("retry: { attempts: 3, backoff: 1s, max_backoff: 1s }\nrefresh: 1h\nlimits: { concurrency: 1 }\n"
                   + "resources:\n  - url: ORIGIN/a.bin\n    priority: high\n  - url: ORIGIN/b.bin\n")
        let first = try s.runJSON()
        try #require(first.status == 0 && s.cached("t/a.bin") == v1 && s.cached("t/b.bin") == small1, "\(first.diagnostics)")
        s.origin.serve("/a.bin", OriginResource(v2, etag: "\"a2\""))
        s.origin.serve("/b.bin", OriginResource(small2, etag: "\"b2\""))
        return s
    }

    static let allowed = ["t/a.bin": [v1, v2], "t/b.bin": [small1, small2]]

    /// After whatever the fault left: state.db opens (`status` answers), and a run without
    /// faults places v2 of both whole.
    static func recovers(_ s: FaultHarness, _ label: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        s.checkInvariant(Self.allowed, sourceLocation: sourceLocation)
        let status = try BinaryRunner.run(["status", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"], in: s.dir.url)
        #expect(status.status == 0, "\(label): status after the fault: \(status.stderr)", sourceLocation: sourceLocation)
        let again = try s.runJSON(offset: "+6h")
        #expect(again.status == 0, "\(label): the run after the fault: \(again.diagnostics)", sourceLocation: sourceLocation)
        #expect(s.cached("t/a.bin") == v2 && s.cached("t/b.bin") == small2, "\(label): v2 is not in place", sourceLocation: sourceLocation)
        s.checkInvariant(["t/a.bin": [v2], "t/b.bin": [small2]], sourceLocation: sourceLocation)
        #expect(s.partials.isEmpty, "\(label): partials left: \(s.partials)", sourceLocation: sourceLocation)
    }

    /// `kill -9` and an abrupt exit at every step: the process dies there (so the step was
    /// reached), and the cache recovers.
    @Test(arguments: steps) func aProcessStoppedAtAStepLosesNothingPlaced(step: String) throws {
        for (action, status) in [("kill", Int32(SIGKILL)), ("exit", Int32(86))] {
            let s = try Self.scenarioWithANewVersion()
            let stopped = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "\(step):\(action)"])
            // Process reports a signal death as the signal's number.
            #expect(stopped.status == status, "\(step):\(action) was not reached: \(stopped.diagnostics)")
            try Self.recovers(s, "\(step):\(action)")
        }
    }

    /// Each step failing with EIO or ENOSPC, once (a transient fault) and from then on (a
    /// broken disk): the process never crashes, says what failed, and the cache recovers.
    @Test(arguments: steps) func aStepThatFailsIsReportedAndRecovered(step: String) throws {
        for fault in ["eio@1", "enospc@1", "eio", "enospc"] {
            let s = try Self.scenarioWithANewVersion()
            let failed = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "\(step):\(fault)"], timeout: 60)
            #expect(failed.status == 0 || failed.status == 1, "\(step):\(fault): \(failed.diagnostics)")
            #expect(!failed.stderr.contains("crashed") && !failed.stderr.contains("Fatal error"), "\(step):\(fault): \(failed.stderr)")
            let said = failed.events.contains { ["failed", "paused"].contains($0["type"] as? String) }
            #expect(said, "\(step):\(fault) failed silently: \(failed.diagnostics)")
            try Self.recovers(s, "\(step):\(fault)")
        }
    }

    /// A failed state commit is one `failed` line with no feed and no path (not about one
    /// resource); the files stay the truth, and the next run records them.
    @Test func aFailedCommitIsOneLineWithoutAResource() throws {
        let s = try Self.scenarioWithANewVersion()
        let failed = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "commit:eio"])
        let lines = failed.events.filter { $0["type"] as? String == "failed" && $0["feed"] is NSNull }
        #expect(lines.count == 1 && (lines.first?["path"] is NSNull), "\(failed.diagnostics)")
        let message = lines.first?["error"] as? String ?? ""
        #expect(message.contains("cannot record state"), "\(failed.diagnostics)")
        try Self.recovers(s, "commit:eio")
    }

    /// A folder that received files cannot be fsynced: the batch is rolled back, so no record
    /// names v2 (a power cut could still undo its rename); the old record stays, and the next
    /// run revalidates and records v2. (The folder fsync's result was ignored and v2 recorded.)
    @Test func anUnsyncedFolderIsNeverRecorded() throws {
        let s = try Self.scenarioWithANewVersion()
        let v1Record = try #require(s.resourceState("a.bin"))
        let failed = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "folder-fsync:eio"])
        #expect(failed.stderr.contains("cannot record state") || failed.stdout.contains("cannot record state"), "\(failed.diagnostics)")
        // SPEC §5: the cache could not be written, so the run exits 1 (it exited 0: the
        // failed line with no feed and no path was the only word of it).
        #expect(failed.status == 1, "\(failed.diagnostics)")
        let after = s.resourceState("a.bin")
        #expect(after?.sha256 == v1Record.sha256 && after?.validators == v1Record.validators,
                "a placement was recorded although its folder was not fsynced: \(String(describing: after))")
        try Self.recovers(s, "folder-fsync:eio")
        #expect(s.resourceState("a.bin")?.sha256 == FaultTests.sha(Self.v2))
    }

    /// A partial of an older version, longer than the new body, must be emptied before the
    /// new body is written from byte 0. When that fails, the transfer fails and is retried
    /// (the truncate's result was ignored: the new body went over the old bytes, and the
    /// placed file kept the old tail).
    @Test func aPartialThatCannotBeEmptiedIsNotWrittenOver() throws {
        let s = try Self.scenarioWithANewVersion()
        let junk = FaultTests.bytes(4 << 20, seed: 904)
        try s.plant("a.bin", bytes: junk, synced: UInt64(junk.count), validators: Validators(etag: "\"old\""))
        let run = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "truncate:eio@1"])
        #expect(run.status == 0 && !run.retries("a.bin").isEmpty, "\(run.diagnostics)")
        #expect(s.cached("t/a.bin") == Self.v2, "a.bin holds \(s.size("t/a.bin") ?? -1) bytes, not v2's \(Self.v2.count)")
        try Self.recovers(s, "truncate:eio@1")
    }

    /// After a failed fsync nothing of the partial is trusted (the kernel may have dropped its
    /// pages): the retry asks for the whole body, never a Range over those bytes.
    @Test func aFailedFsyncIsNotResumedFrom() throws {
        let s = try Self.scenarioWithANewVersion()
        let failed = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "file-fsync:eio@1"])
        #expect(failed.status == 0 && failed.placed("a.bin"), "\(failed.diagnostics)")
        let asks = s.origin.requests(to: "/a.bin").suffix(2)
        #expect(asks.count == 2 && asks.allSatisfy { $0.header("range") == nil }, "\(asks.map { $0.header("range") ?? "-" })")
        #expect(s.cached("t/a.bin") == Self.v2)
    }

    /// A disk with less than one buffer free: every body write fails with ENOSPC, the first
    /// one included. The run pauses for a full disk (it crashed: the buffer held bytes the
    /// transfer had not counted, and the offset to fsync came out below zero).
    @Test func aFullDiskAtTheFirstWritePausesTheRun() throws {
        let s = try Self.scenarioWithANewVersion()
        let full = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "body-write:enospc"])
        #expect(full.status == 1 && !full.events("paused", "a.bin").isEmpty, "\(full.diagnostics)")
        #expect(full.events("paused", "a.bin").first?["reason"] as? String == "disk full")
        try Self.recovers(s, "body-write:enospc")
    }

    /// A partial's fsync that fails while the transfer runs (a slow body, synced every 2 s):
    /// the transfer is retried from the start, not from bytes a later fsync would claim.
    @Test func aFailedPartialFsyncRestartsTheTransfer() throws {
        let s = try Self.scenarioWithANewVersion()
        s.origin.inject("/a.bin", [.trickle(bytesPerSecond: 1 << 20)])  // 3 s: synced at 2 s
        let failed = try s.runJSON(offset: "+2h", environment: ["PREFETCH_FAULT": "partial-fsync:eio@1"], timeout: 60)
        #expect(failed.status == 0 && !failed.retries("a.bin").isEmpty, "\(failed.diagnostics)")
        #expect(failed.retries("a.bin").first?["error"] as? String == "fsync: Input/output error", "\(failed.diagnostics)")
        let asks = s.origin.requests(to: "/a.bin").suffix(2)
        #expect(asks.count == 2 && asks.last?.header("range") == nil, "\(asks.map { $0.header("range") ?? "-" })")
        try Self.recovers(s, "partial-fsync:eio@1")
    }
}
