import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// More of SPEC §9's deltas through the real binary: a signal ends a delta within seconds
/// (its partial kept), the manifest's headers go to a control file only on the resource URL's
/// own origin, a control file elsewhere that fails is the delta's trouble, `gc` removes the
/// delta files of a resource no longer listed, and the metrics count the bytes a delta reused.
@Suite(.serialized) struct DeltaRunTests {
    /// SIGTERM while the ranges trickle in: the run ends within seconds, says the delta paused,
    /// keeps its partial and control file, and the next run resumes and places the new version.
    @Test func aSignalEndsADeltaWithinSeconds() throws {
        let (old, new) = DeltaTests.pair(31)
        let s = try DeltaTests.changed(old, new)
        s.origin.inject("/img.bin", Array(repeating: .trickle(bytesPerSecond: 20_000), count: 50))
        let asked = s.origin.requests(to: "/img.bin").count
        let (process, out) = try s.startRun()
        let deadline = Date().addingTimeInterval(20)
        while s.origin.requests(to: "/img.bin").count == asked, Date() < deadline { usleep(10_000) }
        Thread.sleep(forTimeInterval: 0.3)  // inside the ranges
        let signalled = Date()
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let took = Date().timeIntervalSince(signalled)
        #expect(took < 5, "the run ended \(took) s after SIGTERM (at most 5 s: the stop is looked at every 100 ms)")
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(said.contains("\"type\":\"paused\"") && said.contains("\"reason\":\"stopped\""), "\(said)")
        #expect(s.cached("t/img.bin") == old && s.partials.count == 2, "the old version, the delta partial and its control file: \(s.partials)")
        let again = try s.runJSON()
        #expect(again.status == 0 && s.cached("t/img.bin") == new, "\(again.diagnostics)")
        #expect(DeltaTests.event(again, "placed")?["delta"] as? Bool == true, "\(again.stdout)")
    }

    /// `zsync: URL` at another origin: the manifest's headers are not sent there (SPEC §8's
    /// rule for mirrors and redirects), and its failure is the delta's trouble (`control file
    /// unreachable`), not the resource's: one whole fetch, which carries them.
    @Test func aControlFileElsewhereGetsNoHeadersAndItsFailureIsTheDeltas() throws {
        let (old, new) = DeltaTests.pair(32)
        let s = try DeltaTests.changed(old, new)
        let elsewhere = try TestOrigin()
        elsewhere.serve("/deltas/img.bin.zsync", OriginResource(try Zsyncmake.control(new, name: "img.bin"), etag: "\"z2\""))
        let headers = "    headers: { Authorization: Bearer kiosk-42 }\n"
        try s.feed(DeltaTests.entry(new, zsync: elsewhere.url("/deltas/img.bin.zsync")) + headers)
        let run = try s.runJSON()
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        #expect(DeltaTests.event(run, "placed")?["delta"] as? Bool == true, "\(run.stdout)")
        #expect(elsewhere.requests.allSatisfy { $0.header("authorization") == nil }, "no header at another origin")
        #expect(s.origin.requests(to: "/img.bin").last?.header("authorization") == "Bearer kiosk-42", "the ranges carry them")
        // The next version, its control file at the other origin failing with a 503: the delta's trouble.
        let newer = Zsyncmake.edited(new, seed: 33, edits: 16, editLength: 3_000, insertion: 100)
        s.origin.serve("/img.bin", OriginResource(newer, etag: "\"v3\""))
        elsewhere.inject("/deltas/img.bin.zsync", [.status(503)])
        try s.feed(DeltaTests.entry(newer, zsync: elsewhere.url("/deltas/img.bin.zsync")) + headers)
        let whole = try s.runJSON()
        #expect(whole.status == 0 && s.cached("t/img.bin") == newer, "\(whole.diagnostics)")
        let delta = try #require(DeltaTests.event(whole, "delta"), "\(whole.stdout)")
        #expect(delta["reason"] as? String == "control file unreachable" && delta["detail"] as? String == "HTTP 503", "\(delta)")
    }

