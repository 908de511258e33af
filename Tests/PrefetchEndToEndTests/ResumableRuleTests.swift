import Foundation
import Glibc
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §7's one resumable rule through the real binary (FAULTS 7, 8): the If-Range a resume
/// sends, and partials as the run sees them — in `plan`, `status`, the pause lines, the
/// daemon's stop and §6's deadline rule. The test origin sends `Date` (or not, or a chosen
/// age of the file), `Accept-Ranges: none`, and behaves as Apache does for a file published
/// this second (a weak ETag, a Last-Modified equal to the Date, and a 200 to a date in
/// If-Range until the file is 60 s old).
@Suite(.serialized) struct ResumableRuleTests {
    static let modified = "Sun, 01 Mar 2026 10:00:00 GMT"
    static let length = 1_000_000, cut = 400_000

    /// One resource of the matrix: what its origin says, whether the entry has a sha256, and
    /// what the resume after a cut at 40% must send (nil `range`: it restarts from zero).
    struct Case {
        let name: String
        var resource: OriginResource
        var sha256 = false
        let range: String?
        let ifRange: String?
        var resumable: Bool { range != nil }
    }

    static func cases(_ body: (String) -> [UInt8]) -> [Case] {
        func resource(_ name: String, etag: String? = nil, lastModified: String? = nil, date: OriginDate = .now,
                      rangesNone: Bool = false, apache: ApacheFile? = nil) -> OriginResource {
            var r = OriginResource(body(name), etag: etag, lastModified: lastModified)
            r.date = date
            r.acceptRangesNone = rangesNone
            r.apache = apache
            return r
        }
        let from = "bytes=\(cut)-"
        return [
            Case(name: "strong", resource: resource("strong", etag: "\"s1\"", lastModified: modified), range: from, ifRange: "\"s1\""),
            // FAULTS 7: a weak ETag never goes into If-Range, and no date either.
            Case(name: "weak", resource: resource("weak", etag: "W/\"w1\"", lastModified: modified), range: nil, ifRange: nil),
            Case(name: "weak-sha", resource: resource("weak-sha", etag: "W/\"w1\"", lastModified: modified), sha256: true, range: from, ifRange: nil),
            // A Last-Modified alone: strong only 60 s before the Date (RFC 9110 §8.8.2.2).
            Case(name: "date-none", resource: resource("date-none", lastModified: modified, date: .none), range: nil, ifRange: nil),
            Case(name: "date-none-sha", resource: resource("date-none-sha", lastModified: modified, date: .none), sha256: true, range: from, ifRange: nil),
            Case(name: "date-equal", resource: resource("date-equal", lastModified: modified, date: .afterLastModified(0)), range: nil, ifRange: nil),
            Case(name: "date-59s", resource: resource("date-59s", lastModified: modified, date: .afterLastModified(59)), range: nil, ifRange: nil),
            Case(name: "date-60s", resource: resource("date-60s", lastModified: modified, date: .afterLastModified(60)), range: from, ifRange: modified),
            Case(name: "date-later", resource: resource("date-later", lastModified: modified, date: .afterLastModified(86_400)), range: from,
                 ifRange: modified),
            Case(name: "date-now", resource: resource("date-now", lastModified: modified), range: from, ifRange: modified),
            // Accept-Ranges: none: never resumed, whatever the validators and the sha256.
            Case(name: "ranges-none", resource: resource("ranges-none", etag: "\"n1\"", rangesNone: true), range: nil, ifRange: nil),
            Case(name: "ranges-none-sha", resource: resource("ranges-none-sha", etag: "\"n1\"", rangesNone: true), sha256: true, range: nil, ifRange: nil),
            // FAULTS 8: no validator at all.
            Case(name: "bare", resource: resource("bare"), range: nil, ifRange: nil),
            Case(name: "bare-sha", resource: resource("bare-sha"), sha256: true, range: from, ifRange: nil),
            // Apache, a file published this second: weak ETag, Last-Modified equal to the Date.
            Case(name: "apache", resource: resource("apache", etag: "\"a1\"", apache: .publishedAtFirstRequest), range: nil, ifRange: nil),
            Case(name: "apache-sha", resource: resource("apache-sha", etag: "\"a1\"", apache: .publishedAtFirstRequest), sha256: true,
                 range: from, ifRange: nil),
            Case(name: "apache-no-etag", resource: resource("apache-no-etag", apache: .publishedAtFirstRequest), range: nil, ifRange: nil),
            // Apache, a file an hour old: its strong ETag.
            Case(name: "apache-old", resource: resource("apache-old", etag: "\"o1\"", apache: .modified(time(nil) - 3600)), range: from,
                 ifRange: "\"o1\""),
        ]
    }

