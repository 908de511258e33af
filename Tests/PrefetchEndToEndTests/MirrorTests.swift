import Foundation
import Testing
import TestSupport
import PrefetchCore

/// SPEC §8, "Mirrors": the real binary against two real origins, a primary (the harness's)
/// and a mirror on another port (another origin). Failover within the run, one attempt per
/// pass over every URL, holds per origin, validators per URL, partials moved only with a
/// `sha256`, headers to each listed URL's own host, `served_by` in `plan` and the index.
@Suite(.serialized) struct MirrorTests {
    static let body = FaultTests.bytes(40_000, seed: 880)
    static let other = FaultTests.bytes(40_000, seed: 881)
    static let big = FaultTests.bytes(900_000, seed: 882)

    static func row(_ plan: [[String: Any]], _ path: String) -> [String: Any] {
        plan.first { $0["path"] as? String == path } ?? [:]
    }

    static func indexFile(_ s: FaultHarness, _ path: String) throws -> [String: Any] {
        ReaderIndexTests.files(try ReaderIndexTests.index(s))[path] ?? [:]
    }

    /// A 500, a refused connection and a `sha256` mismatch at the primary each move the
    /// request to the mirror in the same run: exit 0, the mirror's bytes placed atomically
    /// (no partial left), `url` the entry's, `served_by` the mirror, no attempt counted.
    @Test func failuresMoveToTheMirrorInTheSameRun() throws {
        let s = try FaultHarness()
        let mirror = try TestOrigin()
        s.origin.serve("/a.bin", OriginResource(Self.body, etag: "\"p\""))
        s.origin.inject("/a.bin", [.status(500)])
        s.origin.serve("/c.bin", OriginResource(Self.other, etag: "\"p\""))  // not the bytes the sha256 names
        for name in ["a", "b", "c"] { mirror.serve("/\(name).bin", OriginResource(Self.body, etag: "\"m\"")) }
        try s.feed("""
            refresh: 1h
            retry: { attempts: 3, backoff: 1h }
            resources:
              - url: ORIGIN/a.bin
                mirrors: [\(mirror.url("/a.bin"))]
              - url: http://127.0.0.1:9/b.bin
                mirrors: [\(mirror.url("/b.bin"))]
              - url: ORIGIN/c.bin
                sha256: \(FaultTests.sha(Self.body))
                mirrors: [\(mirror.url("/c.bin"))]

            """)
        let run = try s.runJSON()
        #expect(run.status == 0, "a mirror that served is no failure of the run: \(run.diagnostics)")
        for name in ["a.bin", "b.bin", "c.bin"] {
            #expect(s.cached("t/" + name) == Self.body, "\(name)")
            #expect(run.placed(name), "\(name)")
            let moved = run.retries(name)
            #expect(moved.count == 1 && moved.first?["next_url"] as? String == mirror.url("/" + name), "\(name): \(moved)")
            #expect(mirror.requests(to: "/" + name).count == 1)
            #expect(s.resourceState(name)?.failures == 0, "no attempt counted: \(name)")
        }
        #expect(s.origin.requests(to: "/a.bin").count == 1 && s.origin.requests(to: "/c.bin").count == 1)
        #expect(s.partials.isEmpty, "\(s.partials)")
        s.checkInvariant(["t/a.bin": [Self.body], "t/b.bin": [Self.body], "t/c.bin": [Self.body]], origins: [mirror])
        let summary = try #require(run.events.last { $0["type"] as? String == "summary" })
        #expect(summary["failed"] as? Int == 0 && summary["held"] as? Int == 0, "\(summary)")

        let plan = try s.plan()
        for name in ["a.bin", "b.bin", "c.bin"] {
            let row = Self.row(plan, name)
            #expect(row["state"] as? String == "fresh", "serving from a mirror does not make the copy changed: \(row)")
            #expect(row["served_by"] as? String == mirror.url("/" + name), "\(row)")
            #expect(try Self.indexFile(s, name)["served_by"] as? String == mirror.url("/" + name))
        }
        #expect(Self.row(plan, "a.bin")["url"] as? String == s.origin.url("/a.bin"))
        #expect(try Self.indexFile(s, "a.bin")["url"] as? String == s.origin.url("/a.bin"))
    }