    /// `gc` removes a kept delta partial and its control file once the resource is no longer
    /// listed; the metrics count the bytes a delta took from its seed.
    @Test func gcAndTheMetricsKnowDeltas() throws {
        let (old, new) = DeltaTests.pair(34)
        let s = try DeltaTests.changed(old, new)
        let metrics = s.dir.file("metrics.prom")
        let run = try s.run(["run", "--json", "--metrics-file", metrics])
        #expect(run.status == 0, "\(run.diagnostics)")
        let reused = try #require(DeltaTests.event(run, "placed")?["reused"] as? Int)
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains("prefetch_reused_bytes_total{feed=\"t\",how=\"delta\"} \(reused)\n"), "\(text)")
        // A delta stopped by the budget keeps its files; the resource then leaves the manifest.
        let newer = Zsyncmake.edited(new, seed: 35, edits: 16, editLength: 3_000, insertion: 100)
        s.origin.serve("/img.bin", OriginResource(newer, etag: "\"v3\""))
        s.origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(newer, name: "img.bin"), etag: "\"z3\""))
        try s.feed("conditions: { metered_budget: 65KiB/day }\n" + DeltaTests.entry(newer))
        let paused = try s.run(["run", "--json", "--assume", "network=metered"])
        #expect(paused.status == 0)
        #expect(s.partials.count == 2, "\(s.partials) \(paused.stdout)")
        try s.feed("resources:\n  - url: ORIGIN/other.bin\n")
        s.origin.serve("/other.bin", OriginResource(FaultTests.bytes(1000, seed: 36)))
        let gc = try s.run(["gc"])
        #expect(gc.status == 0, "\(gc.diagnostics)")
        #expect(s.partials.isEmpty, "\(s.partials)")
        #expect(gc.stdout.contains(".delta") && gc.stdout.contains(".zsync"), "\(gc.stdout)")
    }

    /// A feed's `max_rate` holds for a delta's ranges too (SPEC §9: what came over the wire).
    @Test func aDeltaKeepsToTheFeedsMaxRate() throws {
        let (old, new) = DeltaTests.pair(37)
        let s = try DeltaTests.changed(old, new)
        try s.feed("limits: { max_rate: 40KiB/s }\n" + DeltaTests.entry(new))
        let started = Date()
        let run = try s.runJSON()
        let seconds = Date().timeIntervalSince(started)
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        let placed = try #require(DeltaTests.event(run, "placed"))
        let fetched = try #require(placed["fetched"] as? Int)
        #expect(placed["delta"] as? Bool == true && fetched > 60_000, "\(placed)")
        // At 40 KiB/s the ranges alone take fetched / 40 KiB seconds; half of that is the margin (libcurl's first burst).
        #expect(seconds >= Double(fetched) / 40_960 / 2, "\(fetched) bytes in \(seconds) s")
    }

    /// A hostile control file (SPEC §7's limits): 20 MB of junk with no header's end, or a
    /// real control file followed by 20 MB more, is read no further than its header allows —
    /// 64 KiB without a blank line, else exactly what its header declares — and is unusable:
    /// one whole fetch, the right file.
    @Test(arguments: ["junk", "trailing"])
    func aHugeControlFileIsReadNoFurtherThanItsHeaderAllows(_ kind: String) throws {
        let (old, new) = DeltaTests.pair(38)
        let s = try DeltaTests.changed(old, new)
        let huge = 20 << 20
        let control = kind == "junk" ? [UInt8](repeating: 0x41, count: huge)
            : try Zsyncmake.control(new, name: "img.bin") + [UInt8](repeating: 0x42, count: huge)
        s.origin.serve("/img.bin.zsync", OriginResource(control, etag: "\"huge\""))
        let run = try s.runJSON()
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        #expect(DeltaTests.event(run, "delta")?["reason"] as? String == "control file unusable", "\(run.stdout)")
        #expect(s.origin.bytesSent(to: "/img.bin.zsync") < huge / 4, "\(s.origin.bytesSent(to: "/img.bin.zsync")) bytes sent of \(control.count)")
    }

    /// A 503 from the resource URL's own origin during a delta holds the origin (SPEC §6), as
    /// a transfer's does: one `held` line for it, the hold in state.db (the plan shows the row in backoff), no
    /// whole fetch; once the hold has passed, the next run's delta probes it and places the file.
    @Test func aServerErrorThatHoldsTheOriginHoldsItForADelta() throws {
        let (old, new) = DeltaTests.pair(39)
        let s = try DeltaTests.changed(old, new)
        s.origin.inject("/img.bin.zsync", [.status(503)])
        try s.feed(DeltaTests.entry(new) + "retry:\n  attempts: 3\n  backoff: 2h\n")
        let before = s.origin.requests(to: "/img.bin").count
        let run = try s.runJSON()
        #expect(run.status == 1, "\(run.stdout)")
        let held = try #require(run.events.first { $0["type"] as? String == "held" }, "\(run.stdout)")
        #expect(held["reason"] as? String == "HTTP 503" && held["resources"] as? Int == 1, "\(held)")
        #expect(s.origin.requests(to: "/img.bin").count == before, "no whole fetch")
        #expect(s.state()?.originHolds.isEmpty == false, "the hold is recorded")
        let row = try #require(try s.plan(offset: "+1m").first { $0["path"] as? String == "img.bin" })
        #expect(row["state"] as? String == "backoff" && row["error"] as? String == "control file: HTTP 503", "\(row)")
        let again = try s.runJSON(offset: "+3h")
        #expect(again.status == 0 && s.cached("t/img.bin") == new, "\(again.diagnostics)")
        #expect(DeltaTests.event(again, "placed")?["delta"] as? Bool == true, "\(again.stdout)")
        #expect(s.state()?.originHolds.isEmpty == true, "the answer ended the hold")
    }

    /// An origin the pass's whole transfers held (another file's 503, backoff 2 h) holds the
    /// delta of a file on that origin too: counted held with it at once, never waited for.
    @Test func anOriginHeldEarlierInThePassHoldsTheDeltaWithoutWaiting() throws {
        let (old, new) = DeltaTests.pair(40)
        let s = try DeltaTests.changed(old, new)
        s.origin.serve("/other.bin", OriginResource(FaultTests.bytes(1000, seed: 41)))
        s.origin.inject("/other.bin", [.status(503)])
        try s.feed(DeltaTests.entry(new) + "  - url: ORIGIN/other.bin\nretry:\n  attempts: 3\n  backoff: 2h\n")
        let started = Date()
        let run = try s.runJSON(timeout: 30)
        #expect(Date().timeIntervalSince(started) < 20, "the delta did not wait for a 2 h hold")
        #expect(run.status == 1, "\(run.stdout)")
        let held = try #require(run.events.first { $0["type"] as? String == "held" }, "\(run.stdout)")
        #expect(held["reason"] as? String == "HTTP 503", "\(held)")
        #expect(s.origin.requests(to: "/img.bin.zsync").isEmpty && s.cached("t/img.bin") == old, "no request to a held origin")
    }

    /// A connection that breaks before a head (the ranges' request at the resource URL's own
    /// origin) holds the origin, as a transfer's does (SPEC §6): one `held` line with its
    /// cause, the hold in state.db, no whole fetch.
    @Test func aConnectionFailureDuringADeltaHoldsTheOrigin() throws {
        let (old, new) = DeltaTests.pair(66)
        let s = try DeltaTests.changed(old, new)
        s.origin.inject("/img.bin", [.raw([])])  // the first ranged request: closed before a byte
        try s.feed(DeltaTests.entry(new) + "retry:\n  attempts: 3\n  backoff: 2h\n")
        let before = s.origin.requests(to: "/img.bin").count
        let run = try s.runJSON()
        #expect(run.status == 1, "\(run.stdout)")
        let held = try #require(run.events.first { $0["type"] as? String == "held" }, "\(run.stdout)")
        #expect(held["reason"] as? String == "connection reset before a response" && held["resources"] as? Int == 1, "\(held)")
        #expect(s.origin.requests(to: "/img.bin").count == before + 1, "the ranges once, no whole fetch")
        #expect(s.state()?.originHolds.isEmpty == false, "the hold is recorded")
        #expect(s.cached("t/img.bin") == old && s.partials.count == 2, "the partial and its control file kept: \(s.partials)")
    }

    /// A 503 with `Retry-After: 2` to the control file holds the origin for 2 s, not for the
    /// feed's 2 h backoff: the run waits, probes, and places the file by delta in the same run.
    @Test func aDeltaReadsRetryAfter() throws {
        let (old, new) = DeltaTests.pair(67)
        let s = try DeltaTests.changed(old, new)
        s.origin.inject("/img.bin.zsync", [.status(503, headers: [("Retry-After", "2")])])
        try s.feed(DeltaTests.entry(new) + "retry:\n  attempts: 3\n  backoff: 2h\n")
        let started = Date()
        let run = try s.runJSON(timeout: 40)
        #expect(run.status == 0 && s.cached("t/img.bin") == new, "\(run.diagnostics)")
        #expect(DeltaTests.event(run, "placed")?["delta"] as? Bool == true, "\(run.stdout)")
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 1.5 && waited < 30, "waited \(waited) s for a Retry-After of 2 s")
        #expect(s.origin.requests(to: "/img.bin.zsync").count == 2, "asked again after the hold")
        #expect(s.state()?.originHolds.isEmpty == true, "the answer ended the hold")
    }

    /// SIGTERM while the control file is being asked for (it answers after 10 s) is a pause,
    /// as inside the ranges: no failure recorded, no attempt counted.
    @Test func aSignalDuringTheControlFileIsAPause() throws {
        let (old, new) = DeltaTests.pair(69)
        let s = try DeltaTests.changed(old, new)
        s.origin.inject("/img.bin.zsync", [.delay(seconds: 10)])
        let (process, out) = try s.startRun()
        let deadline = Date().addingTimeInterval(20)
        while s.origin.requests(to: "/img.bin.zsync").isEmpty, Date() < deadline { usleep(10_000) }
        Thread.sleep(forTimeInterval: 0.3)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(said.contains("\"type\":\"paused\"") && said.contains("\"reason\":\"stopped\""), "\(said)")
        #expect(!said.contains("\"type\":\"failed\""), "\(said)")
        #expect(s.resourceState("img.bin")?.failures ?? 0 == 0 && s.resourceState("img.bin")?.lastError == nil, "no attempt counted")
    }

    /// A control file whose head never comes (a hung service) is given up after the feed's
    /// `response_timeout`, as a transfer is, and holds its origin (SPEC §6): the run ends
    /// within the timeout and a generous margin, with one `held` line, no whole fetch.
    @Test func aHungControlFileIsGivenUpAfterTheFeedsResponseTimeout() throws {
        let (old, new) = DeltaTests.pair(75)
        let s = try DeltaTests.changed(old, new)
        s.origin.inject("/img.bin.zsync", [.delay(seconds: 60)])
        try s.feed(DeltaTests.entry(new) + "limits: { response_timeout: 2s }\nretry:\n  attempts: 3\n  backoff: 2h\n")
        let before = s.origin.requests(to: "/img.bin").count
        let started = Date()
        let run = try s.runJSON(timeout: 50)
        let took = Date().timeIntervalSince(started)
        #expect(took < 15, "the run took \(took) s with a response_timeout of 2 s")
        let held = try #require(run.events.first { $0["type"] as? String == "held" }, "\(run.stdout)")
        #expect(held["reason"] as? String == "response timeout", "\(held)")
        #expect(s.origin.requests(to: "/img.bin").count == before, "no whole fetch")
        #expect(s.cached("t/img.bin") == old)
    }
}
