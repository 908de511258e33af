import Foundation
import Testing
import TestSupport
import PrefetchCore

/// SPEC §9, "Deltas (zsync)", through the real binary against the test origin: a changed file
/// costs the blocks that changed; the delta's own trouble falls back to one whole fetch in the
/// same pass with one `delta not used` line; the resource's trouble is its own; whatever a
/// server answers, nothing wrong is ever placed.
@Suite(.serialized) struct DeltaTests {
    static let size = 1 << 20

    /// The old and new versions of a file: 16 scattered 3 KiB edits and a 100-byte insertion.
    static func pair(_ seed: UInt64) -> (old: [UInt8], new: [UInt8]) {
        let old = FaultTests.bytes(size, seed: seed)
        return (old, Zsyncmake.edited(old, seed: seed, edits: 16, editLength: 3_000, insertion: 100))
    }

    static func entry(_ body: [UInt8], zsync: String = "auto", more: String = "") -> String {
        "resources:\n  - url: ORIGIN/img.bin\n    sha256: \(FaultTests.sha(body))\n    zsync: \(zsync)\n" + more
    }

    /// A cache holding `old` at `t/img.bin`, and an origin now serving `new` with its control file.
    static func changed(_ old: [UInt8], _ new: [UInt8], control: [UInt8]? = nil) throws -> FaultHarness {
        let s = try FaultHarness()
        s.origin.serve("/img.bin", OriginResource(old, etag: "\"v1\""))
        try s.feed(entry(old))
        let first = try s.run()
        #expect(first.status == 0, "\(first.diagnostics)")
        #expect(s.origin.requests(to: "/img.bin.zsync").isEmpty, "no seed: no control file asked")
        s.origin.serve("/img.bin", OriginResource(new, etag: "\"v2\""))
        s.origin.serve("/img.bin.zsync", OriginResource(try control ?? Zsyncmake.control(new, name: "img.bin"), etag: "\"z2\""))
        try s.feed(entry(new))
        return s
    }

    static func event(_ run: RunResult, _ type: String) -> [String: Any]? { run.events.first { $0["type"] as? String == type } }

