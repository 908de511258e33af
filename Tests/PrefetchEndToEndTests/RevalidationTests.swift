import Foundation
import Testing
@testable import PrefetchCore

/// When a cached copy is current and when it is not (SPEC §5): `refresh: 0s`, times at full
/// precision, and a manifest entry that changed under a cached copy. Through the real binary
/// against the fault-injecting origin.
@Suite struct RevalidationTests {
    static func sha(_ bytes: [UInt8]) -> String { FaultTests.sha(bytes) }

    /// `refresh: 0s` on a feed with neither schedule nor window means every `run` is a new
    /// release: each revalidates, also two runs within the same second (times recorded in
    /// whole seconds made every run after the first do nothing, for ever).
    @Test func refreshZeroRevalidatesAtEveryRun() throws {
        let s = try FaultHarness()
        let body = FaultTests.bytes(1000, seed: 500)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a1\""))
        try s.feed("refresh: 0s\nresources:\n  - url: ORIGIN/a.bin\n")
        #expect(try s.runJSON().status == 0)
        let plan = try s.plan()
        #expect(plan.first?["state"] as? String == "due" && plan.first?["reason"] as? String == "stale", "\(plan)")
        for round in 1...3 {
            let again = try s.runJSON()
            #expect(again.status == 0, "\(again.diagnostics)")
            #expect(!again.events("fresh", "a.bin").isEmpty, "run \(round + 1) revalidated: \(again.diagnostics)")
        }
        let requests = s.origin.requests(to: "/a.bin")
        #expect(requests.count == 4)
        #expect(requests.dropFirst().allSatisfy { $0.header("if-none-match") == "\"a1\"" })
    }

    /// The same feed with `refresh: 1h`: the second run does nothing (the control).
    @Test func aLongerRefreshKeepsTheCopyFresh() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(FaultTests.bytes(1000, seed: 501), etag: "\"a1\""))
        try s.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n")
        #expect(try s.runJSON().status == 0)
        #expect(try s.plan().first?["state"] as? String == "fresh")
        #expect(try s.runJSON().status == 0)
        #expect(s.origin.requests(to: "/a.bin").count == 1)
    }

    /// Every placed file's size and SHA-256 are recorded, with or without a manifest `sha256`.
    @Test func everyPlacedFileHasItsDigestRecorded() throws {
        let s = try FaultHarness()
        let small = FaultTests.bytes(3000, seed: 502), large = FaultTests.bytes(3 << 20, seed: 503)
        s.origin.serve("/s.bin", OriginResource(small, etag: "\"s\""))
        s.origin.serve("/l.bin", OriginResource(large, etag: "\"l\""))
        try s.feed("resources:\n  - url: ORIGIN/s.bin\n  - url: ORIGIN/l.bin\n")
        #expect(try s.runJSON().status == 0)
        #expect(s.resourceState("s.bin")?.sha256 == Self.sha(small) && s.resourceState("s.bin")?.length == 3000)
        #expect(s.resourceState("l.bin")?.sha256 == Self.sha(large) && s.resourceState("l.bin")?.length == UInt64(3 << 20))
    }

    /// SPEC §5: pinning a new version by changing the entry's `sha256` makes the copy due at
    /// once (reason `changed`), whatever `refresh` says, and it is fetched whole — never
    /// revalidated, since a 304 would keep the old bytes. The old copy stays until then.
    @Test func aChangedSha256IsDueAtOnceAndFetchedWhole() throws {
        let s = try FaultHarness()
        let v1 = FaultTests.bytes(2000, seed: 504), v2 = FaultTests.bytes(2000, seed: 505)
        s.origin.serve("/a.bin", OriginResource(v1, etag: "\"v1\""))
        try s.feed("refresh: 24h\nresources:\n  - { url: ORIGIN/a.bin, sha256: \(Self.sha(v1)) }\n")
        #expect(try s.runJSON().status == 0)
        s.origin.serve("/a.bin", OriginResource(v2, etag: "\"v2\""))
        try s.feed("refresh: 24h\nresources:\n  - { url: ORIGIN/a.bin, sha256: \(Self.sha(v2)) }\n")
        let plan = try s.plan()
        #expect(plan.first?["state"] as? String == "due" && plan.first?["reason"] as? String == "changed", "\(plan)")
        #expect(s.digest("t/a.bin") == Self.sha(v1))  // the old copy stays until the new one is verified
        let result = try s.runJSON()
        #expect(result.status == 0 && result.placed("a.bin"), "\(result.diagnostics)")
        let request = try #require(s.origin.requests(to: "/a.bin").last)
        #expect(request.header("if-none-match") == nil && request.header("if-modified-since") == nil)
        #expect(s.digest("t/a.bin") == Self.sha(v2))
        #expect(try s.plan().first?["state"] as? String == "fresh")
    }

    /// A changed `size` is a change too; removing `sha256` or `size` from an entry is not.
    @Test func aChangedSizeIsAChangeARemovedOneIsNot() throws {
        let s = try FaultHarness()
        let v1 = FaultTests.bytes(2000, seed: 506), v2 = FaultTests.bytes(2500, seed: 507)
        s.origin.serve("/a.bin", OriginResource(v1, etag: "\"v1\""))
        try s.feed("refresh: 24h\nresources:\n  - { url: ORIGIN/a.bin, size: 2000, sha256: \(Self.sha(v1)) }\n")
        #expect(try s.runJSON().status == 0)
        try s.feed("refresh: 24h\nresources:\n  - { url: ORIGIN/a.bin }\n")
        #expect(try s.plan().first?["state"] as? String == "fresh")
        #expect(try s.runJSON().status == 0 && s.origin.requests(to: "/a.bin").count == 1)
        s.origin.serve("/a.bin", OriginResource(v2, etag: "\"v2\""))
        try s.feed("refresh: 24h\nresources:\n  - { url: ORIGIN/a.bin, size: 2500 }\n")
        #expect(try s.plan().first?["reason"] as? String == "changed")
        #expect(try s.runJSON().status == 0)
        #expect(s.digest("t/a.bin") == Self.sha(v2))
    }

    /// A changed entry starts its attempts afresh: failures recorded for the old entry (here
    /// a wrong `sha256`, failed for the release) do not hold the corrected one back.
    @Test func aChangedEntryStartsItsAttemptsAfresh() throws {
        let s = try FaultHarness()
        let body = FaultTests.bytes(2000, seed: 508)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"v1\""))
        let wrong = String(repeating: "0", count: 64)
        try s.feed("retry: { attempts: 1 }\nresources:\n  - { url: ORIGIN/a.bin, sha256: \(wrong) }\n")
        #expect(try s.runJSON().status == 1)
        #expect(try s.plan().first?["state"] as? String == "failed")
        try s.feed("retry: { attempts: 1 }\nresources:\n  - { url: ORIGIN/a.bin, sha256: \(Self.sha(body)) }\n")
        let plan = try s.plan()
        #expect(plan.first?["state"] as? String == "due", "\(plan)")
        let result = try s.runJSON()
        #expect(result.status == 0 && result.placed("a.bin"), "\(result.diagnostics)")
    }
}