    static func body(_ name: String) -> [UInt8] { FaultTests.bytes(length, seed: UInt64(name.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) })) }

    static func feed(_ cases: [Case], prefix: String = FaultTests.nextRun) -> String {
        prefix + "resources:\n" + cases.map { c in
            "  - url: ORIGIN/\(c.name).bin\n" + (c.sha256 ? "    sha256: \(FaultTests.sha(body(c.name)))\n" : "")
        }.joined()
    }

    static func item(_ plan: [[String: Any]], _ name: String) -> [String: Any] {
        plan.first { $0["path"] as? String == name + ".bin" } ?? [:]
    }

    /// The `partials` of the first feed line of `status --json`, by path.
    static func partials(_ status: [[String: Any]]) -> [String: [String: Any]] {
        let list = status.first?["partials"] as? [[String: Any]] ?? []
        return Dictionary(list.map { ($0["path"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// FAULTS 7, 8 and §7's partials, over the matrix: a body cut at 40% is kept only when it
    /// can resume (an unresumable one is discarded, and its line says so); `plan` says
    /// `resume` with what is left, or `not cached` with the whole size; `status --json` lists
    /// exactly the resumable partials; the next run sends `Range` and If-Range with only a
    /// strong validator, or restarts; every file ends identical to the origin's.
    @Test func ifRangeCarriesOnlyStrongValidators() throws {
        let s = try FaultHarness()
        let cases = Self.cases(Self.body)
        for c in cases {
            s.origin.serve("/\(c.name).bin", c.resource)
            s.origin.inject("/\(c.name).bin", [.cutAfter(Self.cut)])
        }
        try s.feed(Self.feed(cases))
        let before = try s.plan()
        for c in cases {
            let row = Self.item(before, c.name)
            #expect(row["state"] as? String == "due" && row["reason"] as? String == "not cached", "\(c.name) before: \(row)")
        }
        let first = try s.runJSON()
        #expect(first.status == 1, "\(first.diagnostics)")
        let plan = try s.plan(offset: "+10m")
        let status = Self.partials(try s.status())
        for c in cases {
            let name = c.name + ".bin"
            let failure = first.failure(name) ?? ""
            let row = Self.item(plan, c.name)
            #expect(row["state"] as? String == "due", "\(c.name): \(row)")
            if c.resumable {
                #expect(s.partialSize(name) == Self.cut, "\(c.name): the resumable partial was not kept")
                #expect(!failure.contains("discarded"), "\(c.name): \(failure)")
                #expect(row["reason"] as? String == "resume" && row["remaining"] as? Int == Self.length - Self.cut, "\(c.name): \(row)")
                let partial = status[name]
                #expect(partial?["bytes_on_disk"] as? Int == Self.cut && partial?["resume_from"] as? Int == Self.cut
                        && partial?["total"] as? Int == Self.length, "\(c.name): \(partial ?? [:])")
            } else {
                #expect(s.partialSize(name) == nil, "\(c.name): a partial that cannot resume was kept")
                #expect(failure.contains("\(ByteSize.format(UInt64(Self.cut))) discarded: cannot resume: "), "\(c.name): \(failure)")
                #expect(row["reason"] as? String == "not cached" && row["remaining"] as? Int == Self.length, "\(c.name): \(row)")
                #expect(status[name] == nil, "\(c.name): status lists a partial that cannot resume")
            }
        }
        let second = try s.runJSON(offset: "+10m")
        #expect(second.status == 0, "\(second.diagnostics)")
        for c in cases {
            let requests = s.origin.requests(to: "/\(c.name).bin")
            #expect(requests.count == 2, "\(c.name): \(requests.count) requests")
            let resume = try #require(requests.last)
            #expect(resume.header("range") == c.range, "\(c.name): Range \(resume.header("range") ?? "none")")
            #expect(resume.header("if-range") == c.ifRange, "\(c.name): If-Range \(resume.header("if-range") ?? "none")")
            #expect(s.digest("t/\(c.name).bin") == FaultTests.sha(Self.body(c.name)), "\(c.name)")
            // A resume that was sent is answered with the rest (206): never the whole file again.
            let placed = second.events("placed", c.name + ".bin").first
            #expect(placed?["resumed_at"] as? Int == (c.resumable ? Self.cut : 0) && placed?["resume_refused_at"] as? Int == 0,
                    "\(c.name): \(placed ?? [:])")
        }
        s.checkInvariant(Dictionary(uniqueKeysWithValues: cases.map { ("t/\($0.name).bin", [Self.body($0.name)]) }))
    }

    /// §5's partial trust with §7's rule, as `plan` and `status` report it: a partial left by
    /// a run that died (600 KB on disk, 400 KB fsynced) resumes within the same boot from its
    /// length and after a reboot from its fsynced offset — if it is resumable; one that is
    /// not counts as none, is not listed, and is discarded when a run finds it, also one whose
    /// resource is not due in that run. The run resumes exactly where the plan said.
    @Test(arguments: [false, true]) func partialsAsTheRunSeesThemAcrossABoot(rebooted: Bool) throws {
        let s = try FaultHarness()
        let onDisk = 600_000, synced: UInt64 = 400_000
        let now = ["PREFETCH_BOOT_ID": rebooted ? "boot-2" : "boot-1"]
        // name, origin's validators, planted facts, sha256, resumable
        let rows: [(String, Validators, String?, Bool, Bool, Bool)] = [
            ("strong", Validators(etag: "\"s1\""), nil, false, false, true),
            ("weak", Validators(etag: "W/\"w1\"", lastModified: Self.modified), "Tue, 01 Dec 2026 10:00:00 GMT", false, false, false),
            ("weak-sha", Validators(etag: "W/\"w1\"", lastModified: Self.modified), nil, false, true, true),
            ("dated", Validators(lastModified: Self.modified), "Tue, 01 Dec 2026 10:00:00 GMT", false, false, true),
            ("undated", Validators(lastModified: Self.modified), nil, false, false, false),
            ("ranges-none", Validators(etag: "\"n1\""), nil, true, false, false),
        ]
        var yaml = FaultTests.nextRun + "resources:\n"
        for (name, validators, date, rangesNone, sha, _) in rows {
            var resource = OriginResource(Self.body(name), etag: validators.etag, lastModified: validators.lastModified)
            resource.acceptRangesNone = rangesNone
            if date == nil, validators.lastModified != nil { resource.date = .none }
            s.origin.serve("/\(name).bin", resource)
            try s.plant(name + ".bin", bytes: Array(Self.body(name)[0..<onDisk]), synced: synced, validators: validators, total: UInt64(Self.length),
                        bootID: "boot-1", date: date, acceptRangesNone: rangesNone)
            yaml += "  - url: ORIGIN/\(name).bin\n" + (sha ? "    sha256: \(FaultTests.sha(Self.body(name)))\n" : "")
        }
        // Not due in the run (under embargo), and not resumable: discarded all the same.
        try s.plant("later.bin", bytes: Array(Self.body("later")[0..<onDisk]), synced: synced, validators: Validators(etag: "W/\"l\""),
                    bootID: "boot-1")
        yaml += "  - url: ORIGIN/later.bin\n    not_before: 2099-01-01T00:00:00Z\n"
        try s.feed(yaml)
        let from = rebooted ? Int(synced) : onDisk
        let plan = try s.run(["plan", "--json"], environment: now).events.filter { $0["type"] as? String == "resource" }
        let status = Self.partials(try s.status(environment: now))
        let text = try s.run(["status"], environment: now).stdout
        for (name, _, _, _, _, resumable) in rows {
            let row = Self.item(plan, name)
            let partial = status[name + ".bin"]
            if resumable {
                #expect(row["reason"] as? String == "resume" && row["remaining"] as? Int == Self.length - from, "\(name): \(row)")
                #expect(partial?["bytes_on_disk"] as? Int == onDisk && partial?["resume_from"] as? Int == from
                        && partial?["total"] as? Int == Self.length, "\(name): \(partial ?? [:])")
                #expect(text.contains("partial: \(name).bin resumes from \(ByteSize.format(UInt64(from))) of "), "\(name): \(text)")
            } else {
                #expect(row["reason"] as? String == "not cached" && row["remaining"] as? Int == Self.length, "\(name): \(row)")
                #expect(partial == nil && !text.contains("partial: \(name).bin"), "\(name): \(partial ?? [:])")
            }
        }
        #expect(status["later.bin"] == nil)
        let run = try s.runJSON(environment: now)
        #expect(run.status == 0, "\(run.diagnostics)")
        for (name, validators, _, _, _, resumable) in rows {
            let request = s.origin.requests(to: "/\(name).bin").last
            #expect(request?.header("range") == (resumable ? "bytes=\(from)-" : nil), "\(name): \(request?.header("range") ?? "none")")
            // Only a strong validator: the ETag when strong; with no ETag, a strong date; else none (sha256).
            let ifRange = !resumable ? nil : validators.etag.map { $0.hasPrefix("W/") ? nil : $0 } ?? validators.lastModified
            #expect(request?.header("if-range") == ifRange, "\(name): \(request?.header("if-range") ?? "none")")
            #expect(s.digest("t/\(name).bin") == FaultTests.sha(Self.body(name)), "\(name)")
        }
        #expect(s.partialSize("later.bin") == nil && s.resourceState("later.bin")?.partial == nil, "found at start and not discarded")
        #expect(s.origin.requests(to: "/later.bin").isEmpty)
    }

    /// SPEC §6 "Deadlines act" on a partial that cannot resume: cut, it is discarded, and the
    /// plan no longer counts on it — `deferred … would not finish before the window closes`
    /// where the recorded throughput says it would be cut again, while a resumable partial
    /// of the same size, and a resource never fetched, start. The run does as the plan says.
    @Test func deadlinesActOnAPartialThatCannotResume() throws {
        let s = try FaultHarness()
        for (name, etag) in [("weak", "W/\"w1\""), ("strong", "\"s1\""), ("fresh", "\"f1\"")] {
            s.origin.serve("/\(name).bin", OriginResource(Self.body(name), etag: etag))
        }
        for name in ["weak", "strong"] { s.origin.inject("/\(name).bin", [.cutAfter(Self.cut)]) }
        // Window 01:00–02:00 UTC; the clock is moved to 01:10 tomorrow (UTC) for the first run.
        let nowSeconds = Int64(Date().timeIntervalSince1970)
        let tomorrow = (nowSeconds / 86_400 + 1) * 86_400
        let offset = { (at: Int64) in "+\(at - nowSeconds)s" }
        let window = FaultTests.nextRun + "timezone: UTC\nwindow: \"01:00-02:00\"\n"
        try s.feed(window + "resources:\n  - url: ORIGIN/weak.bin\n  - url: ORIGIN/strong.bin\n")
        let first = try s.runJSON(offset: offset(tomorrow + 3600 + 600))
        #expect(first.status == 1, "\(first.diagnostics)")
        // 10 KB/s measured: the whole MB needs 100 s, the 600 KB left 60 s.
        let store = try StateStore.openForWriting(s.cache.path + "/.prefetch/state.db")
        try store.recordRun(startedAt: 0, finishedAt: 1, bodyBytes: 1 << 20, transferSeconds: 104.8576, placed: 1, fresh: 0, failed: 0)
        try s.feed(window + "resources:\n  - url: ORIGIN/weak.bin\n  - url: ORIGIN/strong.bin\n  - url: ORIGIN/fresh.bin\n")
        let at = offset(tomorrow + 7200 - 50)  // 01:59:10: 50 s left
        let plan = try s.plan(offset: at)
        let weak = Self.item(plan, "weak"), strong = Self.item(plan, "strong"), fresh = Self.item(plan, "fresh")
        #expect(weak["state"] as? String == "deferred" && weak["reason"] as? String == "would not finish before the window closes", "\(weak)")
        #expect(strong["state"] as? String == "due" && strong["reason"] as? String == "resume"
                && strong["remaining"] as? Int == Self.length - Self.cut, "\(strong)")
        #expect(fresh["state"] as? String == "due" && fresh["reason"] as? String == "not cached", "never fetched: \(fresh)")
        let run = try s.runJSON(offset: at)
        #expect(s.origin.requests(to: "/weak.bin").count == 1, "a transfer that cannot resume was started to be cut: \(run.diagnostics)")
        #expect(s.origin.requests(to: "/strong.bin").last?.header("range") == "bytes=\(Self.cut)-")
        #expect(s.origin.requests(to: "/fresh.bin").count == 1)
    }

    /// `run`'s pause lines say `kept for resume` only for a resumable partial: a stop in the
    /// middle of a transfer keeps a strong ETag's bytes, discards a weak ETag's (and says
    /// why), and says nothing of bytes for a transfer that had none yet.
    @Test func pauseLinesSayWhatBecameOfThePartial() throws {
        let s = try FaultHarness()
        let big = 8 << 20
        s.origin.serve("/strong.bin", OriginResource(FaultTests.bytes(big, seed: 1), etag: "\"s1\""))
        s.origin.serve("/weak.bin", OriginResource(FaultTests.bytes(big, seed: 2), etag: "W/\"w1\""))
        s.origin.serve("/waiting.bin", OriginResource(FaultTests.bytes(1000, seed: 3), etag: "\"x\""))
        s.origin.inject("/strong.bin", [.trickle(bytesPerSecond: 1 << 20)])
        s.origin.inject("/weak.bin", [.trickle(bytesPerSecond: 1 << 20)])
        s.origin.inject("/waiting.bin", [.delay(seconds: 30)])
        try s.feed("resources:\n  - url: ORIGIN/strong.bin\n  - url: ORIGIN/weak.bin\n  - url: ORIGIN/waiting.bin\n")
        let process = Process()
        process.executableURL = BinaryRunner.executable
        process.arguments = ["run", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
        process.currentDirectoryURL = s.dir.url
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, (s.partialSize("strong.bin") ?? 0) < 1 << 20 || (s.partialSize("weak.bin") ?? 0) < 1 << 20 { usleep(20_000) }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        let strong = lines.first { $0.hasPrefix("paused  t/strong.bin  stopped") } ?? ""
        let weak = lines.first { $0.hasPrefix("paused  t/weak.bin  stopped") } ?? ""
        let waiting = lines.first { $0.hasPrefix("paused  t/waiting.bin  stopped") } ?? ""
        #expect(strong.hasSuffix(" kept for resume") && s.partialSize("strong.bin").map { $0 > 0 } == true, "\(text)")
        #expect(weak.contains(" discarded (cannot resume: only a weak ETag, and no sha256)") && !weak.contains("kept"), "\(text)")
        #expect(s.partialSize("weak.bin") == nil && s.resourceState("weak.bin")?.partial == nil, "the weak ETag's partial was kept")
        #expect(waiting == "paused  t/waiting.bin  stopped", "\(text)")
    }

    /// The daemon's stop says `partial data kept for resume` only when a resumable partial
    /// was kept: stopped mid-transfer of a strong ETag it says how many and how much; idle,
    /// or with only a weak ETag's transfer (discarded), it says nothing of partials.
    @Test(arguments: ["strong", "weak", "idle"]) func theDaemonsStopMentionsOnlyWhatWasKept(_ kind: String) throws {
        let s = try FaultHarness()
        let big = 8 << 20
        s.origin.serve("/a.bin", OriginResource(FaultTests.bytes(big, seed: 4), etag: kind == "weak" ? "W/\"a\"" : "\"a\""))
        if kind != "idle" { s.origin.inject("/a.bin", [.trickle(bytesPerSecond: 1 << 20)]) }
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let (process, log) = try s.startDaemon()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let deadline = Date().addingTimeInterval(30)
        if kind == "idle" {
            while Date() < deadline, s.cached("t/a.bin") == nil { usleep(20_000) }
            usleep(300_000)
        } else {
            while Date() < deadline, (s.partialSize("a.bin") ?? 0) < 1 << 20 { usleep(20_000) }
        }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let text = try String(contentsOf: log, encoding: .utf8)
        let stop = text.split(separator: "\n").map(String.init).first { $0.hasPrefix("prefetch daemon: stopped") } ?? ""
        switch kind {
        case "strong":
            let kept = try #require(s.resourceState("a.bin")?.partial?.syncedOffset)
            #expect(stop == "prefetch daemon: stopped (SIGTERM); 1 partial file kept for resume (\(ByteSize.format(UInt64(s.partialSize("a.bin") ?? 0))))",
                    "\(text), \(kept)")
        default:
            #expect(stop == "prefetch daemon: stopped (SIGTERM)", "\(text)")
            #expect(s.partialSize("a.bin") == nil)
        }
    }

    /// SPEC §7 "Run summary": a resume the origin refused (a 200 to a `Range`) says so on its
    /// line, in text and in `--json`; the file restarts cleanly from zero (FAULTS 5).
    @Test func aRefusedResumeSaysSoOnItsLine() throws {
        let s = try FaultHarness()
        let body = Self.body("refused")
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"r1\""))
        s.origin.serve("/b.bin", OriginResource(body, etag: "\"r1\""))
        s.origin.inject("/a.bin", [.ignoreRange])
        s.origin.inject("/b.bin", [.ignoreRange])
        let plant = { (name: String) in
            try s.plant(name, bytes: Array(body[0..<Self.cut]), synced: UInt64(Self.cut), validators: Validators(etag: "\"r1\""),
                        total: UInt64(Self.length), bootID: "boot-1")
        }
        try plant("a.bin")
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let json = try s.runJSON(environment: ["PREFETCH_BOOT_ID": "boot-1"])
        #expect(json.status == 0, "\(json.diagnostics)")
        #expect(s.origin.requests(to: "/a.bin").last?.header("range") == "bytes=\(Self.cut)-")
        let placed = try #require(json.events("placed", "a.bin").first)
        #expect(placed["resume_refused_at"] as? Int == Self.cut && placed["resumed_at"] as? Int == 0
                && placed["transferred"] as? Int == Self.length, "\(placed)")
        try plant("b.bin")
        try s.feed("resources:\n  - url: ORIGIN/b.bin\n")
        let text = try s.run(environment: ["PREFETCH_BOOT_ID": "boot-1"])
        let line = text.stdout.split(separator: "\n").first { $0.hasPrefix("placed  t/b.bin") } ?? ""
        #expect(line.contains("the server refused the resume from \(ByteSize.format(UInt64(Self.cut))): HTTP 200, the whole file again"),
                "\(text.stdout)")
        #expect(s.digest("t/a.bin") == FaultTests.sha(body) && s.digest("t/b.bin") == FaultTests.sha(body))
    }
}
