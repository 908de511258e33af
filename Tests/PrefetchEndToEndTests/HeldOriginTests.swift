import Foundation
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6: an origin that is down or overloaded is held, not hammered: one attempt per
/// in-run retry for the whole origin, one `held` line for it, the hold kept in state.db for
/// later runs (`plan` says `origin held`), and any other answer ends it.
@Suite(.serialized) struct HeldOriginTests {
    static func body(_ index: Int) -> [UInt8] { FaultTests.bytes(2000 + index, seed: 700 + UInt64(index)) }

    /// A feed of `count` resources on the origin, fetched one at a time.
    static func feed(_ s: FaultHarness, count: Int, origin: String = "ORIGIN", extra: String = "") throws {
        var yaml = "retry: { attempts: 3, backoff: 1s, max_backoff: 1h }\nlimits: { concurrency: 1 }\nrefresh: 1h\nresources:\n"
        for index in 0..<count { yaml += "  - url: \(origin)/f\(index).bin\n" }
        try s.feed(yaml + extra)
    }

    /// 500 resources on a port nothing listens on: the run makes the in-run attempts one
    /// resource would (3), not 3 per resource; says so in one `held` line; and ends in
    /// seconds. (Before, it printed 500 failures and retried each one.)
    @Test func aDeadOriginIsHeldNotHammered() throws {
        let s = try FaultHarness()
        var yaml = "retry: { attempts: 3, backoff: 1s, max_backoff: 2s }\nresources:\n"
        for index in 0..<500 { yaml += "  - url: http://127.0.0.1:9/f\(index).bin\n" }
        try s.feed(yaml)
        let run = try s.runJSON(timeout: 60)
        #expect(run.status == 1, "\(run.diagnostics.prefix(2000))")
        let held = run.events.filter { $0["type"] as? String == "held" }
        #expect(held.count == 1, "\(held)")
        #expect(held.first?["origin"] as? String == "http://127.0.0.1:9" && held.first?["reason"] as? String == "connection refused")
        #expect(held.first?["resources"] as? Int == 500)
        // Requests made: the first wave (up to per_host, out before the first failure came
        // back) and then one probe per in-run retry.
        let starts = run.events.filter { $0["type"] as? String == "start" }.count
        #expect(starts <= 6 + 3, "\(starts) requests to a dead origin")
        #expect(run.seconds < 15, "the run took \(run.seconds) s")
        let text = try s.run(["run"], environment: ["PREFETCH_CLOCK_OFFSET": "+1h"])
        let lines = text.stderr.split(separator: "\n").filter { $0.hasPrefix("failed") }
        #expect(lines.count == 1 && lines.first?.contains("http://127.0.0.1:9  connection refused; 500 resources held until") == true,
                "\(text.stderr)")
    }

    /// SPEC §7: the requests out to an origin when it failed (the first wave) say `held`, not
    /// "again in 1s" — their retries are the hold's probe, not each its own; in JSON their
    /// `failed` events carry `held`, the origin and the hold's end instead of `retry_in_s`.
    /// The summary counts the resources held with their origin as `held`, not one of them
    /// as `failed`. (Before: `retry … again in 1s` per first-wave request, `1 failed`.)
    @Test func theFirstWaveSaysHeldAndTheSummaryCountsHeld() throws {
        let s = try FaultHarness()
        var yaml = "retry: { attempts: 2, backoff: 1s, max_backoff: 2s }\nlimits: { concurrency: 4 }\nresources:\n"
        for index in 0..<20 { yaml += "  - url: http://127.0.0.1:9/f\(index).bin\n" }
        try s.feed(yaml)
        let text = try s.run(["run"])
        #expect(text.status == 1, "\(text.diagnostics)")
        let out = text.stdout.split(separator: "\n").map(String.init)
        #expect(!text.stdout.contains("again in") && !out.contains { $0.hasPrefix("retry ") }, "\(text.stdout)")
        let held = out.filter { $0.hasPrefix("held    t/f") }
        #expect(held.count >= 2, "the first wave's requests (up to 4) say held: \(text.stdout)")
        #expect(held.allSatisfy { $0.contains("Couldn't connect to server; http://127.0.0.1:9 held until ") }, "\(held)")
        #expect(out.last?.hasPrefix("run: 0 placed, 0 fresh (304), 0 failed, 20 held, 0 pruned, 0 paused; ") == true, "\(text.stdout)")
        let failedLines = text.stderr.split(separator: "\n").filter { $0.hasPrefix("failed") }
        #expect(failedLines.count == 1 && failedLines.first?.contains("20 resources held until") == true, "\(text.stderr)")

        try FileManager.default.removeItem(at: s.cache)
        let json = try s.runJSON()
        #expect(json.status == 1, "\(json.diagnostics)")
        let interim = json.events.filter { $0["type"] as? String == "failed" && $0["final"] as? Bool == false }
        #expect(!interim.isEmpty && interim.allSatisfy {
            $0["held"] as? Bool == true && $0["origin"] as? String == "http://127.0.0.1:9" && $0["until"] is String && $0["retry_in_s"] == nil
        }, "\(interim)")
        let summary = try #require(json.events.last { $0["type"] as? String == "summary" })
        #expect(summary["failed"] as? Int == 0 && summary["held"] as? Int == 20 && summary["pruned"] as? Int == 0
                && summary["exit"] as? Int == 1, "\(summary)")
        #expect(json.events.filter { $0["type"] as? String == "held" }.count == 1)
    }

    /// A 503 with Retry-After beyond what a run waits: one request, the origin held in
    /// state.db; `plan` shows the others `backoff` with the cause; a run before the hold ends
    /// asks nothing; one after it probes once, and the answer lets the rest through. A
    /// second origin in the same feed is not held.
    @Test func a503HoldsTheOriginAcrossRuns() throws {
        let s = try FaultHarness()
        let other = try TestOrigin()
        for index in 0..<20 { s.origin.serve("/f\(index).bin", OriginResource(Self.body(index))) }
        other.serve("/x.bin", OriginResource(Self.body(99)))
        s.origin.inject("/f0.bin", [.status(503, headers: [("Retry-After", "300")])])
        try Self.feed(s, count: 20, extra: "  - url: \(other.url("/x.bin"))\n    priority: low\n")
        let first = try s.runJSON()
        #expect(first.status == 1, "\(first.diagnostics)")
        #expect(s.origin.requests.count == 1, "\(s.origin.requests.map(\.path))")
        #expect(first.placed("x.bin"), "the other origin was held too: \(first.diagnostics)")
        let held = first.events.filter { $0["type"] as? String == "held" }
        #expect(held.count == 1 && held.first?["reason"] as? String == "HTTP 503" && held.first?["resources"] as? Int == 20, "\(held)")
        let plan = try s.plan()
        let waiting = plan.filter { ($0["path"] as? String ?? "").hasPrefix("f") && $0["path"] as? String != "f0.bin" }
        #expect(waiting.count == 19 && waiting.allSatisfy { $0["state"] as? String == "backoff" && $0["reason"] as? String == "origin held: HTTP 503" },
                "\(waiting.prefix(3))")
        #expect(s.state()?.originHolds[s.origin.url("")]?.reason == "HTTP 503")
        let status = try s.run(["status"])
        #expect(status.stdout.contains("origin \(s.origin.url("")) held until ") && status.stdout.contains(": HTTP 503"), "\(status.stdout)")
        let statusJSON = try s.run(["status", "--json"])
        #expect(statusJSON.events.contains { $0["type"] as? String == "origin" && $0["held"] as? Bool == true && $0["reason"] as? String == "HTTP 503" })
        // Before the hold ends: nothing is asked, and nothing failed in this run.
        let during = try s.runJSON(offset: "+60s")
        #expect(during.status == 0 && s.origin.requests.count == 1, "\(during.diagnostics)")
        // After it: one probe, answered, then the rest.
        let after = try s.runJSON(offset: "+10m")
        #expect(after.status == 0, "\(after.diagnostics)")
        #expect((0..<20).allSatisfy { s.cached("t/f\($0).bin") == Self.body($0) })
        #expect(s.origin.requests.count == 21, "\(s.origin.requests.map(\.path))")
        #expect(s.state()?.originHolds.isEmpty == true, "the answer did not end the hold")
    }

    /// A short Retry-After is waited out within the run: one probe, then the rest; every
    /// resource is asked once, the held one twice.
    @Test func aShortHoldIsWaitedOutInTheRun() throws {
        let s = try FaultHarness()
        for index in 0..<10 { s.origin.serve("/f\(index).bin", OriginResource(Self.body(index))) }
        s.origin.inject("/f0.bin", [.status(503, headers: [("Retry-After", "1")])])
        try Self.feed(s, count: 10)
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect((0..<10).allSatisfy { s.cached("t/f\($0).bin") == Self.body($0) })
        #expect(s.origin.requests.count == 11, "\(s.origin.requests.map(\.path))")
        #expect(run.events.filter { $0["type"] as? String == "held" }.isEmpty)
        #expect(s.state()?.originHolds.isEmpty == true)
    }
}