    /// Every URL failing in a pass counts one attempt: `backoff` when any failed
    /// transiently, `failed` when none did (404 at both); exit 1.
    @Test func everyURLFailingCountsOneAttempt() throws {
        let s = try FaultHarness()
        let mirror = try TestOrigin()
        s.origin.serve("/a.bin", OriginResource(Self.body))
        s.origin.inject("/a.bin", [.status(500)])
        mirror.serve("/a.bin", OriginResource(Self.body))
        mirror.inject("/a.bin", [.status(404)])
        try s.feed("""
            refresh: 1h
            retry: { attempts: 3, backoff: 1h }
            resources:
              - url: ORIGIN/a.bin
                mirrors: [\(mirror.url("/a.bin"))]
              - url: ORIGIN/b.bin
                mirrors: [\(mirror.url("/b.bin"))]

            """)
        let run = try s.runJSON()
        #expect(run.status == 1, "\(run.diagnostics)")
        #expect(s.resourceState("a.bin")?.failures == 1 && s.resourceState("a.bin")?.permanentFailure == false)
        #expect(s.resourceState("b.bin")?.failures == 1 && s.resourceState("b.bin")?.permanentFailure == true)
        #expect(s.origin.requests(to: "/a.bin").count == 1 && mirror.requests(to: "/a.bin").count == 1, "one pass, not retried in the run")
        let plan = try s.plan()
        #expect(Self.row(plan, "a.bin")["state"] as? String == "backoff", "\(Self.row(plan, "a.bin"))")
        #expect(Self.row(plan, "b.bin")["state"] as? String == "failed", "\(Self.row(plan, "b.bin"))")
        let error = Self.row(plan, "a.bin")["error"] as? String ?? ""
        #expect(error.contains("HTTP 500") && error.contains("HTTP 404") && error.contains(mirror.url("/a.bin")), "\(error)")
        #expect(!s.exists("t/a.bin") && !s.exists("t/b.bin") && s.partials.isEmpty)
    }

