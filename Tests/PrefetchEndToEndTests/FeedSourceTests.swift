import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §8's feed sources through the real binary: manifests fetched from a real nginx over
/// real TLS (an unsigned source must be https), applied whole and valid or not at all, with
/// the copy in force kept through every failure; what `status`, `plan`, the metrics and the
/// exit status say of them; names and removal. The clock is moved with
/// PREFETCH_CLOCK_OFFSET.
@Suite struct FeedSourceTests {
    static let hasTools = FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
        && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx")

    /// A TLS nginx serving `files`, a certificate `ca_file` trusts, and a config with
    /// `feed_sources` made of `sources` (YAML list items; `ORIGIN` is nginx's https URL).
    final class Setup {
        let harness: NginxHarness
        let keys: TemporaryFolder

        init(files: [String: [UInt8]], sources: String, extraConfig: String = "") throws {
            keys = try TemporaryFolder()
            chmod(keys.url.path, 0o755)
            let status = try FaultTests.tool("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                                                  "-nodes", "-keyout", "tls.key", "-out", "tls.pem", "-days", "2",
                                                                  "-subj", "/CN=prefetch-cms", "-addext", "subjectAltName=IP:127.0.0.1"], in: keys.url)
            #expect(status == 0)
            chmod(keys.url.path + "/tls.key", 0o644)
            harness = try NginxHarness(files: files, tls: (keys.url.path + "/tls.pem", keys.url.path + "/tls.key"))
            try writeConfig(sources: sources, extra: extraConfig)
        }

        func writeConfig(sources: String, extra: String = "") throws {
            let list = sources.isEmpty ? "" : "feed_sources:\n" + sources.replacingOccurrences(of: "ORIGIN", with: harness.origin.url(""))
            try harness.dir.write("config.yaml", "ca_file: \(keys.url.path)/tls.pem\n" + extra + list)
        }

        /// Replaces a file nginx serves (a new mtime, so a new ETag).
        func publish(_ name: String, _ text: String, age: TimeInterval = 0) throws {
            let url = harness.www.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            let mtime = Date().addingTimeInterval(-3600 + age)
            try FileManager.default.setAttributes([.modificationDate: mtime], ofItemAtPath: url.path)
        }

        func run(_ arguments: [String] = ["run"], offset: String? = nil) throws -> RunResult {
            try harness.run(arguments, environment: offset.map { ["PREFETCH_CLOCK_OFFSET": $0] } ?? [:], config: "config.yaml")
        }

        /// The `{"type":"source"}` lines of `status --json`.
        func sources(offset: String? = nil) throws -> [[String: Any]] {
            try run(["status", "--json"], offset: offset).events.filter { $0["type"] as? String == "source" }
        }

