import Foundation
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6, "Metrics for Prometheus", read by their real consumer: Debian's
/// prometheus-node-exporter with its textfile collector on the metrics folder, scraped.
@Suite(.serialized) struct MetricsTests {
    static let a = FaultTests.bytes(3000, seed: 81), b = FaultTests.bytes(5000, seed: 82)

    @Test func nodeExporterReadsTheMetricsAfterEveryPass() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(Self.b, etag: "\"b\""))
        try s.feed("refresh: 1h\nretry: { attempts: 5, backoff: 10m }\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n")
        let folder = s.dir.url.appendingPathComponent("textfile")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let exporter = try NodeExporter(folder: folder)
        let file = folder.appendingPathComponent("prefetch.prom").path
        let origin = s.origin.url("")

        // The first run, with --metrics-file.
        #expect(try s.run(["run", "--metrics-file", file]).status == 0)
        var text = try exporter.scrape()
        #expect(NodeExporter.value(text, "node_textfile_scrape_error") == 0, "node_exporter read the file without error")
        #expect(NodeExporter.value(text, "prefetch_files{feed=\"t\"}") == 2)
        #expect(NodeExporter.value(text, "prefetch_bytes{feed=\"t\"}") == Double(Self.a.count + Self.b.count))
        #expect(NodeExporter.value(text, "prefetch_transfers_total{feed=\"t\",result=\"placed\"}") == 2)
        #expect(NodeExporter.value(text, "prefetch_transfers_total{feed=\"t\",result=\"failed\"}") == 0)
        #expect(NodeExporter.value(text, "prefetch_body_bytes_total{feed=\"t\"}") == Double(Self.a.count + Self.b.count))
        #expect(NodeExporter.value(text, "prefetch_release_complete{feed=\"t\"}") == 1)
        #expect(NodeExporter.value(text, "prefetch_missed_windows{feed=\"t\"}") == 0)
        let now = Date().timeIntervalSince1970
        #expect(abs((NodeExporter.value(text, "prefetch_last_run_timestamp_seconds") ?? 0) - now) < 30)
        #expect(abs((NodeExporter.value(text, "prefetch_last_success_timestamp_seconds{feed=\"t\"}") ?? 0) - now) < 30)
        #expect((NodeExporter.value(text, "prefetch_next_wakeup_timestamp_seconds{feed=\"t\"}") ?? 0) > now + 3000, "the next release, in an hour")
        #expect(NodeExporter.value(text, "prefetch_last_run_duration_seconds") != nil)
        // Every family has its HELP and TYPE, and no sample carries a timestamp.
        let raw = try String(contentsOfFile: file, encoding: .utf8)
        for family in ["prefetch_files", "prefetch_bytes", "prefetch_transfers_total", "prefetch_body_bytes_total",
                       "prefetch_last_success_timestamp_seconds", "prefetch_next_wakeup_timestamp_seconds", "prefetch_missed_windows",
                       "prefetch_release_complete", "prefetch_origin_held", "prefetch_last_run_timestamp_seconds",
                       "prefetch_last_run_duration_seconds"] {
            #expect(raw.contains("# HELP \(family) ") && raw.contains("# TYPE \(family) "), "\(family)")
        }
        #expect(raw.split(separator: "\n").filter { !$0.hasPrefix("#") }.allSatisfy { $0.split(separator: " ").count == 2 }, "\(raw)")

        // The next release, 304s, through the config's metrics_file: the counters go on, never back.
        try s.dir.write("config.yaml", "metrics_file: textfile/prefetch.prom\n")
        let config = s.dir.url.appendingPathComponent("config.yaml").path
        #expect(try s.runJSON(offset: "+2h", config: config).status == 0)
        text = try exporter.scrape()
        #expect(NodeExporter.value(text, "prefetch_transfers_total{feed=\"t\",result=\"placed\"}") == 2)
        #expect(NodeExporter.value(text, "prefetch_transfers_total{feed=\"t\",result=\"fresh\"}") == 2)

        // An origin answering 503 is held beyond the run (a 10-minute backoff): 1; once it answers, 0.
        s.origin.inject("/a.bin", [.status(503)])
        s.origin.inject("/b.bin", [.status(503)])
        #expect(try s.runJSON(offset: "+4h", config: config).status == 1)
        text = try exporter.scrape()
        #expect(NodeExporter.value(text, "prefetch_origin_held{origin=\"\(origin)\"}") == 1, "\(text)")
        #expect(NodeExporter.value(text, "prefetch_release_complete{feed=\"t\"}") == 0)
        #expect((NodeExporter.value(text, "prefetch_transfers_total{feed=\"t\",result=\"failed\"}") ?? 0) >= 1)
        #expect(try s.runJSON(offset: "+4h20m", config: config).status == 0)
        text = try exporter.scrape()
        #expect(NodeExporter.value(text, "prefetch_origin_held{origin=\"\(origin)\"}") == 0, "cleared, not gone")
        #expect(NodeExporter.value(text, "node_textfile_scrape_error") == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["prefetch.prom"], "no temporary file left")
    }

    /// SPEC §6 (changed by issue 19, where this was a warning and exit 0): a metrics file
    /// that cannot be written is an error of the pass — `run` exits 1 and says so, the files
    /// are placed all the same; `--json`'s summary says exit 1.
    @Test func aMetricsFileThatCannotBeWrittenFailsTheRun() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let run = try s.run(["run", "--metrics-file", "/nonexistent/folder/prefetch.prom"])
        #expect(run.status == 1 && s.digest("t/a.bin") == FaultTests.sha(Self.a), "\(run.diagnostics)")
        #expect(run.stderr.contains("prefetch: error: cannot write the metrics file /nonexistent/folder/prefetch.prom: "), "\(run.stderr)")
        let json = try s.run(["run", "--json", "--metrics-file", "/nonexistent/folder/prefetch.prom"])
        #expect(json.status == 1 && json.events.last?["type"] as? String == "summary" && json.events.last?["exit"] as? Int == 1,
                "\(json.diagnostics)")
        // Once it can be written, the run is a success again.
        #expect(try s.run(["run", "--metrics-file", s.dir.file("prefetch.prom")]).status == 0)
    }

    /// The daemon: each pass that cannot write the metrics file says so in its log and in
    /// systemd's STATUS= (SPEC §6); a pass that writes it clears the status.
    @Test func theDaemonSaysEachPassThatTheMetricsFileCannotBeWritten() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        try s.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n")
        try s.dir.write("config.yaml", "metrics_file: textfile/prefetch.prom\n")  // no such folder yet
        let listener = try NotifyListener(s.dir.file("notify"))
        defer { listener.close() }
        let (daemon, log) = try s.startDaemon(config: s.dir.file("config.yaml"), environment: ["NOTIFY_SOCKET": listener.name])
        defer { if daemon.isRunning { daemon.terminate(); daemon.waitUntilExit() } }
        let error = "error: cannot write the metrics file \(s.dir.file("textfile/prefetch.prom")): "
        #expect(listener.waitFor(20) { $0.hasPrefix("STATUS=idle") && $0.contains(" · " + error) } != nil, "\(listener.messages)")
        kill(daemon.processIdentifier, SIGUSR1)  // a second pass: said again
        var logged = ""
        for _ in 0..<400 where logged.components(separatedBy: "prefetch: " + error).count < 3 {
            Thread.sleep(forTimeInterval: 0.05)
            logged = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        }
        #expect(logged.components(separatedBy: "prefetch: " + error).count == 3, "two passes, two errors: \(logged)")
        // The folder appears: the next pass writes the file, and the status no longer says it.
        try FileManager.default.createDirectory(at: s.dir.url.appendingPathComponent("textfile"), withIntermediateDirectories: true)
        let before = listener.messages.count
        kill(daemon.processIdentifier, SIGUSR1)
        #expect(listener.waitFor(20) { line in listener.messages.count > before && line.hasPrefix("STATUS=idle") && !line.contains("error") }
                != nil, "\(listener.messages)")
        #expect(FileManager.default.fileExists(atPath: s.dir.file("textfile/prefetch.prom")))
    }

    /// The daemon writes the file after its first pass too.
    @Test func theDaemonWritesItAfterAPass() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.a, etag: "\"a\""))
        try s.feed("refresh: 1h\nresources:\n  - url: ORIGIN/a.bin\n")
        let file = s.dir.url.appendingPathComponent("prefetch.prom")
        try s.dir.write("config.yaml", "metrics_file: prefetch.prom\n")
        let (daemon, log) = try s.startDaemon(config: s.dir.url.appendingPathComponent("config.yaml").path)
        defer { daemon.terminate(); daemon.waitUntilExit() }
        var text = ""
        for _ in 0..<200 where !text.contains("prefetch_files{feed=\"t\"} 1") {
            Thread.sleep(forTimeInterval: 0.05)
            text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        }
        #expect(text.contains("prefetch_files{feed=\"t\"} 1"), "\(text)\n\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }
}