    /// A held primary: a resource with a URL whose origin is not held plans `due` and goes
    /// to the mirror (never to the held origin, and not counted with its hold); one without
    /// another URL plans `backoff … origin held` and waits (exit 0: nothing was requested).
    @Test func aHeldPrimaryPlansDueAndGoesToTheMirror() throws {
        let s = try FaultHarness()
        let mirror = try TestOrigin()
        for name in ["a", "b"] { mirror.serve("/\(name).bin", OriginResource(Self.body)) }
        let head = "refresh: 1h\nretry: { attempts: 3, backoff: 1h, max_backoff: 2h }\nresources:\n"
        let a = "  - url: http://127.0.0.1:9/a.bin\n    mirrors: [\(mirror.url("/a.bin"))]\n"
        try s.feed(head + a)
        let first = try s.runJSON()
        #expect(first.status == 0 && s.cached("t/a.bin") == Self.body, "\(first.diagnostics)")
        #expect(s.state()?.originHolds["http://127.0.0.1:9"]?.reason == "connection refused", "the refusal holds the primary's origin")

        try s.feed(head + a + "  - url: http://127.0.0.1:9/b.bin\n    mirrors: [\(mirror.url("/b.bin"))]\n  - url: http://127.0.0.1:9/c.bin\n")
        let plan = try s.plan()
        #expect(Self.row(plan, "b.bin")["state"] as? String == "due", "\(Self.row(plan, "b.bin"))")
        #expect(Self.row(plan, "c.bin")["state"] as? String == "backoff"
                && Self.row(plan, "c.bin")["reason"] as? String == "origin held: connection refused", "\(Self.row(plan, "c.bin"))")
        let second = try s.runJSON()
        #expect(second.status == 0, "\(second.diagnostics)")
        #expect(s.cached("t/b.bin") == Self.body)
        let starts = second.events("start", "b.bin")
        #expect(starts.count == 1 && starts.first?["url"] as? String == mirror.url("/b.bin"), "straight to the mirror: \(starts)")
        #expect(second.events("start", "c.bin").isEmpty, "c.bin waits for the hold's end")
        #expect(s.state()?.originHolds["http://127.0.0.1:9"] != nil, "the mirror's answer is no answer of the held origin")
    }

    /// Every URL's origin held: the resource whose requests failed counts its one attempt
    /// and is counted with the first URL's hold; one not requested since plans `backoff …
    /// origin held` with the first URL's cause (not the mirror's). The run that failed
    /// exits 1, the next (nothing requested) 0.
    @Test func everyURLHeldPlansOriginHeldWithTheFirstURLsCause() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.body))
        s.origin.serve("/b.bin", OriginResource(Self.body))
        s.origin.inject("/a.bin", [.status(503)])
        let head = "refresh: 1h\nretry: { attempts: 3, backoff: 1h, max_backoff: 2h }\nresources:\n"
        let a = "  - url: http://127.0.0.1:9/a.bin\n    mirrors: [ORIGIN/a.bin]\n"
        try s.feed(head + a)
        let first = try s.runJSON()
        #expect(first.status == 1, "\(first.diagnostics)")
        #expect(s.resourceState("a.bin")?.failures == 1, "one attempt for the whole pass")
        let held = first.events.filter { $0["type"] as? String == "held" }
        #expect(held.count == 1 && held.first?["origin"] as? String == "http://127.0.0.1:9" && held.first?["resources"] as? Int == 1,
                "counted with the first URL's hold, not with the mirror's: \(held)")
        let holds = s.state()?.originHolds ?? [:]
        #expect(holds["http://127.0.0.1:9"]?.reason == "connection refused" && holds[s.origin.url("")]?.reason == "HTTP 503", "\(holds)")

        try s.feed(head + a + "  - url: http://127.0.0.1:9/b.bin\n    mirrors: [ORIGIN/b.bin]\n")
        let plan = try s.plan()
        #expect(Self.row(plan, "a.bin")["state"] as? String == "backoff", "\(Self.row(plan, "a.bin"))")
        let row = Self.row(plan, "b.bin")
        #expect(row["state"] as? String == "backoff" && row["reason"] as? String == "origin held: connection refused", "\(row)")
        let second = try s.runJSON()
        #expect(second.status == 0, "every URL already held, nothing requested: \(second.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").count == 1 && s.origin.requests(to: "/b.bin").isEmpty, "no URL is asked while every one is held")
        #expect(second.events.filter { $0["type"] as? String == "start" }.isEmpty)
    }

    /// Each URL keeps its own validators: a copy is revalidated first at the URL that served
    /// it, with that URL's validators; another URL is asked with its own (none known: the
    /// whole file), and keeps them for the same bytes.
    @Test func eachURLKeepsItsOwnValidators() throws {
        let s = try FaultHarness()
        let mirror = try TestOrigin()
        s.origin.serve("/a.bin", OriginResource(Self.body, etag: "\"p\""))
        mirror.serve("/a.bin", OriginResource(Self.body, etag: "\"m\""))
        s.origin.inject("/a.bin", [.status(500)])
        try s.feed("refresh: 1h\nretry: { attempts: 3, backoff: 1h }\nresources:\n  - url: ORIGIN/a.bin\n    mirrors: [\(mirror.url("/a.bin"))]\n")
        #expect(try s.runJSON().status == 0)
        // The next release: first at the mirror, which served the copy, with its ETag.
        let second = try s.runJSON(offset: "+2h")
        #expect(second.status == 0 && !second.events("fresh", "a.bin").isEmpty, "\(second.diagnostics)")
        #expect(mirror.requests(to: "/a.bin").last?.header("if-none-match") == "\"m\"")
        #expect(s.origin.requests(to: "/a.bin").count == 1, "the primary is not asked first")
        // The mirror fails: the primary knows no validators of this copy, so the whole file.
        mirror.inject("/a.bin", [.status(500)])
        let third = try s.runJSON(offset: "+4h")
        #expect(third.status == 0 && third.placed("a.bin"), "\(third.diagnostics)")
        let asked = try #require(s.origin.requests(to: "/a.bin").last)
        #expect(asked.header("if-none-match") == nil && asked.header("if-modified-since") == nil, "never another URL's validators: \(asked.headers)")
        #expect(Self.row(try s.plan(offset: "+4h"), "a.bin")["served_by"] as? String == s.origin.url("/a.bin"))
        // Now the primary served it: first there, with its own ETag.
        let fourth = try s.runJSON(offset: "+6h")
        #expect(fourth.status == 0 && !fourth.events("fresh", "a.bin").isEmpty, "\(fourth.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").last?.header("if-none-match") == "\"p\"")
        // The mirror kept its ETag for the same bytes.
        s.origin.inject("/a.bin", [.status(500)])
        let fifth = try s.runJSON(offset: "+8h")
        #expect(fifth.status == 0 && !fifth.events("fresh", "a.bin").isEmpty, "\(fifth.diagnostics)")
        #expect(mirror.requests(to: "/a.bin").last?.header("if-none-match") == "\"m\"")
        #expect(s.cached("t/a.bin") == Self.body)
    }

    /// A partial cut at the primary moves to the mirror with its bytes only with `sha256`
    /// (`Range` from its length, no `If-Range`); without it, it restarts there.
    @Test func aPartialMovesWithItsBytesOnlyWithSHA256() throws {
        let s = try FaultHarness()
        let mirror = try TestOrigin()
        for name in ["a", "b"] {
            s.origin.serve("/\(name).bin", OriginResource(Self.big, etag: "\"p\""))
            s.origin.inject("/\(name).bin", [.cutAfter(400_000)])
            mirror.serve("/\(name).bin", OriginResource(Self.big, etag: "\"m\""))
        }
        try s.feed("""
            refresh: 1h
            retry: { attempts: 3, backoff: 1h }
            resources:
              - url: ORIGIN/a.bin
                sha256: \(FaultTests.sha(Self.big))
                mirrors: [\(mirror.url("/a.bin"))]
              - url: ORIGIN/b.bin
                mirrors: [\(mirror.url("/b.bin"))]

            """)
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.cached("t/a.bin") == Self.big && s.cached("t/b.bin") == Self.big)
        let resumed = try #require(mirror.requests(to: "/a.bin").first)
        let range = resumed.header("range") ?? ""
        #expect(range.hasPrefix("bytes=") && range != "bytes=0-", "resumed from the partial's length: \(resumed.headers)")
        #expect(resumed.header("if-range") == nil, "another URL's validator is never sent: \(resumed.headers)")
        #expect(mirror.bytesSent(to: "/a.bin") < Self.big.count, "only the rest came from the mirror")
        let restarted = try #require(mirror.requests(to: "/b.bin").first)
        #expect(restarted.header("range") == nil && restarted.header("if-range") == nil, "no sha256: restarted: \(restarted.headers)")
        #expect(mirror.bytesSent(to: "/b.bin") >= Self.big.count)
        #expect(s.partials.isEmpty)
    }

    /// The manifest's headers go to each listed URL's own host, never across a redirect to
    /// another host — not even to a host the resource lists as a mirror.
    @Test func headersGoToEachListedURLsOwnHostOnly() throws {
        let s = try FaultHarness()
        let mirror = try TestOrigin()
        s.origin.serve("/a.bin", OriginResource(Self.body))
        s.origin.inject("/a.bin", [.status(500)])
        mirror.serve("/a.bin", OriginResource(Self.body))
        // b: the primary redirects to the mirror's host (a redirect to another host).
        s.origin.inject("/b.bin", [.redirect(mirror.url("/moved/b.bin"))])
        mirror.serve("/moved/b.bin", OriginResource(Self.body))
        // c: the primary fails, the mirror redirects back to the primary's host.
        s.origin.inject("/c.bin", [.status(500)])
        mirror.inject("/c.bin", [.redirect(s.origin.url("/moved/c.bin"))])
        s.origin.serve("/moved/c.bin", OriginResource(Self.body))
        var yaml = "refresh: 1h\nretry: { attempts: 3, backoff: 1h }\nresources:\n"
        for name in ["a", "b", "c"] {
            yaml += "  - url: ORIGIN/\(name).bin\n    headers: { X-Token: tok-\(name) }\n    mirrors: [\(mirror.url("/\(name).bin"))]\n"
        }
        try s.feed(yaml)
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").first?.header("x-token") == "tok-a")
        #expect(mirror.requests(to: "/a.bin").first?.header("x-token") == "tok-a", "a listed mirror is its own host")
        #expect(s.origin.requests(to: "/b.bin").first?.header("x-token") == "tok-b")
        let redirected = try #require(mirror.requests(to: "/moved/b.bin").first)
        #expect(redirected.header("x-token") == nil, "never across a redirect to another host: \(redirected.headers)")
        #expect(mirror.requests(to: "/c.bin").first?.header("x-token") == "tok-c")
        let back = try #require(s.origin.requests(to: "/moved/c.bin").first)
        #expect(back.header("x-token") == nil, "the mirror's redirect goes to another host than the mirror's: \(back.headers)")
        #expect(s.cached("t/a.bin") == Self.body && s.cached("t/b.bin") == Self.body && s.cached("t/c.bin") == Self.body)
    }

    /// A bad mirror URL is a manifest error at its line and column, and nothing is touched.
    @Test func aBadMirrorIsAManifestErrorAtItsPlace() throws {
        let s = try FaultHarness()
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n    mirrors:\n      - ftp://m.example.com/a.bin\n")
        let run = try s.run(["run"])
        #expect(run.status == 2, "\(run.diagnostics)")
        #expect(run.stderr.contains("feeds/t.yaml:4:9: error: only http and https URLs are fetched, not 'ftp'"), "\(run.stderr)")
        #expect(run.stderr.contains("      - ftp://m.example.com/a.bin\n        ^"), "the line and a caret: \(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.cache.path), "nothing is created by a run that exits 2")
    }
}
