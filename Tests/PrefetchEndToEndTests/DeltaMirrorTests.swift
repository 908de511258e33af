import Foundation
import Testing
import TestSupport
import PrefetchCore

/// SPEC §8's mirrors for a delta (§9 step 3), through the real binary against two origins: the
/// resource's trouble at one URL moves the delta to the next, which goes on only with a
/// control file of the same SHA-1 (its partial scanned again as a seed); a mirror with another
/// control file is fetched whole; every URL failing counts one attempt; a URL whose origin is
/// held is not asked.
@Suite(.serialized) struct DeltaMirrorTests {
    /// The harness's origin (the primary) and a mirror both serving `new` and `control`, the
    /// cache holding `old`, the entry listing the mirror.
    static func mirrored(_ old: [UInt8], _ new: [UInt8], mirrorControl: [UInt8]? = nil,
                         retry: String = "retry:\n  attempts: 3\n  backoff: 2h\n") throws -> (FaultHarness, TestOrigin) {
        let s = try DeltaTests.changed(old, new)
        let mirror = try TestOrigin()
        mirror.serve("/img.bin", OriginResource(new, etag: "\"m2\""))
        mirror.serve("/img.bin.zsync", OriginResource(try mirrorControl ?? Zsyncmake.control(new, name: "img.bin"), etag: "\"mz2\""))
        try s.feed(DeltaTests.entry(new, more: "    mirrors: [\(mirror.url("/img.bin"))]\n") + retry)
        return (s, mirror)
    }

    /// A 503 to the primary's ranges, after its control file was read: the delta moves to the
    /// mirror, whose control file has the same SHA-1, and goes on there with its partial as a
    /// seed (its ranges only, no whole fetch); no attempt counted, the primary's origin held,
    /// `served_by` the mirror.
    @Test func aFailingURLMovesTheDeltaToAMirrorWithTheSameControlFile() throws {
        let (old, new) = DeltaTests.pair(61)
        let (s, mirror) = try Self.mirrored(old, new)
        s.origin.inject("/img.bin", [.status(503)])  // the first ranged request
        let run = try s.runJSON()
        #expect(run.status == 0, "a mirror that served is no failure of the run: \(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new)
        let moved = run.retries("img.bin")
        #expect(moved.count == 1 && moved.first?["next_url"] as? String == mirror.url("/img.bin"), "\(run.stdout)")
        #expect(DeltaTests.event(run, "placed")?["delta"] as? Bool == true, "\(run.stdout)")
        #expect(DeltaTests.event(run, "delta") == nil, "the delta was used: \(run.stdout)")
        #expect(mirror.requests(to: "/img.bin.zsync").count == 1)
        let ranged = mirror.requests(to: "/img.bin")
        #expect(!ranged.isEmpty && ranged.allSatisfy { $0.header("range") != nil }, "only ranges from the mirror")
        #expect(ranged.allSatisfy { $0.header("if-range") == nil || $0.header("if-range") == "\"m2\"" }, "no If-Range of the primary's")
        #expect(mirror.bytesSent(to: "/img.bin") < new.count / 4, "\(mirror.bytesSent(to: "/img.bin")) bytes of \(new.count)")
        #expect(s.resourceState("img.bin")?.failures ?? 0 == 0, "no attempt counted")
        #expect(s.state()?.originHolds.isEmpty == false, "the primary's 503 holds its origin")
        let row = try #require(try s.plan().first { $0["path"] as? String == "img.bin" })
        #expect(row["served_by"] as? String == mirror.url("/img.bin"), "\(row)")
        #expect(s.partials.isEmpty, "\(s.partials)")
    }

