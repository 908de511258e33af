import Testing
@testable import PrefetchCore

/// Bad manifests → the exact diagnostics, `file:line:column: severity: message`.
@Suite struct ManifestErrorTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let yaml: String
        let expected: [String]
        var testDescription: String { expected.first ?? "(no diagnostics)" }
    }

    static func decode(_ yaml: String, file: String = "t.yaml", config: Config = Config()) -> (Feed?, [String]) {
        let (feed, diagnostics) = FeedDecoder(config: config).decode(Array(yaml.utf8), file: file)
        return (feed, diagnostics.map(\.headline))
    }

    static let ok = "resources:\n  - url: https://example.com/a.bin\n"

    static let cases: [Case] = [
        // YAML syntax
        Case(yaml: "schedule: */15 * * * *\n" + ok,
             expected: [#"t.yaml:1:11: error: a plain value cannot start with '*' (YAML reads it as an alias); quote it, as in schedule: "*/15 * * * *""#]),
        Case(yaml: "schedule: @daily\n" + ok,
             expected: [#"t.yaml:1:11: error: a plain value cannot start with '@'; quote the value, as in schedule: "@daily""#]),
        Case(yaml: "name: a\nname: b\n" + ok,
             expected: ["t.yaml:2:1: error: duplicate key 'name' (first at line 1)"]),
        Case(yaml: "name: [a\n", expected: ["t.yaml:1:7: error: did not find expected ',' or ']' before the end of the file (while parsing a flow sequence that starts here)"]),
        Case(yaml: "name: t\nresources:\n  - {url: http://e.com/a, path: b\n",
             expected: ["t.yaml:3:5: error: did not find expected ',' or '}' before the end of the file (while parsing a flow mapping that starts here)"]),
        Case(yaml: "name: \"t\nresources: []", expected: ["t.yaml:1:7: error: the file ends before this is closed (while scanning a quoted scalar that starts here)"]),
        Case(yaml: "---\nname: a\n---\nname: b\n", expected: ["t.yaml:3:1: error: a second YAML document starts here; one feed per file"]),
        Case(yaml: "", expected: ["t.yaml:1:1: error: the manifest is empty; a feed needs at least 'resources'"]),
        Case(yaml: "- a\n- b\n", expected: ["t.yaml:1:1: error: a feed must be a mapping of keys to values, found a list"]),
        Case(yaml: "name: a\n", expected: ["t.yaml:1:1: error: a feed needs 'resources': a list of things to fetch"]),
        Case(yaml: "schedule: *nope\n" + ok, expected: ["t.yaml:1:11: error: unknown alias '*nope'; if this is a cron expression, quote it"]),
        // Unknown keys, with hints
        Case(yaml: "windw: \"01:00-05:00\"\n" + ok, expected: ["t.yaml:1:1: error: unknown key 'windw' in a feed (did you mean 'window'?)"]),
        Case(yaml: "conditions: { netwrok: any }\n" + ok,
             expected: ["t.yaml:1:15: error: unknown key 'netwrok' in conditions (did you mean 'network'?)"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    sha: abc\n",
             expected: ["t.yaml:3:5: error: unknown key 'sha' in a resource"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    pth: b\n",
             expected: ["t.yaml:3:5: error: unknown key 'pth' in a resource (did you mean 'path'?)"]),
        // Names
        Case(yaml: "name: Lobby\n" + ok, expected: ["t.yaml:1:7: error: a feed name starts with a lowercase letter or digit"]),
        Case(yaml: "name: lob by\n" + ok, expected: ["t.yaml:1:10: error: a feed name has only lowercase letters, digits, '.', '_' and '-'"]),
        // Values with exact columns inside the scalar
        Case(yaml: "schedule: \"30 2 * * 9\"\n" + ok,
             expected: ["t.yaml:1:21: error: 9 is out of range for the day-of-week field (0–7)"]),
        Case(yaml: "schedule: '0 25 * * *'\n" + ok,
             expected: ["t.yaml:1:14: error: 25 is out of range for the hour field (0–23)"]),
        Case(yaml: "schedule: \"@reboot\"\n" + ok,
             expected: ["t.yaml:1:12: error: @reboot is not supported: prefetch schedules releases in time"]),
        Case(yaml: "timezone: Europe/Berln\n" + ok,
             expected: ["t.yaml:1:11: error: unknown time zone 'Europe/Berln' (did you mean 'Europe/Berlin'?)"]),
        Case(yaml: "window: [\"01:00-05:00\", \"22:00-24:30\"]\n" + ok,
             expected: ["t.yaml:1:32: error: hour 24 is out of range (00–23)"]),
        Case(yaml: "window: []\n" + ok, expected: ["t.yaml:1:9: error: window must list at least one window, or be left out"]),
        Case(yaml: "days: [mon, tuesday, mon, xyz]\n" + ok,
             expected: ["t.yaml:1:22: error: 'mon' is listed twice",
                        "t.yaml:1:27: error: 'xyz' is not a day; use mon, tue, wed, thu, fri, sat or sun"]),
        Case(yaml: "days: mon\n" + ok, expected: ["t.yaml:1:7: error: days must be a list, found a string"]),
        Case(yaml: "jitter: 20\n" + ok, expected: ["t.yaml:1:11: error: duration '20' needs a unit: s, m, h or d (as in 20s)"]),
        Case(yaml: "refresh: 1m1h\n" + ok, expected: ["t.yaml:1:13: error: duration units must go from large to small, each once (as in 1h30m)"]),
        Case(yaml: "prune: yes\n" + ok, expected: ["t.yaml:1:8: error: prune must be true or false, found 'yes'"]),
        Case(yaml: "prune: \"true\"\n" + ok, expected: ["t.yaml:1:9: error: prune must be true or false without quotes"]),
        Case(yaml: "consistency: releases\n" + ok, expected: ["t.yaml:1:14: error: consistency must be file or release, found 'releases' (did you mean 'release'?)"]),
        Case(yaml: "consistency: [release]\n" + ok, expected: ["t.yaml:1:14: error: consistency must be a value, found a list"]),
        Case(yaml: "conditions:\n  network: metred\n  power: battery\n  min_battery: 140\n  min_free_space: 2 GiB\n  metered_budget: 200MiB/s\n" + ok,
             expected: ["t.yaml:2:12: error: network must be any or unmetered, found 'metred' (did you mean 'unmetered'?)",
                        "t.yaml:3:10: error: power must be any or ac, found 'battery'",
                        "t.yaml:4:16: error: min_battery must be from 0 to 100, found 140",
                        "t.yaml:5:20: error: a size has no spaces; write it as 2GiB",
                        "t.yaml:6:26: error: expected '/day' after the size, found '/s'"]),
        Case(yaml: "retry: { attempts: 0, backoff: 10m, max_backoff: 1m }\n" + ok,
             expected: ["t.yaml:1:20: error: attempts must be from 1 to 1000, found 0",
                        "t.yaml:1:50: error: max_backoff 1m is shorter than backoff 10m"]),
        Case(yaml: "limits: { concurrency: many, max_rate: 20MiB }\n" + ok,
             expected: ["t.yaml:1:24: error: concurrency must be a whole number, found 'many'",
                        "t.yaml:1:45: error: expected SIZE/s, as in 20MiB/s"]),
        Case(yaml: "conditions: [unmetered]\n" + ok,
             expected: ["t.yaml:1:13: error: conditions must be a mapping of keys to values, found a list"]),
        // Resources
        Case(yaml: "resources: {}\n", expected: ["t.yaml:1:12: error: resources must be a list, found a mapping"]),
        Case(yaml: "resources:\n  - path: a\n", expected: ["t.yaml:2:5: error: a resource needs a 'url'"]),
        Case(yaml: "resources:\n  - url: ftp://e.com/a\n", expected: ["t.yaml:2:10: error: only http and https URLs are fetched, not 'ftp'"]),
        Case(yaml: "resources:\n  - url: file:///etc/passwd\n", expected: ["t.yaml:2:10: error: only http and https URLs are fetched, not 'file'"]),
        Case(yaml: "resources:\n  - url: \"https://e.com/a b\"\n",
             expected: ["t.yaml:2:26: error: a URL cannot contain spaces; write them as %20"]),
        Case(yaml: "resources:\n  - url: https://user:pw@e.com/a\n",
             expected: ["t.yaml:2:18: error: credentials in a URL would be shown in logs; send them as a header with ${VAR}"]),
        Case(yaml: "resources:\n  - url: https://e.com/dir/\n",
             expected: ["t.yaml:2:10: error: the URL ends in '/', so the resource needs a 'path'"]),
        Case(yaml: "resources:\n  - url: https://e.com/%2e%2e\n",
             expected: ["t.yaml:2:10: error: the URL's last segment '..' is not a safe file name (a path cannot contain '..': it would leave the feed's folder); add a 'path'"]),
        Case(yaml: "resources:\n\t- url: https://e.com/a\n", expected: ["t.yaml:2:1: error: tabs cannot indent YAML; use spaces"]),
        Case(yaml: "window: \"+1:00-05:00\"\n" + ok, expected: ["t.yaml:1:10: error: expected a time as HH:MM (24-hour clock)"]),
        Case(yaml: "schedule: \"*/+5 * * * *\"\n" + ok,
             expected: ["t.yaml:1:14: error: step after '/' must be a whole number above 0 in the minute field"]),
        Case(yaml: "resources:\n  - url: ftp://e.com/a\n    path: ../a\n    size: 1x\n",
             expected: ["t.yaml:2:10: error: only http and https URLs are fetched, not 'ftp'",
                        "t.yaml:3:11: error: a path cannot contain '..': it would leave the feed's folder",
                        "t.yaml:4:12: error: unknown size unit 'x'; use B, KiB, MiB, GiB, TiB, PiB or kB, MB, GB, TB, PB"]),
        Case(yaml: "resources:\n  - url: https://e.com/a%2Fb\n",
             expected: ["t.yaml:2:10: error: the URL's last segment 'a/b' holds an encoded '/'; add a 'path'"]),
        Case(yaml: "days: [mon]\njitter: 30h\n" + ok,
             expected: ["t.yaml:2:9: warning: jitter 1d6h is not shorter than the window 00:00-00:00; offsets are reduced modulo the window's length"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    path: /etc/passwd\n",
             expected: ["t.yaml:3:11: error: a path must be relative to the feed's folder, not absolute"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    path: x/../../etc\n",
             expected: ["t.yaml:3:13: error: a path cannot contain '..': it would leave the feed's folder"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    path: x//y\n",
             expected: ["t.yaml:3:13: error: a path cannot contain an empty segment ('//')"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    path: ./y\n",
             expected: ["t.yaml:3:11: error: a path cannot contain '.' segments"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    path: \"a\\tb\"\n",
             expected: ["t.yaml:3:11: error: a path cannot contain control characters"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n  - url: https://f.com/a\n",
             expected: ["t.yaml:3:10: error: path 'a' is already used by the resource at line 2"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n  - url: https://e.com/b\n    path: a/b\n",
             expected: ["t.yaml:4:11: error: path 'a/b' would put a folder where the resource at line 2 keeps its file 'a'"]),
        Case(yaml: "resources:\n  - url: https://e.com/b\n    path: a/b\n  - url: https://e.com/a\n",
             expected: ["t.yaml:4:10: error: path 'a' is also a folder of the resource at line 2"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    sha256: 12ab\n",
             expected: ["t.yaml:3:13: error: sha256 must be 64 hexadecimal digits, found 4 characters"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    size: 2GiB\n    max_size: 1GiB\n",
             expected: ["t.yaml:3:11: error: size 2147483648 is larger than max_size 1073741824"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    size: 17GiB\n",
             expected: ["t.yaml:3:11: error: size 18253611008 is larger than the global max_size 16GiB (config)"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    max_size: 20GiB\n",
             expected: ["t.yaml:3:15: warning: max_size 20GiB is above the global max_size 16GiB; the global cap applies"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    not_before: 2026-12-02\n    expires: 2026-12-01T12:00:00Z\n",
             expected: ["t.yaml:4:14: warning: expires is not after not_before: this resource is never fetched (it plans expired)"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    not_before: 2026-12-01T12:00:00Z\n    expires: 2026-12-01T12:00:00Z\n",
             expected: ["t.yaml:4:14: warning: expires is not after not_before: this resource is never fetched (it plans expired)"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    not_before: 2026-12-01T00:00\n",
             expected: ["t.yaml:3:17: error: expected an RFC 3339 time such as 2026-12-01T00:00:00Z, or a date such as 2026-12-01"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    priority: urgent\n",
             expected: ["t.yaml:3:15: error: priority must be high, normal or low, found 'urgent'"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    headers: { If-Range: x, X-Token: \"${1TOKEN}\", \"Bad Name\": y }\n",
             expected: ["t.yaml:3:16: error: prefetch sets the 'If-Range' header itself (for resume and revalidation)",
                        "t.yaml:3:41: error: '${1TOKEN}' is not a valid variable name (letters, digits and _)",
                        "t.yaml:3:55: error: 'Bad Name' is not a valid header name"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    headers: [a]\n",
             expected: ["t.yaml:3:14: error: headers must be a mapping of header names to values, found a list"]),
        Case(yaml: "resources:\n  - url: https://e.com/a\n    headers: { X-A: 1, x-a: 2 }\n",
             expected: ["t.yaml:3:24: error: header 'x-a' is given twice (first at line 3)"]),
        Case(yaml: "resources: []\n", expected: ["t.yaml:1:12: warning: this feed lists no resources"]),
        Case(yaml: "window: \"01:00-02:00\"\njitter: 1h\n" + ok,
             expected: ["t.yaml:2:9: warning: jitter 1h is not shorter than the window 01:00-02:00; offsets are reduced modulo the window's length"]),
    ]

    @Test(arguments: cases)
    func reportsExactly(_ example: Case) {
        let (_, diagnostics) = Self.decode(example.yaml)
        #expect(diagnostics == example.expected)
    }

    @Test func errorsMeanNoFeed() {
        let (feed, diagnostics) = Self.decode("name: Bad\n" + Self.ok)
        #expect(feed == nil)
        #expect(diagnostics.count == 1)
    }

    @Test func warningsStillGiveAFeed() {
        let (feed, diagnostics) = Self.decode("resources: []\n")
        #expect(feed != nil)
        #expect(diagnostics.count == 1)
    }

    @Test func everyProblemInAFileIsReported() {
        let yaml = """
        name: bad_
        schedul: "0 0 * * *"
        timezone: Mars/Olympus
        window: "1-2"
        resources:
          - url: gopher://x/y
          - url: https://x/y
            size: lots
        """
        let (_, diagnostics) = Self.decode(yaml)
        #expect(diagnostics.map { $0.prefix(11) } == ["t.yaml:2:1:", "t.yaml:3:11", "t.yaml:4:10", "t.yaml:6:10", "t.yaml:8:11"])
    }

    @Test func fileStemIsTheDefaultName() {
        let (feed, _) = Self.decode(Self.ok, file: "feeds/lobby-screens.yml")
        #expect(feed?.name == "lobby-screens")
        let (bad, diagnostics) = Self.decode(Self.ok, file: "feeds/Lobby Screens.yaml")
        #expect(bad == nil)
        #expect(diagnostics == ["feeds/Lobby Screens.yaml:1:1: error: the file name 'Lobby Screens' is not a valid feed name ([a-z0-9][a-z0-9._-]{0,63}); add 'name:'"])
    }

    @Test func aliasesRepeatTheirAnchor() throws {
        let yaml = """
        resources:
          - url: https://e.com/a
            headers: &auth { Authorization: "Bearer ${T}" }
          - url: https://e.com/b
            headers: *auth
        """
        let (feed, diagnostics) = Self.decode(yaml)
        #expect(diagnostics.isEmpty)
        let resources = try #require(feed?.resources)
        #expect(resources[1].headers == resources[0].headers)
    }
}
