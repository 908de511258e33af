import Foundation
import Testing
import TestSupport

/// The shipped Prometheus rules (`etc/prometheus/prefetch.rules.yml`, docs/fleet.md "Metrics
/// for Prometheus") run by Debian's promtool on what the binary writes: `prefetch run` writes
/// two metrics files (a run that placed a feed's files; three hours later an origin held, a
/// feed starved and a feed source never applied), their samples become promtool's input
/// series, and each alert gets a case where it fires and one where it stays quiet. Series
/// names and labels are always the file's (with the `instance` and `job` a scrape adds), so
/// a metric renamed in the code fails here; only values are changed, where a case needs what
/// one pass cannot write (a day without a pass, a counter that moved over a day).
@Suite(.serialized) struct AlertRulesTests {
    static let promtoolPath = "/usr/bin/promtool"
    static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../etc/prometheus/prefetch.rules.yml").standardized.path
    /// The target labels of every input series: node_exporter's, as Prometheus scrapes it.
    static let kiosk = "kiosk-1", job = "node"
    /// docs/fleet.md's example minisign key: a feed source over plain http needs one.
    static let key = "RWTm0l/pL5lOJIHgYV0bMjX6aMgYEwwcAUwY+aKSpNh/O3uUSGH6C+UH"

    @Test func promtoolChecksTheShippedRules() throws {
        let check = try Self.promtool(["check", "rules", Self.rules])
        #expect(check.status == 0, "promtool check rules \(Self.rules):\n\(check.stdout)\(check.stderr)")
    }

    /// Every alert of the file, promtool's unit test of it: fires, and stays quiet.
    @Test func everyAlertFiresAndStaysQuietOnTheBinarysMetrics() throws {
        let (ok, trouble) = try Self.writeMetrics(trouble: true)
        let troubled = try #require(trouble)
        let tests = try [Self.starved(ok, troubled), Self.originHeld(troubled), Self.releaseNotComplete(ok, troubled),
                         Self.notRunning(ok), Self.failing(ok, troubled), Self.sourceStale(troubled),
                         Self.sourceNotChecked(troubled), Self.sourceBrokenFleetWide(troubled)]
        let text = try String(contentsOfFile: Self.rules, encoding: .utf8)
        let alerts = Self.names(text, "alert")
        #expect(Set(alerts) == Set(tests.map(\.alert)) && alerts.count == tests.count, "the rules' alerts \(alerts), tested \(tests.map(\.alert))")
        let folder = try TemporaryFolder()
        for test in tests {
            let file = try folder.write(test.alert + ".test.yml", Self.testFile(test))
            let result = try Self.promtool(["test", "rules", file], in: folder.url)
            #expect(result.status == 0, "promtool test rules \(file):\n\(result.stdout)\(result.stderr)\n\(Self.testFile(test))")
        }
    }