    /// The changed entry's control file is read, the cached copy scanned, and only the missing
    /// blocks fetched, as multi-range requests; the file placed is the new one.
    @Test func aChangedFileCostsTheBlocksThatChanged() throws {
        let (old, new) = Self.pair(1)
        let s = try Self.changed(old, new)
        // The plan: due with `changed (delta)`, its whole size, and the control file's bound on top.
        let row = try #require(try s.plan().first { $0["path"] as? String == "img.bin" })
        #expect(row["reason"] as? String == "changed (delta)" && row["zsync"] as? String == "auto", "\(row)")
        #expect(row["remaining"] as? Int == old.count + 65_536, "the copy's length and 64 KiB (no size in the entry): \(row)")
        #expect(try s.run(["plan"]).stdout.contains("changed (delta)"))
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new)
        let placed = try #require(Self.event(run, "placed"), "\(run.stdout)")
        let fetched = try #require(placed["fetched"] as? Int), reused = try #require(placed["reused"] as? Int)
        #expect(placed["delta"] as? Bool == true && fetched < new.count / 5 && reused > new.count * 3 / 4, "\(placed)")
        #expect(Self.event(run, "delta") == nil, "the delta was used: \(run.stdout)")
        let ranged = s.origin.requests(to: "/img.bin")
        #expect(ranged.count >= 2 && ranged.dropFirst().allSatisfy { $0.header("range")?.hasPrefix("bytes=") == true }, "\(ranged.map(\.headers))")
        #expect(ranged.dropFirst().contains { ($0.header("range") ?? "").contains(",") }, "multi-range requests")
        // From the second ranged request on, If-Range carries the first 206's strong ETag.
        #expect(ranged.dropFirst(2).allSatisfy { $0.header("if-range") == "\"v2\"" })
        #expect(s.origin.bytesSent(to: "/img.bin") < new.count / 4 + old.count, "what came over the wire for the new version")
        #expect(s.resourceState("img.bin")?.validators.etag == "\"v2\"", "the URL keeps the 206s' strong validator")
    }

    /// The delta's own trouble (SPEC §9): one whole fetch in the same pass, one
    /// `delta not used: REASON` line, no attempt counted; the right file placed.
    @Test(arguments: [
        ("missing", "control file missing"), ("refused", "control file refused"), ("junk", "control file unusable"),
        ("blocksize", "control file unusable"), ("zmap", "control file unusable"), ("other version", "mismatch"),
    ])
    func theDeltasTroubleIsOneWholeFetch(_ trouble: String, _ reason: String) throws {
        let (old, new) = Self.pair(2)
        let s = try Self.changed(old, new)
        var control = try Zsyncmake.control(new, name: "img.bin")
        let text = String(decoding: control.prefix(400), as: UTF8.self)
        switch trouble {
        case "missing": s.origin.remove("/img.bin.zsync")
        case "refused": s.origin.inject("/img.bin.zsync", [.status(403)])
        case "junk": control = Array("\u{0}\u{1}binary junk\n".utf8)
        case "blocksize": control = Array(text.replacingOccurrences(of: "Blocksize: 2048", with: "Blocksize: 3").utf8) + control.dropFirst(400)
        case "zmap": control = Array("Z-Map2: 1\n".utf8) + control
        default: control = try Zsyncmake.control(Zsyncmake.edited(new, seed: 9, edits: 1, editLength: 10, insertion: 0), name: "img.bin")
        }
        if !["missing", "refused"].contains(trouble) { s.origin.serve("/img.bin.zsync", OriginResource(control, etag: "\"z3\"")) }
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new, "\(trouble)")
        let delta = try #require(Self.event(run, "delta"), "\(trouble): \(run.stdout)")
        #expect(delta["reason"] as? String == reason && delta["used"] as? Bool == false, "\(trouble): \(delta)")
        let placed = try #require(Self.event(run, "placed"))
        #expect(placed["fetched"] as? Int == new.count && placed["reused"] as? Int == 0, "\(trouble): a whole fetch: \(placed)")
        #expect(s.origin.requests(to: "/img.bin").last?.header("range") == nil, "the last request is the whole fetch")
        #expect(s.resourceState("img.bin")?.failures ?? 0 == 0, "no attempt counted")
        let textRun = try s.run()  // nothing due now: the text line is seen in a run of its own below
        #expect(textRun.status == 0)
    }

    /// No delta is tried again for a resource in the release its delta was not used in: the
    /// whole fetch that failed is retried as a whole fetch, with no control file asked again.
    /// (A feed with neither schedule nor window has a new release at each run.)
    @Test func aRefusedDeltaIsNotTriedAgainInItsRelease() throws {
        let (old, new) = Self.pair(8)
        let s = try Self.changed(old, new)
        s.origin.remove("/img.bin.zsync")
        s.origin.inject("/img.bin", [.status(503)])
        // A daily release 12 hours from now (both runs fall in the one before it), and a retry an hour or two later.
        let hour = (Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).hour! + 12) % 24
        try s.feed("timezone: UTC\nschedule: \"0 \(hour) * * *\"\n" + Self.entry(new) + "retry:\n  attempts: 3\n  backoff: 2h\n")
        let first = try s.runJSON()
        #expect(first.status == 1 && Self.event(first, "delta")?["reason"] as? String == "control file missing", "\(first.stdout)")
        #expect(s.origin.requests(to: "/img.bin.zsync").count == 1)
        let second = try s.runJSON(offset: "+3h")
        #expect(second.status == 0, "\(second.diagnostics)")
        #expect(s.cached("t/img.bin") == new)
        #expect(s.origin.requests(to: "/img.bin.zsync").count == 1, "no control file asked again in that release")
        #expect(Self.event(second, "delta") == nil && Self.event(second, "placed")?["delta"] == nil, "\(second.stdout)")
    }

    /// The metered budget in two steps (SPEC §9): the control file only when the budget covers
    /// its bound, then the ranges only when what is left covers the bytes still missing; else
    /// the delta pauses (`metered budget used`) and keeps its partial, which a later run resumes.
    @Test func aMeteredBudgetAdmitsADeltaInTwoSteps() throws {
        let (old, new) = Self.pair(9)
        let s = try Self.changed(old, new)
        let metered = ["run", "--json", "--assume", "network=metered"]
        // Less than the control file's bound (64 KiB without a size): nothing is asked.
        try s.feed("conditions: { metered_budget: 10KiB/day }\n" + Self.entry(new))
        let none = try s.run(metered)
        #expect(none.status == 0, "\(none.diagnostics)")
        #expect(s.origin.requests(to: "/img.bin.zsync").isEmpty, "\(none.stdout)")
        // The bound and 1 KiB: the control file, the scan, then a pause before the ranges.
        try s.feed("conditions: { metered_budget: 65KiB/day }\n" + Self.entry(new))
        let asked = s.origin.requests(to: "/img.bin").count
        let paused = try s.run(metered)
        #expect(paused.status == 0, "\(paused.diagnostics)")
        let pause = try #require(paused.events.first { $0["type"] as? String == "paused" }, "\(paused.stdout)")
        #expect(pause["reason"] as? String == "metered budget used", "\(pause)")
        #expect(s.origin.requests(to: "/img.bin.zsync").count == 1 && s.origin.requests(to: "/img.bin").count == asked, "no ranges asked")
        #expect(s.cached("t/img.bin") == old && s.partials.count == 2, "the delta partial and its control file are kept: \(s.partials)")
        // `status --json`: the delta partial, with no offset to resume from; `plan --json`: what it still misses.
        let statusLines = try s.run(["status", "--json"]).events
        let feedLine = try #require(statusLines.first { $0["type"] as? String == "feed" })
        // The cache's use counts the delta partial (at its apparent size, the file's length) and its control file.
        let used = try #require(statusLines.first { $0["type"] as? String == "cache" }?["used"] as? Int)
        #expect(used >= old.count + new.count, "used \(used): the copy and the delta partial")
        let kept = try #require((feedLine["partials"] as? [[String: Any]])?.first, "\(feedLine)")
        #expect(kept["resume_from"] is NSNull && kept["delta"] as? Bool == true && kept["total"] as? Int == new.count, "\(kept)")
        let missing = try #require(kept["missing"] as? Int)
        #expect(missing > 0 && missing < new.count / 4, "\(kept)")
        let row = try #require(try s.plan().first { $0["path"] as? String == "img.bin" })
        #expect(row["remaining"] as? Int == missing && row["reason"] as? String == "changed (delta)", "\(row)")
        // A larger budget: the kept partial resumes (its control file asked conditionally).
        try s.feed("conditions: { metered_budget: 1MiB/day }\n" + Self.entry(new))
        let resumed = try s.run(metered)
        #expect(resumed.status == 0, "\(resumed.diagnostics)")
        #expect(s.cached("t/img.bin") == new && s.partials.isEmpty, "\(resumed.stdout)")
        #expect(s.origin.requests(to: "/img.bin.zsync").last?.header("if-none-match") == "\"z2\"")
        #expect(Self.event(resumed, "placed")?["delta"] as? Bool == true, "\(resumed.stdout)")
    }

    /// Whatever a server does with a multi-range request, nothing wrong is placed: answers RFC
    /// 9110 allows (parts reversed, coalesced, overlapping; one range at a time) still make a
    /// delta; the others fall back to one whole fetch.
    @Test(arguments: [
        ([OriginFault.partsReversed], nil as String?), ([.partsCoalesced], nil), ([.partsSplitOverlapping], nil), ([.onlyFirstRange], nil),
        ([.partsOverlapping], "ranges invalid"), ([.partNotAskedFor], "ranges invalid"), ([.partCutShort], "ranges invalid"),
        ([.onlyFirstRange, .rangeETag("\"other\"")], "ranges stale"), ([.rangeCompleteLength(size * 2)], "ranges stale"),
        ([.wholeForMulti], "ranges ignored"), ([.status(416)], "range not satisfiable"),
    ])
    func whateverTheServerAnswersNothingWrongIsPlaced(_ faults: [OriginFault], _ reason: String?) throws {
        let fault = faults.map { "\($0)" }.joined(separator: ", ")
        let (old, new) = Self.pair(3)
        let s = try Self.changed(old, new)
        // The first ranged request meets the fault (the whole fetch of the first run is done).
        s.origin.inject("/img.bin", faults)
        let run = try s.runJSON()
        #expect(run.status == 0, "\(fault): \(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new, "\(fault)")
        let delta = Self.event(run, "delta")
        #expect(delta?["reason"] as? String == reason, "\(fault): \(run.stdout)")
        let placed = try #require(Self.event(run, "placed"))
        #expect((placed["delta"] as? Bool == true) == (reason == nil), "\(fault): \(placed)")
    }

    /// A 200 to a range request (SPEC §9): the delta is not used, and that body is the whole
    /// fetch, judged as any — no second request; one that fails its `sha256` is the resource's
    /// failure (a mismatch), not another whole fetch.
    @Test func aWholeAnswerToARangeRequestIsTheWholeFetch() throws {
        let (old, new) = Self.pair(16)
        let s = try Self.changed(old, new)
        let before = s.origin.requests(to: "/img.bin").count
        s.origin.inject("/img.bin", [.wholeForMulti])
        let run = try s.runJSON()
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        #expect(Self.event(run, "delta")?["reason"] as? String == "ranges ignored", "\(run.stdout)")
        let placed = try #require(Self.event(run, "placed"))
        #expect(placed["delta"] == nil && placed["reused"] as? Int == 0 && (placed["fetched"] as? Int ?? 0) > new.count, "\(placed)")
        let asked = s.origin.requests(to: "/img.bin").dropFirst(before)
        #expect(asked.count == 1 && asked.first?.header("range") != nil, "one request, the ranged one: \(asked.map(\.headers))")
        // The next version: the 200 carries another file (a CDN's stale copy): a mismatch, the old copy kept.
        let newer = Zsyncmake.edited(new, seed: 17, edits: 16, editLength: 3_000, insertion: 100)
        s.origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(newer, name: "img.bin"), etag: "\"z3\""))
        s.origin.serve("/img.bin", OriginResource(newer, etag: "\"v3\""))
        s.origin.inject("/img.bin", [.status(200, body: String(repeating: "x", count: 5000), headers: [("ETag", "\"cdn\"")])])
        try s.feed(Self.entry(newer))
        let failed = try s.runJSON()
        #expect(failed.status == 1, "\(failed.stdout)")
        #expect(Self.event(failed, "delta")?["reason"] as? String == "ranges ignored", "\(failed.stdout)")
        let failure = try #require(failed.events.first { $0["type"] as? String == "failed" }, "\(failed.stdout)")
        #expect((failure["error"] as? String ?? "").contains("sha256 mismatch"), "\(failure)")
        #expect(s.cached("t/img.bin") == new && s.partials.isEmpty, "the copy stays: \(s.partials)")
    }

    /// The resource's own trouble (a 5xx from its own origin for the control file): a failure
    /// judged as any, and no whole fetch in that pass.
    @Test func aServerErrorAtTheResourcesOriginIsItsFailure() throws {
        let (old, new) = Self.pair(4)
        let s = try Self.changed(old, new)
        s.origin.inject("/img.bin.zsync", Array(repeating: .status(500), count: 20))
        try s.feed(Self.entry(new) + "retry:\n  attempts: 2\n  backoff: 1s\n")
        let before = s.origin.requests(to: "/img.bin").count
        let run = try s.runJSON()
        #expect(run.status == 1, "\(run.stdout)")
        #expect(s.origin.requests(to: "/img.bin").count == before, "no whole fetch in that pass")
        #expect(s.cached("t/img.bin") == old, "the copy stays")
        let failed = run.events.filter { $0["type"] as? String == "failed" }
        #expect(failed.last?["error"] as? String == "control file: HTTP 500", "\(run.stdout)")
        #expect(Self.event(run, "delta") == nil)
    }

    /// The control file stands in for the copy's revalidation (SPEC §9): asked conditionally on
    /// its own validators while its SHA-1 is the copy's, a 304 or the copy's SHA-1 makes the copy
    /// fresh with no request to the resource's URL; a new version is then a delta.
    @Test func theControlFileIsTheCopysRevalidation() throws {
        let (old, new) = Self.pair(7)
        let s = try FaultHarness()
        s.origin.serve("/img.bin", OriginResource(old, etag: "\"v1\""))
        s.origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(old, name: "img.bin"), etag: "\"z1\""))
        try s.feed("refresh: 0s\nzsync: auto\nresources:\n  - url: ORIGIN/img.bin\n")
        #expect(try s.run().status == 0)
        #expect(s.origin.requests(to: "/img.bin.zsync").isEmpty, "no seed yet: fetched whole, no control file")
        // Its SHA-1 was recorded as the body streamed in (what the control file is compared with).
        let store = try #require(try StateStore.openReadOnly(s.cache.path + "/.prefetch/state.db"))
        let controlText = String(decoding: try Zsyncmake.control(old, name: "img.bin"), as: UTF8.self)
        let sha1 = try #require(controlText.firstMatch(of: /SHA-1: ([0-9a-f]{40})/)?.1)
        #expect(try store.recordedSHA1(ResourceKey(feed: "t", path: "img.bin")) == String(sha1))
        // A release: the control file, without conditions (none known yet); its SHA-1 is the copy's.
        let second = try s.runJSON()
        #expect(second.status == 0 && Self.event(second, "fresh") != nil, "\(second.stdout)")
        #expect(s.origin.requests(to: "/img.bin").count == 1, "no request to the resource's URL")
        #expect(s.origin.requests(to: "/img.bin.zsync").last?.header("if-none-match") == nil)
        // The next: conditionally on the control file's validators, a 304.
        let third = try s.runJSON()
        #expect(third.status == 0 && Self.event(third, "fresh") != nil, "\(third.stdout)")
        #expect(s.origin.requests(to: "/img.bin.zsync").last?.header("if-none-match") == "\"z1\"")
        #expect(s.origin.requests(to: "/img.bin").count == 1)
        // A new version: the conditional request brings the new control file, and a delta.
        s.origin.serve("/img.bin", OriginResource(new, etag: "\"v2\""))
        s.origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(new, name: "img.bin"), etag: "\"z2\""))
        let fourth = try s.runJSON()
        #expect(fourth.status == 0 && Self.event(fourth, "placed")?["delta"] as? Bool == true, "\(fourth.stdout)")
        #expect(s.cached("t/img.bin") == new)
        // The copy's SHA-1 is the new control file's: the next release asks with its validators.
        let fifth = try s.runJSON()
        #expect(fifth.status == 0 && Self.event(fifth, "fresh") != nil, "\(fifth.stdout)")
        #expect(s.origin.requests(to: "/img.bin.zsync").last?.header("if-none-match") == "\"z2\"")
    }

    /// A `release` feed (SPEC §6): the release being staged holds the live generation's files
    /// (hard links), so the previous version is the seed; the delta's file is placed in the
    /// staged generation, readers see it when the release switches, and the generation before
    /// keeps the old version.
    @Test func aReleaseFeedsPreviousGenerationIsTheSeed() throws {
        let (old, new) = Self.pair(10)
        let s = try FaultHarness()
        s.origin.serve("/img.bin", OriginResource(old, etag: "\"v1\""))
        try s.feed("consistency: release\n" + Self.entry(old))
        #expect(try s.run().status == 0)
        s.origin.serve("/img.bin", OriginResource(new, etag: "\"v2\""))
        s.origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(new, name: "img.bin"), etag: "\"z2\""))
        try s.feed("consistency: release\n" + Self.entry(new))
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        let placed = try #require(Self.event(run, "placed"), "\(run.stdout)")
        #expect(placed["delta"] as? Bool == true && (placed["fetched"] as? Int ?? .max) < new.count / 5, "\(placed)")
        #expect(s.cached("t/img.bin") == new, "readers see the new version once the release switched")
        let generations = s.cache.appendingPathComponent(".prefetch/generations/t")
        let kept = try FileManager.default.contentsOfDirectory(atPath: generations.path).compactMap(Int.init).sorted()
        #expect(kept.count == 2, "\(kept)")
        let before = try Data(contentsOf: generations.appendingPathComponent("\(kept[0])/img.bin"))
        #expect(Array(before) == old, "the generation before keeps the old version")
    }

    /// A full disk while a delta writes (SPEC §7): the run pauses and fails, nothing is placed,
    /// and the next run resumes the delta.
    @Test func aFullDiskPausesTheDelta() throws {
        let (old, new) = Self.pair(15)
        let s = try Self.changed(old, new)
        let full = try s.runJSON(environment: ["PREFETCH_FAULT": "delta-write:enospc@3+"])
        #expect(full.status == 1, "\(full.diagnostics)")
        let paused = try #require(Self.event(full, "paused"), "\(full.stdout)")
        #expect(paused["reason"] as? String == "disk full" && Self.event(full, "delta") == nil, "\(full.stdout)")
        #expect(full.stderr.contains("disk full") && s.cached("t/img.bin") == old, "\(full.stderr)")
        let again = try s.runJSON()
        #expect(again.status == 0 && s.cached("t/img.bin") == new, "\(again.diagnostics)")
        #expect(Self.event(again, "placed")?["delta"] as? Bool == true, "\(again.stdout)")
    }

    /// The text output: `placed … (delta: F fetched, R reused)`, and `delta not used: REASON`.
    @Test func theLinesSayWhatTheDeltaDid() throws {
        let (old, new) = Self.pair(5)
        let s = try Self.changed(old, new)
        let run = try s.run()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(run.stdout.contains("placed  t/img.bin  1MiB in ") && run.stdout.contains(" reused)"), "\(run.stdout)")
        let (_, newer) = Self.pair(6)
        s.origin.serve("/img.bin", OriginResource(newer, etag: "\"v3\""))
        s.origin.remove("/img.bin.zsync")
        try s.feed(Self.entry(newer))
        let whole = try s.run()
        #expect(whole.status == 0, "\(whole.diagnostics)")
        #expect(whole.stdout.contains("whole   t/img.bin  delta not used: control file missing (HTTP 404)"), "\(whole.stdout)")
        #expect(s.cached("t/img.bin") == newer)
    }

    /// A copy placed before its entry had `zsync` has no recorded SHA-1: it is read once from
    /// the file (SPEC §9), so a changed entry whose control file is still the copy's version
    /// is `control file stale` at once, before any scan or range (not a mismatch at the end).
    @Test func aCopyPlacedBeforeZsyncHasItsSHA1ReadOnce() throws {
        let (old, new) = Self.pair(68)
        let s = try FaultHarness()
        s.origin.serve("/img.bin", OriginResource(old, etag: "\"v1\""))
        try s.feed("resources:\n  - url: ORIGIN/img.bin\n    sha256: \(FaultTests.sha(old))\n")
        #expect(try s.run().status == 0)
        #expect(s.state()?.resources[ResourceKey(feed: "t", path: "img.bin")] != nil)
        s.origin.serve("/img.bin", OriginResource(new, etag: "\"v2\""))
        s.origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(old, name: "img.bin"), etag: "\"z1\""))  // not regenerated
        try s.feed(Self.entry(new))
        let run = try s.runJSON()
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        let delta = try #require(Self.event(run, "delta"), "\(run.stdout)")
        #expect(delta["reason"] as? String == "control file stale", "\(delta)")
        #expect(s.origin.requests(to: "/img.bin").allSatisfy { $0.header("range") == nil }, "no range asked")
    }
}