    /// The mirror's control file is of another version (not yet regenerated there): the delta
    /// does not move; the resource is fetched whole from the mirror, with one
    /// `delta not used: mirror differs` line, and no attempt counted.
    @Test func aMirrorWithAnotherControlFileIsFetchedWhole() throws {
        let (old, new) = DeltaTests.pair(62)
        let stale = try Zsyncmake.control(old, name: "img.bin")
        let (s, mirror) = try Self.mirrored(old, new, mirrorControl: stale)
        s.origin.inject("/img.bin", [.status(503)])
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new)
        let delta = try #require(DeltaTests.event(run, "delta"), "\(run.stdout)")
        #expect(delta["reason"] as? String == "mirror differs" && delta["used"] as? Bool == false, "\(delta)")
        let placed = try #require(DeltaTests.event(run, "placed"))
        #expect(placed["fetched"] as? Int == new.count && placed["reused"] as? Int == 0, "a whole fetch: \(placed)")
        #expect(mirror.requests(to: "/img.bin").count == 1 && mirror.requests(to: "/img.bin").first?.header("range") == nil,
                "one whole GET at the mirror")
        #expect(s.resourceState("img.bin")?.failures ?? 0 == 0, "no attempt counted")
        let text = try s.run(["run"], environment: ["PREFETCH_CLOCK_OFFSET": "+1m"])
        #expect(text.status == 0, "\(text.diagnostics)")
    }

    /// The control file fails at every URL (a 503 at each): one attempt is counted for the
    /// pass, with every URL's failure; no whole fetch; each origin held.
    @Test func everyURLFailingCountsOneAttempt() throws {
        let (old, new) = DeltaTests.pair(63)
        let (s, mirror) = try Self.mirrored(old, new)
        s.origin.inject("/img.bin.zsync", [.status(503)])
        mirror.inject("/img.bin.zsync", [.status(503)])
        let before = s.origin.requests(to: "/img.bin").count
        let run = try s.runJSON()
        #expect(run.status == 1, "\(run.stdout)")
        let error = try #require(run.failure("img.bin"), "\(run.stdout)")
        #expect(error.hasPrefix("every URL failed: control file: HTTP 503 (") && error.contains(mirror.url("/img.bin")), "\(error)")
        #expect(s.resourceState("img.bin")?.failures == 1, "one attempt for the pass")
        #expect(s.origin.requests(to: "/img.bin").count == before && mirror.requests(to: "/img.bin").isEmpty, "no whole fetch")
        #expect(s.state()?.originHolds.count == 2, "both origins held")
        #expect(s.cached("t/img.bin") == old)
    }

    /// The primary's origin is held (an earlier run's 503, for 2 h): the delta goes to the
    /// mirror without asking the primary, and the resource is not counted with the hold.
    @Test func aHeldOriginIsNotAskedTheMirrorIs() throws {
        let (old, new) = DeltaTests.pair(64)
        let (s, mirror) = try Self.mirrored(old, new)
        s.origin.serve("/other.bin", OriginResource(FaultTests.bytes(1000, seed: 65)))
        s.origin.inject("/other.bin", [.status(503)])
        // Another file of the primary's origin, earlier in the feed: its whole transfer's 503 holds the origin.
        try s.feed(DeltaTests.entry(new, more: "    mirrors: [\(mirror.url("/img.bin"))]\n")
                   + "  - url: ORIGIN/other.bin\nretry:\n  attempts: 3\n  backoff: 2h\n")
        let run = try s.runJSON(timeout: 30)
        #expect(s.cached("t/img.bin") == new, "\(run.stdout)")
        #expect(s.origin.requests(to: "/img.bin.zsync").isEmpty, "the held primary is not asked")
        #expect(mirror.requests(to: "/img.bin.zsync").count == 1)
        #expect(DeltaTests.event(run, "placed")?["delta"] as? Bool == true, "\(run.stdout)")
        #expect(run.failure("img.bin") == nil, "\(run.stdout)")
    }

    /// Three URLs: the primary's ranges fail after its control file was read (SHA-1 X), the
    /// first mirror's control file fails, and the second mirror's is of another version: the
    /// delta still needs X there (`mirror differs`), so that file is fetched whole.
    @Test func theSameSHA1IsNeededAfterTwoFailuresInARow() throws {
        let (old, new) = DeltaTests.pair(70)
        let (s, mirror) = try Self.mirrored(old, new)
        let second = try TestOrigin()
        second.serve("/img.bin", OriginResource(new, etag: "\"s2\""))
        second.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(old, name: "img.bin"), etag: "\"sz1\""))
        try s.feed(DeltaTests.entry(new, more: "    mirrors: [\(mirror.url("/img.bin")), \(second.url("/img.bin"))]\n")
                   + "retry:\n  attempts: 3\n  backoff: 2h\n")
        s.origin.inject("/img.bin", [.status(503)])
        mirror.inject("/img.bin.zsync", [.status(503)])
        let run = try s.runJSON()
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        #expect(DeltaTests.event(run, "delta")?["reason"] as? String == "mirror differs", "\(run.stdout)")
        #expect(second.requests(to: "/img.bin").map { $0.header("range") } == [nil], "one whole GET at the second mirror")
    }

    /// A `200` to the primary's ranges whose body fails the entry's `sha256` refuses the delta
    /// for the release: the next URL is a whole fetch, with no control file asked there.
    @Test func aRefusedDeltaMovesOnAsAWholeFetch() throws {
        let (old, new) = DeltaTests.pair(71)
        let (s, mirror) = try Self.mirrored(old, new)
        let other = FaultTests.bytes(new.count, seed: 72)
        s.origin.serve("/img.bin", OriginResource(other, etag: "\"v2\""))  // not the bytes the sha256 names; the control file is new's
        s.origin.inject("/img.bin", [.ignoreRange])
        let run = try s.runJSON()
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        #expect(run.events.filter { $0["type"] as? String == "delta" }.count == 1, "one delta line: \(run.stdout)")
        #expect(mirror.requests(to: "/img.bin.zsync").isEmpty, "no delta again at the mirror")
        #expect(mirror.requests(to: "/img.bin").map { $0.header("range") } == [nil], "one whole GET at the mirror")
    }

    /// A current copy due for revalidation whose primary is held goes to the mirror, which
    /// never answered for it (no validators there): a control file with the copy's SHA-1 makes
    /// it fresh — no whole fetch, no `delta not used`.
    @Test func aCurrentCopyIsRevalidatedAtAMirrorWithoutValidators() throws {
        let (old, _) = DeltaTests.pair(73)
        let s = try FaultHarness()
        let mirror = try TestOrigin()
        s.origin.serve("/img.bin", OriginResource(old, etag: "\"v1\""))
        mirror.serve("/img.bin", OriginResource(old, etag: "\"m1\""))
        mirror.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(old, name: "img.bin"), etag: "\"mz1\""))
        s.origin.serve("/other.bin", OriginResource(FaultTests.bytes(1000, seed: 74)))
        try s.feed("refresh: 0s\nzsync: auto\nretry:\n  attempts: 3\n  backoff: 2h\nresources:\n  - url: ORIGIN/img.bin\n"
                   + "    mirrors: [\(mirror.url("/img.bin"))]\n  - url: ORIGIN/other.bin\n    zsync: none\n")
        #expect(try s.run().status == 0)
        #expect(s.cached("t/img.bin") == old && mirror.requests(to: "/img.bin").isEmpty)
        s.origin.inject("/other.bin", [.status(503)])  // the next release: the primary's origin held by another file
        let run = try s.runJSON(timeout: 30)
        #expect(DeltaTests.event(run, "delta") == nil, "\(run.stdout)")
        #expect(run.events.contains { $0["type"] as? String == "fresh" && $0["path"] as? String == "img.bin" }, "\(run.stdout)")
        #expect(mirror.requests(to: "/img.bin").isEmpty && mirror.requests(to: "/img.bin.zsync").count == 1, "only the control file at the mirror")
        #expect(s.cached("t/img.bin") == old)
    }
}