    /// The recording rules: the share of bytes reused, not fetched, over a day, per kiosk and
    /// feed and for the fleet (a sum of rates, not an average of shares); nothing where no
    /// byte moved. Fails until the binary writes `prefetch_reused_bytes_total{feed,how}`.
    @Test func theReuseShareIsRecordedFromTheBinarysCounters() throws {
        let (ok, _) = try Self.writeMetrics(trouble: false)
        let reused = ok.samples("prefetch_reused_bytes_total")
        try #require(!reused.isEmpty, "no prefetch_reused_bytes_total{feed,how} in the metrics file the binary wrote, which the recording rules read:\n\(ok.text)")
        let text = try String(contentsOfFile: Self.rules, encoding: .utf8)
        let records = ["instance_feed:prefetch_reused_bytes:ratio_rate1d", "feed:prefetch_reused_bytes:ratio_rate1d"]
        #expect(Self.names(text, "record") == records)
        let share = reused.filter { $0.label("feed") == "t" }
        try #require(!share.isEmpty && share.allSatisfy { $0.label("how") != nil } && 180 % share.count == 0, "feed t's, by how:\n\(ok.text)")
        // A day at one sample a minute. kiosk-1, feed t: 3 bytes/s reused (shared among the
        // `how`s), 1 received: 0.75. kiosk-2, feed t: none reused, 2 received: 0. The fleet's
        // feed t: 3 / (3 + 1 + 2) = 0.5 (an average of the shares would say 0.375). Every
        // other feed keeps the file's values: nothing moved, no sample.
        var series: [Series] = []
        for sample in reused + ok.samples("prefetch_body_bytes_total") {
            guard sample.label("feed") == "t" else {
                series += [Series(sample, "\(sample.value)x1440"), Series(sample, "\(sample.value)x1440", on: "kiosk-2")]
                continue
            }
            let body = sample.name == "prefetch_body_bytes_total"
            series.append(Series(sample, body ? "0+60x1440" : "0+\(180 / share.count)x1440"))
            series.append(Series(sample, body ? "0+120x1440" : "0x1440", on: "kiosk-2"))
        }
        let t = try ok.one("prefetch_body_bytes_total", ["feed": "t"])
        let file = try TemporaryFolder()
        var yaml = Self.header("the recording rules") + "- name: \(Self.yaml("a day of transfers, two kiosks"))\n  interval: 1m\n"
        yaml += "  input_series:\n" + series.map(\.yaml).joined() + "  promql_expr_test:\n"
        yaml += "  - expr: \(records[0])\n    eval_time: 1d\n    exp_samples:\n"
        yaml += "    - labels: \(Self.yaml(Self.selector(records[0], Series(t, "").labels)))\n      value: 0.75\n"
        yaml += "    - labels: \(Self.yaml(Self.selector(records[0], Series(t, "", on: "kiosk-2").labels)))\n      value: 0\n"
        yaml += "  - expr: \(records[1])\n    eval_time: 1d\n    exp_samples:\n"
        yaml += "    - labels: \(Self.yaml(Self.selector(records[1], [(key: "feed", value: "t")])))\n      value: 0.5\n"
        let path = try file.write("recording.test.yml", yaml)
        let result = try Self.promtool(["test", "rules", path], in: file.url)
        #expect(result.status == 0, "promtool test rules \(path):\n\(result.stdout)\(result.stderr)\n\(yaml)")
    }

    // MARK: The binary's metrics files