        /// nginx's log lines for `path`.
        func requests(_ path: String) -> [String] { harness.origin.log().filter { $0.contains(" GET \(path) ") } }
    }

    static func manifest(name: String? = nil, files: [String]) -> String {
        (name.map { "name: \($0)\n" } ?? "") + "resources:\n" + files.map { "  - url: ORIGIN/\($0)\n" }.joined()
    }

    /// An unsigned https source: applied on the first run (no check recorded: due at once),
    /// its feed fetched in the same run; not fetched again before `refresh`; revalidated
    /// after it with the copy's validators, a 304 keeping the copy in force (`last_check`
    /// moves, `in_force_since` does not).
    @Test(.enabled(if: hasTools)) func anUnsignedHTTPSSourceIsAppliedThenRevalidated() throws {
        let body = RunCommandTests.random(5000, seed: 801)
        let s = try Setup(files: ["a.bin": body], sources: "  - url: ORIGIN/lobby.yaml\n")
        try s.publish("lobby.yaml", Self.manifest(files: ["a.bin"]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url("")))
        let first = try s.run()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(s.harness.cached("lobby/a.bin") == body)
        #expect(s.requests("/lobby.yaml").count == 1)
        #expect(FileManager.default.fileExists(atPath: SourceCopies.path(inCache: s.harness.cache.path, label: s.harness.origin.url("/lobby.yaml"))))
        let applied = try #require(try s.sources().first)
        #expect(applied["source"] as? String == s.harness.origin.url("/lobby.yaml"))
        #expect(applied["feed"] as? String == "lobby")
        #expect(applied["state"] as? String == "ok")
        #expect(applied["key_id"] is NSNull)
        #expect(applied["error"] is NSNull)
        #expect(applied["stale_since"] is NSNull)
        let since = try #require(applied["in_force_since"] as? String)
        #expect(applied["last_check"] as? String != nil)

        // Within refresh (15m): not asked again.
        #expect(try s.run(offset: "+10m").status == 0)
        #expect(s.requests("/lobby.yaml").count == 1)
        // After it: revalidated; nginx answers 304.
        #expect(try s.run(offset: "+16m").status == 0)
        let lines = s.requests("/lobby.yaml")
        #expect(lines.count == 2)
        #expect(lines.last?.hasPrefix("304 ") == true, "\(lines)")
        #expect(lines.last?.contains("inm=[\"") == true, "\(lines)")
        let after = try #require(try s.sources(offset: "+16m").first)
        #expect(after["in_force_since"] as? String == since)
        #expect(after["last_check"] as? String != applied["last_check"] as? String)
        #expect(after["state"] as? String == "ok")
    }

    /// Applied whole and valid, or not at all: a broken manifest published later is refused
    /// (`LABEL:LINE:COL: error:` with the line and a caret), the copy in force stays and its
    /// feed runs as before; the run exits 1 while the source is stale, also when it was not
    /// due; `status` says since when and why. Failed checks back off from 30 s; the next
    /// fetch is whole again (the refused version's validators were not kept), and a fixed
    /// manifest makes it ok.
    @Test(.enabled(if: hasTools)) func aBrokenManifestKeepsTheCopyInForce() throws {
        let body = RunCommandTests.random(3000, seed: 802)
        let s = try Setup(files: ["a.bin": body, "b.bin": body], sources: "  - url: ORIGIN/lobby.yaml\n    name: lobby\n")
        let good = Self.manifest(files: ["a.bin"]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url(""))
        try s.publish("lobby.yaml", good)
        #expect(try s.run().status == 0)
        try s.publish("lobby.yaml", "resources:\n  - url: \(s.harness.origin.url("/b.bin"))\n    windw: 1h\n", age: 60)

        let broken = try s.run(offset: "+16m")
        #expect(broken.status == 1, "\(broken.stderr)")
        #expect(broken.stderr.contains("lobby:3:5: error: unknown key 'windw'"), "\(broken.stderr)")
        #expect(broken.stderr.contains("    windw: 1h\n    ^"), "\(broken.stderr)")
        #expect(s.harness.cached("lobby/a.bin") == body)
        #expect(s.harness.cached("lobby/b.bin") == nil)
        let plan = try s.run(["plan", "--json"], offset: "+16m").events.filter { $0["type"] as? String == "resource" }
        #expect(plan.map { $0["path"] as? String } == ["a.bin"])
        let stale = try #require(try s.sources(offset: "+16m").first)
        #expect(stale["state"] as? String == "stale")
        #expect(stale["feed"] as? String == "lobby")
        #expect((stale["error"] as? String)?.hasPrefix("invalid manifest (1 error; the first at 3:5: unknown key 'windw'") == true, "\(stale)")
        #expect(stale["stale_since"] as? String != nil)
        let text = try s.run(["status"], offset: "+16m").stdout
        #expect(text.contains("source lobby: feed lobby, stale since "), "\(text)")

        // Not due again within the 30 s backoff, and still exit 1.
        let waiting = try s.run(offset: "+16m10s")
        #expect(waiting.status == 1)
        #expect(waiting.stderr.contains("prefetch: source lobby stale since "), "\(waiting.stderr)")
        #expect(s.requests("/lobby.yaml").count == 2)
        // After it: asked again (the copy's validators, not the refused one's: nginx sends it whole).
        try s.publish("lobby.yaml", good.replacingOccurrences(of: "a.bin", with: "b.bin"), age: 120)
        let fixed = try s.run(offset: "+17m")
        #expect(fixed.status == 0, "\(fixed.stderr)")
        #expect(s.requests("/lobby.yaml").count == 3)
        #expect(s.requests("/lobby.yaml").last?.hasPrefix("200 ") == true)
        #expect(s.harness.cached("lobby/b.bin") == body)
        #expect(try s.sources(offset: "+17m").first?["state"] as? String == "ok")
    }

    /// Every kind of failed check keeps the copy in force and its feed: an HTTP error, a
    /// manifest over `max_manifest_size`, one naming another feed than the source's `name`.
    /// Each is said as `LABEL: error: …` (or at its place), the source is stale with the
    /// reason, and the run exits 1.
    @Test(.enabled(if: hasTools)) func everyFailedCheckKeepsTheCopyInForce() throws {
        let body = RunCommandTests.random(1000, seed: 808)
        let s = try Setup(files: ["a.bin": body], sources: "  - url: ORIGIN/lobby.yaml\n    name: lobby\n    refresh: 1m\n",
                          extraConfig: "max_manifest_size: 1KiB\n")
        let good = Self.manifest(files: ["a.bin"]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url(""))
        try s.publish("lobby.yaml", good)
        #expect(try s.run().status == 0)
        let big = good + "# " + String(repeating: "x", count: 2000) + "\n"
        let tooLarge = "cannot fetch the manifest: the manifest is \(big.utf8.count) bytes (\(ByteSize.format(UInt64(big.utf8.count)))), "
            + "over max_manifest_size 1KiB (1024 bytes)"
        let cases: [(publish: String?, said: String, reason: String)] = [
            (nil, "lobby: error: cannot fetch the manifest: HTTP 404", "cannot fetch the manifest: HTTP 404"),
            (big, "lobby: error: " + tooLarge, tooLarge),
            ("name: hall\n" + good, "lobby:1:7: error: the manifest names the feed 'hall', but the source's name is 'lobby'",
             "the manifest names the feed 'hall', not 'lobby'"),
        ]
        for (index, item) in cases.enumerated() {
            let url = s.harness.www.appendingPathComponent("lobby.yaml")
            if let text = item.publish { try s.publish("lobby.yaml", text, age: Double(60 * (index + 1))) } else { try? FileManager.default.removeItem(at: url) }
            // Each case a refresh and a backoff later than the one before.
            let offset = "+\(index + 1)h"
            let result = try s.run(offset: offset)
            #expect(result.status == 1, "\(item.said)")
            #expect(result.stderr.contains(item.said), "\(result.stderr)")
            #expect(s.harness.cached("lobby/a.bin") == body)
            let line = try #require(try s.sources(offset: offset).first)
            #expect(line["state"] as? String == "stale")
            #expect(line["error"] as? String == item.reason)
            #expect(line["feed"] as? String == "lobby")
            let plan = try s.run(["plan", "--json"], offset: offset).events.filter { $0["type"] as? String == "resource" }
            #expect(plan.map { $0["feed"] as? String } == ["lobby"])
        }
    }

    /// Fetched like content: through the config's `proxy` (squid, a CONNECT tunnel to the
    /// TLS origin) with the manifest and its feed's files alike.
    @Test(.enabled(if: hasTools && FileManager.default.isExecutableFile(atPath: SquidProxy.executable)))
    func aSourceGoesThroughTheConfiguredProxy() throws {
        let squid = try SquidProxy()
        let s = try Setup(files: ["a.bin": [9, 9, 9]], sources: "  - url: ORIGIN/lobby.yaml\n", extraConfig: "proxy: \(squid.url)\n")
        try s.publish("lobby.yaml", Self.manifest(files: ["a.bin"]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url("")))
        let result = try s.run()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(s.harness.cached("lobby/a.bin") == [9, 9, 9])
        // Two tunnels: the source's fetch and the transfer engine share no connection.
        #expect(squid.log().filter { $0.method == "CONNECT" && $0.url.hasSuffix(":\(s.harness.origin.port)") }.count == 2, "\(squid.log())")
        #expect(s.requests("/lobby.yaml").count == 1)
    }

    /// A source never applied (its URL answers 404): `none`, with the reason, and every run
    /// exits 1 while it stays so; the metrics say 0 and no success.
    @Test(.enabled(if: hasTools)) func aSourceNeverAppliedIsNoneAndFailsTheRun() throws {
        let s = try Setup(files: ["a.bin": [1, 2, 3]], sources: "  - url: ORIGIN/missing.yaml?site=lobby&t=secret\n",
                          extraConfig: "metrics_file: metrics.prom\n")
        let result = try s.run()
        #expect(result.status == 1)
        let label = s.harness.origin.url("/missing.yaml?site=…&t=…")
        #expect(result.stderr.contains("\(label): error: cannot fetch the manifest: HTTP 404"), "\(result.stderr)")
        #expect(!result.stderr.contains("secret"))
        let line = try #require(try s.sources().first)
        #expect(line["source"] as? String == label)
        #expect(line["url"] as? String == s.harness.origin.url("/missing.yaml?…"))
        #expect(line["state"] as? String == "none")
        #expect(line["feed"] is NSNull)
        #expect(line["in_force_since"] is NSNull)
        #expect(line["stale_since"] is NSNull)
        #expect(line["error"] as? String == "cannot fetch the manifest: HTTP 404")
        let metrics = try String(contentsOf: s.harness.dir.url.appendingPathComponent("metrics.prom"), encoding: .utf8)
        #expect(metrics.contains("prefetch_source_ok{source=\"\(label)\"} 0\n"), "\(metrics)")
        #expect(metrics.contains("prefetch_source_last_success_timestamp_seconds{source=\"\(label)\"} 0\n"), "\(metrics)")
    }

    /// The config's checks: plain http without a key, two entries with one label, a key
    /// that is not a minisign key — each a config error (exit 2) naming the place, before
    /// anything is fetched or created.
    @Test(.enabled(if: hasTools)) func badSourceEntriesAreConfigErrors() throws {
        let s = try Setup(files: [:], sources: "")
        let cases: [(String, String)] = [
            ("  - url: http://127.0.0.1:9/lobby.yaml\n", "config.yaml:3:10: error: a feed source over plain http needs a public_key"),
            ("  - url: ORIGIN/a.yaml\n    name: a\n  - url: ORIGIN/b.yaml\n    name: a\n",
             "config.yaml:5:5: error: feed source 'a' is listed twice (first at line 3)"),
            ("  - url: ORIGIN/a.yaml?t=1\n  - url: ORIGIN/a.yaml?t=2\n",
             "config.yaml:4:5: error: feed source '\(s.harness.origin.url("/a.yaml?t=…"))' is listed twice (first at line 3)"),
            ("  - url: ORIGIN/a.yaml\n    public_key: nonsense\n", "config.yaml:4:17: error: a minisign public key is 56 base64 characters"),
            ("  - url: ORIGIN/feeds/\n", "config.yaml:3:10: error: the URL's file name gives no valid feed name"),
        ]
        for (entries, expected) in cases {
            try s.writeConfig(sources: entries)
            let result = try s.run()
            #expect(result.status == 2, "\(entries)")
            #expect(result.stderr.contains(expected), "\(entries): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: s.harness.cache.path))
        }
        #expect(s.harness.origin.log().isEmpty)
    }

    /// `run --feed NAME` with a NAME that neither a local feed nor a copy in force has: exit
    /// 2 before anything is fetched. A copy in force's name is known (and runs alone).
    @Test(.enabled(if: hasTools)) func runFeedKnowsTheCopiesInForce() throws {
        let s = try Setup(files: ["a.bin": [7, 7]], sources: "  - url: ORIGIN/lobby.yaml\n")
        try s.publish("lobby.yaml", Self.manifest(files: ["a.bin"]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url("")))
        let unknown = try s.run(["run", "--feed", "lobby"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown feed 'lobby'"), "\(unknown.stderr)")
        #expect(s.harness.origin.log().isEmpty)
        #expect(try s.run().status == 0)
        let known = try s.run(["run", "--feed", "lobby"], offset: "+16m")
        #expect(known.status == 0, "\(known.stderr)")
        #expect(try s.run(["run", "--feed", "lobbby"]).status == 2)
    }

    /// Names: a local feed wins. One that later takes the name of a source's feed turns the
    /// source stale (`name taken`), and the local feed is the one that runs; a source
    /// dropped from the config leaves its feed a removed feed, kept for §6's grace.
    @Test(.enabled(if: hasTools)) func localFeedsWinANameAndADroppedSourceLeavesARemovedFeed() throws {
        let a = RunCommandTests.random(2000, seed: 803), b = RunCommandTests.random(2000, seed: 804)
        let s = try Setup(files: ["a.bin": a, "b.bin": b], sources: "  - url: ORIGIN/lobby.yaml\n    name: lobby\n")
        try s.publish("lobby.yaml", Self.manifest(files: ["a.bin"]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url("")))
        #expect(try s.run().status == 0)
        #expect(s.harness.cached("lobby/a.bin") == a)

        try s.harness.feed("name: lobby\nrefresh: 1h\nresources:\n  - url: ORIGIN/b.bin\n", name: "local")
        let clash = try s.run()
        #expect(clash.status == 1, "\(clash.stderr)")
        // The reason names the name and who holds it, the same in the run's error line,
        // `status` and `status --json` (SPEC §8, "Names").
        let reason = "name taken: 'lobby' is the local feed feeds/local.yaml"
        #expect(clash.stderr.contains("lobby: error: \(reason)\n"), "\(clash.stderr)")
        #expect(s.harness.cached("lobby/b.bin") == b)
        let line = try #require(try s.sources().first)
        #expect(line["state"] as? String == "stale")
        #expect(line["error"] as? String == reason)
        let status = try s.run(["status"])
        #expect(status.stdout.contains(reason), "\(status.stdout)")

        // The local feed goes, the source's copy in force runs again.
        try FileManager.default.removeItem(at: s.harness.dir.url.appendingPathComponent("feeds/local.yaml"))
        #expect(try s.run().status == 0)
        #expect(try s.sources().first?["state"] as? String == "ok")

        // Dropped from the config: its feed is a removed feed, its folder kept (another
        // manifest is there: with none at all, nothing is scheduled for removal, §6).
        try s.harness.feed("refresh: 1h\nresources:\n  - url: ORIGIN/b.bin\n", name: "other")
        try s.writeConfig(sources: "")
        let dropped = try s.run()
        #expect(dropped.stderr.contains("kept  lobby/  (its manifest is gone"), "\(dropped.stderr)")
        #expect(s.harness.cached("lobby/a.bin") == a)
        #expect(try s.sources().isEmpty)
    }

    /// A copy in force this version cannot read (another format) counts as never applied:
    /// `plan` and `status` show `none` with the reason; the next run fetches the manifest
    /// whole at once (no validators of a copy it cannot read) and applies it again.
    @Test(.enabled(if: hasTools)) func aCopyThisVersionCannotReadCountsAsNeverApplied() throws {
        let body = RunCommandTests.random(1000, seed: 807)
        let s = try Setup(files: ["a.bin": body], sources: "  - url: ORIGIN/lobby.yaml\n    name: lobby\n")
        try s.publish("lobby.yaml", Self.manifest(files: ["a.bin"]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url("")))
        #expect(try s.run().status == 0)
        let path = SourceCopies.path(inCache: s.harness.cache.path, label: "lobby")
        try Data("prefetch source copy 7\n{}\nresources: []\n".utf8).write(to: URL(fileURLWithPath: path))
        let line = try #require(try s.sources().first)
        #expect(line["state"] as? String == "none")
        #expect(line["feed"] is NSNull && line["in_force_since"] is NSNull && line["key_id"] is NSNull)
        #expect((line["error"] as? String)?.contains("written by another version of prefetch (format 7") == true, "\(line)")
        let plan = try s.run(["plan"]).stdout
        #expect(plan.contains("source lobby: none (never applied): the copy in force was written by another version"), "\(plan)")
        let again = try s.run()
        #expect(again.status == 0, "\(again.stderr)")
        #expect(s.requests("/lobby.yaml").count == 2)
        #expect(s.requests("/lobby.yaml").last?.contains("inm=[-]") == true)
        #expect(try s.sources().first?["state"] as? String == "ok")
    }

    /// Polls `condition` for up to `seconds`.
    static func wait(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return condition()
    }

    /// The daemon checks sources before each pass: it wakes when one comes due (a 3 s
    /// refresh: no offset under 10 s), says a stale one in its log each pass, and SIGHUP
    /// checks every source at once, due or not.
    @Test(.enabled(if: hasTools)) func theDaemonWakesForSourcesAndSIGHUPChecksThemAll() throws {
        let a = RunCommandTests.random(1500, seed: 805), b = RunCommandTests.random(1500, seed: 806)
        let s = try Setup(files: ["a.bin": a, "b.bin": b],
                          sources: "  - url: ORIGIN/fast.yaml\n    refresh: 3s\n  - url: ORIGIN/slow.yaml\n    refresh: 1h\n")
        func manifest(_ file: String) -> String { Self.manifest(files: [file]).replacingOccurrences(of: "ORIGIN", with: s.harness.origin.url("")) }
        try s.publish("fast.yaml", manifest("a.bin"))
        try s.publish("slow.yaml", manifest("a.bin"))
        let (daemon, log) = try s.harness.startDaemon(config: "config.yaml")
        defer { if daemon.isRunning { daemon.terminate(); daemon.waitUntilExit() } }
        func logText() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        #expect(Self.wait(seconds: 20) { s.harness.cached("fast/a.bin") == a && s.harness.cached("slow/a.bin") == a }, "\(logText())")

        // fast comes due by itself: its new version is applied and its feed runs.
        try s.publish("fast.yaml", manifest("b.bin"), age: 60)
        #expect(Self.wait(seconds: 20) { s.harness.cached("fast/b.bin") == b }, "\(logText())")
        #expect(s.requests("/slow.yaml").count == 1)
        // slow only when told: SIGHUP checks every source.
        try s.publish("slow.yaml", manifest("b.bin"), age: 60)
        kill(daemon.processIdentifier, SIGHUP)
        #expect(Self.wait(seconds: 20) { s.harness.cached("slow/b.bin") == b }, "\(logText())")
        #expect(s.requests("/slow.yaml").count == 2)

        // A broken version: the copy in force stays, and each pass says the source is stale.
        try s.publish("fast.yaml", "resources: [\n", age: 120)
        #expect(Self.wait(seconds: 20) { logText().contains("prefetch daemon: source \(s.harness.origin.url("/fast.yaml")) stale since ") },
                "\(logText())")
        #expect(s.harness.cached("fast/b.bin") == b)
        daemon.terminate()
        daemon.waitUntilExit()
        #expect(daemon.terminationStatus == 0)
    }
}