    /// `ok`: a run (`--assume network=metered`) that placed feed t's two files; feed s (hourly,
    /// `network: unmetered`) waits. `trouble`, three hours later: t's origin answers 503 and is
    /// held (a 10-minute backoff, beyond the run), s has missed three windows (starved), and a
    /// feed source whose manifest is missing (404) was never applied; the run exits 1.
    static func writeMetrics(trouble: Bool) throws -> (ok: MetricsFile, trouble: MetricsFile?) {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(FaultTests.bytes(3000, seed: 91), etag: "\"a\""))
        s.origin.serve("/b.bin", OriginResource(FaultTests.bytes(5000, seed: 92), etag: "\"b\""))
        s.origin.serve("/s.bin", OriginResource(FaultTests.bytes(2000, seed: 93), etag: "\"s\""))
        try s.feed("refresh: 1h\nretry: { attempts: 5, backoff: 10m }\nresources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/b.bin\n")
        try s.feed("schedule: \"0 * * * *\"\ntimezone: UTC\nconditions: { network: unmetered }\nresources:\n  - url: ORIGIN/s.bin\n", name: "s")
        let first = try s.run(["run", "--assume", "network=metered", "--metrics-file", s.dir.file("ok.prom")])
        #expect(first.status == 0, "\(first.diagnostics)")
        let ok = try MetricsFile(s.dir.file("ok.prom"))
        guard trouble else { return (ok, nil) }
        s.origin.inject("/a.bin", [.status(503)])
        s.origin.inject("/b.bin", [.status(503)])
        try s.dir.write("config.yaml", "feed_sources:\n  - url: \(s.origin.url("/lobby.yaml"))\n    public_key: \(key)\n")
        let later = try s.run(["run", "--assume", "network=metered", "--metrics-file", s.dir.file("trouble.prom")],
                              environment: ["PREFETCH_CLOCK_OFFSET": "+3h"], config: s.dir.file("config.yaml"))
        #expect(later.status == 1, "\(later.diagnostics)")
        let troubled = try MetricsFile(s.dir.file("trouble.prom"))
        return (ok, troubled)
    }

    // MARK: The alerts' cases

    static func starved(_ ok: MetricsFile, _ trouble: MetricsFile) throws -> AlertTest {
        let feed = try trouble.one("prefetch_starved", ["feed": "s"]), missed = try trouble.one("prefetch_missed_windows", ["feed": "s"])
        #expect(feed.value == "1" && (missed.number ?? 0) >= 3, "feed s missed its hourly windows:\n\(trouble.text)")
        let families = ["prefetch_starved", "prefetch_missed_windows"]
        let summary: (key: String, value: String) = (key: "summary", value: "\(kiosk): s missed \(missed.value) windows in a row")
        let alert = Alert(Series(feed, ""), annotations: [summary])
        let troubled: [Series] = families.flatMap { trouble.samples($0) }.map { Series($0, "\($0.value)x120") }
        let fine: [Series] = families.flatMap { ok.samples($0) }.map { Series($0, "\($0.value)x120") }
        let fires = Group(name: "fires: feed s starved (t, not starved, does not), after an hour", series: troubled,
                          evaluations: [Evaluation("59m"), Evaluation("61m", [alert])])
        let quiet = Group(name: "quiet: the run that placed feed t's files", series: fine, evaluations: [Evaluation("61m")])
        return AlertTest(alert: "PrefetchStarved", groups: [fires, quiet])
    }

    static func originHeld(_ trouble: MetricsFile) throws -> AlertTest {
        let held = try trouble.one("prefetch_origin_held")
        #expect(held.value == "1", "\(trouble.text)")
        let fires = Group(name: "fires: held for over an hour", series: [Series(held, "\(held.value)x120")],
                          evaluations: [Evaluation("59m"), Evaluation("61m", [Alert(Series(held, ""))])])
        let quiet = Group(name: "quiet: held for 50 minutes, then cleared (0)", series: [Series(held, "\(held.value)x50 0x70")],
                          evaluations: [Evaluation("50m"), Evaluation("2h")])
        return AlertTest(alert: "PrefetchOriginHeld", groups: [fires, quiet])
    }

    static func releaseNotComplete(_ ok: MetricsFile, _ trouble: MetricsFile) throws -> AlertTest {
        let incomplete = try trouble.one("prefetch_release_complete", ["feed": "t"]), complete = try ok.one("prefetch_release_complete", ["feed": "t"])
        #expect(incomplete.value == "0" && complete.value == "1", "\(ok.text)\n\(trouble.text)")
        let fires = Group(name: "fires: incomplete from 07:30 UTC, no longer at 08:00", series: [Series(incomplete, "\(incomplete.value)x600")],
                          evaluations: [Evaluation("6h45m"), Evaluation("7h15m"), Evaluation("7h45m", [Alert(Series(incomplete, ""))]), Evaluation("8h15m")])
        let quiet = Group(name: "quiet: complete", series: [Series(complete, "\(complete.value)x600")], evaluations: [Evaluation("7h45m")])
        return AlertTest(alert: "PrefetchReleaseNotComplete", groups: [fires, quiet])
    }

    /// promtool's clock starts at the epoch: the last run's time is a value of that clock.
    static func notRunning(_ ok: MetricsFile) throws -> AlertTest {
        let last = try ok.one("prefetch_last_run_timestamp_seconds")
        let fires = Group(name: "fires: no pass since 00:00 on day one, after two days", interval: "1h", series: [Series(last, "0x72")],
                          evaluations: [Evaluation("47h"), Evaluation("49h", [Alert(Series(last, ""))])])
        let quiet = Group(name: "quiet: a pass every hour", interval: "1h", series: [Series(last, "0+3600x72")], evaluations: [Evaluation("49h")])
        return AlertTest(alert: "PrefetchNotRunning", groups: [fires, quiet])
    }

    /// Each transfer counter as it was after the first run for an hour, then as after the
    /// second (its failures) for eight hours and more.
    static func failing(_ ok: MetricsFile, _ trouble: MetricsFile) throws -> AlertTest {
        let failed = try trouble.one("prefetch_transfers_total", ["feed": "t", "result": "failed"])
        var fails: [Series] = [], answered: [Series] = []
        for late in trouble.samples("prefetch_transfers_total") {
            let early = try ok.one(late.name, ["feed": late.label("feed") ?? "", "result": late.label("result") ?? ""])
            let rose = (late.number ?? 0) > (early.number ?? 0)
            #expect(rose == (late.label("feed") == "t" && late.label("result") == "failed"), "only t's failures rose:\n\(ok.text)\n\(trouble.text)")
            let history = "\(early.value)x6 \(late.value)x50"
            fails.append(Series(late, history))
            let fresh = late.label("feed") == "t" && late.label("result") == "fresh"
            answered.append(Series(late, fresh ? "\(early.value)x6 \(Int(early.number ?? 0) + 2)x50" : history))
        }
        let fires = Group(name: "fires: t's transfers failed, none placed or fresh, until six hours later", interval: "10m", series: fails,
                          evaluations: [Evaluation("2h", [Alert(Series(failed, ""))]), Evaluation("8h")])
        let quiet = Group(name: "quiet: two of t's files fresh (304) beside the failures", interval: "10m", series: answered,
                          evaluations: [Evaluation("2h")])
        return AlertTest(alert: "PrefetchFailing", groups: [fires, quiet])
    }

    static func sourceStale(_ trouble: MetricsFile) throws -> AlertTest {
        let stale = try trouble.one("prefetch_source_ok")
        #expect(stale.value == "0", "\(trouble.text)")
        let summary: (key: String, value: String) = (key: "summary", value: "\(kiosk): feed source \(stale.label("source") ?? "") is stale or never applied")
        let fires = Group(name: "fires: stale for over an hour", series: [Series(stale, "\(stale.value)x120")],
                          evaluations: [Evaluation("59m"), Evaluation("61m", [Alert(Series(stale, ""), annotations: [summary])])])
        let quiet = Group(name: "quiet: stale for half an hour, then ok (1)", series: [Series(stale, "\(stale.value)x30 1x90")],
                          evaluations: [Evaluation("30m"), Evaluation("2h")])
        return AlertTest(alert: "PrefetchSourceStale", groups: [fires, quiet])
    }

    static func sourceNotChecked(_ trouble: MetricsFile) throws -> AlertTest {
        let never = try trouble.one("prefetch_source_last_success_timestamp_seconds"), last = try trouble.one("prefetch_last_run_timestamp_seconds")
        #expect(never.value == "0", "never applied: \(trouble.text)")
        let series = [Series(never, "\(never.value)x30"), Series(last, "0+3600x30"),
                      Series(never, "\(never.value)x30", on: "kiosk-2"), Series(last, "0x30", on: "kiosk-2")]
        let fires = Group(name: "fires: never checked well, on kiosk-1 whose passes run hourly (kiosk-2, whose passes stopped, does not)",
                          interval: "1h", series: series, evaluations: [Evaluation("23h"), Evaluation("25h", [Alert(Series(never, ""))])])
        let quiet = Group(name: "quiet: checked every hour", interval: "1h", series: [Series(never, "0+3600x30"), Series(last, "0+3600x30")],
                          evaluations: [Evaluation("25h")])
        return AlertTest(alert: "PrefetchSourceNotChecked", groups: [fires, quiet])
    }

    static func sourceBrokenFleetWide(_ trouble: MetricsFile) throws -> AlertTest {
        let stale = try trouble.one("prefetch_source_ok")
        let fleet = Alert(labels: [(key: "source", value: stale.label("source") ?? "")])
        let refused = "\(stale.value)x30"
        let fires = Group(name: "fires: two kiosks of three refuse it, for over 15 minutes",
                          series: [Series(stale, refused), Series(stale, refused, on: "kiosk-2"), Series(stale, "1x30", on: "kiosk-3")],
                          evaluations: [Evaluation("14m"), Evaluation("16m", [fleet])])
        let quiet = Group(name: "quiet: one kiosk of three",
                          series: [Series(stale, refused), Series(stale, "1x30", on: "kiosk-2"), Series(stale, "1x30", on: "kiosk-3")],
                          evaluations: [Evaluation("16m")])
        return AlertTest(alert: "PrefetchSourceBrokenFleetWide", groups: [fires, quiet])
    }

    // MARK: promtool's test files

    /// One sample of a metrics file: `name{key="value",…} value`, as the file has it.
    struct Sample {
        let name: String
        let labels: [(key: String, value: String)]
        let value: String

        init(name: String, labels: [(key: String, value: String)], value: String) {
            self.name = name
            self.labels = labels
            self.value = value
        }

        /// A sample line of the text format (no timestamp); nil for anything else.
        init?(line: String) {
            let characters = Array(line)
            var i = 0, name = "", labels: [(key: String, value: String)] = []
            while i < characters.count && characters[i] != "{" && characters[i] != " " { name.append(characters[i]); i += 1 }
            if i < characters.count && characters[i] == "{" {
                i += 1
                while i < characters.count && characters[i] != "}" {
                    var key = "", value = ""
                    while i < characters.count && characters[i] != "=" { key.append(characters[i]); i += 1 }
                    guard i + 1 < characters.count && characters[i + 1] == "\"" else { return nil }
                    i += 2
                    while i < characters.count && characters[i] != "\"" {
                        var character = characters[i]
                        if character == "\\" && i + 1 < characters.count {  // \\, \" or \n
                            i += 1
                            character = characters[i] == "n" ? "\n" : characters[i]
                        }
                        value.append(character)
                        i += 1
                    }
                    guard i < characters.count else { return nil }
                    labels.append((key: key, value: value))
                    i += 1
                    if i < characters.count && characters[i] == "," { i += 1 }
                }
                i += 1
            }
            guard !name.isEmpty && i < characters.count && characters[i] == " " else { return nil }
            let value = String(characters[(i + 1)...])
            guard Double(value) != nil else { return nil }
            self.init(name: name, labels: labels, value: value)
        }

        var number: Double? { Double(value) }
        func label(_ key: String) -> String? { labels.first { $0.key == key }?.value }
    }

    /// A metrics file the binary wrote, read whole.
    struct MetricsFile {
        let path: String, text: String, all: [Sample]

        init(_ path: String) throws {
            let content = try String(contentsOfFile: path, encoding: .utf8)
            var found: [Sample] = []
            for line in content.split(separator: "\n") where !line.hasPrefix("#") {
                guard let sample = Sample(line: String(line)) else { throw AlertRulesError(message: "\(path): not a sample line: \(line)") }
                found.append(sample)
            }
            self.path = path
            text = content
            all = found
        }

        /// The samples of `name` whose labels include `matching`.
        func samples(_ name: String, _ matching: [String: String] = [:]) -> [Sample] {
            all.filter { sample in sample.name == name && matching.allSatisfy { sample.label($0.key) == $0.value } }
        }

        /// The one sample of `name` with `matching`; an error naming the file otherwise.
        func one(_ name: String, _ matching: [String: String] = [:]) throws -> Sample {
            let found = samples(name, matching)
            guard found.count == 1 else { throw AlertRulesError(message: "\(path): \(found.count) samples of \(name) \(matching), not one:\n\(text)") }
            return found[0]
        }
    }

    /// An input series: a sample's name and labels, the target labels a scrape adds, and
    /// promtool's values over time (`1x120`: 121 samples of 1; `0+60x1440`: rising by 60).
    struct Series {
        let sample: Sample, instance: String, values: String

        init(_ sample: Sample, _ values: String, on instance: String = AlertRulesTests.kiosk) {
            self.sample = sample
            self.values = values
            self.instance = instance
        }

        var labels: [(key: String, value: String)] { sample.labels + [(key: "instance", value: instance), (key: "job", value: AlertRulesTests.job)] }
        var yaml: String {
            "  - series: \(AlertRulesTests.yaml(AlertRulesTests.selector(sample.name, labels)))\n    values: \(AlertRulesTests.yaml(values))\n"
        }
    }

    /// An alert promtool must see: its labels (without `alertname`) and annotations.
    struct Alert {
        let labels: [(key: String, value: String)]
        let annotations: [(key: String, value: String)]

        init(labels: [(key: String, value: String)], annotations: [(key: String, value: String)] = []) {
            self.labels = labels
            self.annotations = annotations
        }

        /// The alert of one input series: its labels.
        init(_ series: Series, annotations: [(key: String, value: String)] = []) {
            self.init(labels: series.labels, annotations: annotations)
        }
    }

    /// A promtool test group: input series, and the alerts expected at each evaluation time.
    struct Group {
        let name: String
        var interval = "1m"
        let series: [Series]
        let evaluations: [Evaluation]
    }

    /// promtool's `eval_time` and the alerts firing then (none: quiet).
    struct Evaluation {
        let at: String
        let alerts: [Alert]

        init(_ at: String, _ alerts: [Alert] = []) {
            self.at = at
            self.alerts = alerts
        }
    }

    struct AlertTest {
        let alert: String
        let groups: [Group]
    }

    static func header(_ what: String) -> String {
        "# \(what): promtool's unit test, on series read from metrics files prefetch wrote (AlertRulesTests)\n"
            + "rule_files: [\(yaml(rules))]\nevaluation_interval: 1m\ntests:\n"
    }

    static func testFile(_ test: AlertTest) -> String {
        var out = header(test.alert)
        for group in test.groups {
            out += "- name: \(yaml(group.name))\n  interval: \(group.interval)\n  input_series:\n" + group.series.map(\.yaml).joined()
            out += "  alert_rule_test:\n"
            for evaluation in group.evaluations {
                out += "  - eval_time: \(evaluation.at)\n    alertname: \(test.alert)\n    exp_alerts:" + (evaluation.alerts.isEmpty ? " []\n" : "\n")
                for alert in evaluation.alerts {
                    out += "    - exp_labels: \(yaml(alert.labels))\n"
                    if !alert.annotations.isEmpty { out += "      exp_annotations: \(yaml(alert.annotations))\n" }
                }
            }
        }
        return out
    }

    /// `name{key="value",…}`, quoted as PromQL and the text format quote.
    static func selector(_ name: String, _ labels: [(key: String, value: String)]) -> String {
        name + "{" + labels.map { "\($0.key)=\"\(escaped($0.value))\"" }.joined(separator: ",") + "}"
    }

    /// A YAML double-quoted scalar.
    static func yaml(_ text: String) -> String { "\"" + escaped(text) + "\"" }

    /// A YAML flow mapping of strings.
    static func yaml(_ pairs: [(key: String, value: String)]) -> String {
        "{" + pairs.map { yaml($0.key) + ": " + yaml($0.value) }.joined(separator: ", ") + "}"
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// The `- alert:` (or `- record:`) names of a rules file, in order.
    static func names(_ rules: String, _ kind: String) -> [String] {
        rules.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            return words.count >= 3 && words[0] == "-" && words[1] == "\(kind):" ? String(words[2]) : nil
        }
    }

    /// promtool (Debian's `prometheus`, which scripts/test installs): missing, the test fails.
    static func promtool(_ arguments: [String], in folder: URL? = nil) throws -> RunResult {
        guard FileManager.default.isExecutableFile(atPath: promtoolPath) else {
            throw AlertRulesError(message: "\(promtoolPath) is missing: install Debian's prometheus (scripts/setup prometheus, as scripts/test does)")
        }
        return try BinaryRunner.run(arguments, in: folder, executable: URL(fileURLWithPath: promtoolPath))
    }
}

struct AlertRulesError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
