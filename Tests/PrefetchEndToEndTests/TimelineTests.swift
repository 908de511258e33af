import Foundation
import Testing
import TestSupport

/// `prefetch plan --timeline` (SPEC §2): golden files over a fixed `--at`, with feeds in
/// several zones, a machine in another, and both DST changes of a year; the width of a
/// terminal; and the options' usage errors.
@Suite struct TimelineTests {
    static let signage = """
    name: signage
    timezone: America/New_York
    window: "06:00-08:00"
    days: [mon, tue, wed, thu, fri]
    jitter: 30m
    resources:
      - url: https://media.example.com/signage/menu.png
        size: 4MiB
    """

    static let howe = """
    name: howe
    timezone: Australia/Lord_Howe
    schedule: "0 1 * * *"
    window: "00:30-03:30"
    resources:
      - url: https://media.example.com/howe/tide-table.pdf
        size: 1MiB
    """

    /// PlanCommandTests' fixture (every state of a plan, with a partial) and two more feeds.
    static func fixture() throws -> TemporaryFolder {
        let dir = try PlanCommandTests.fixture()
        try dir.write("feeds/signage.yaml", signage)
        try dir.write("feeds/howe.yaml", howe)
        return dir
    }

    static func timeline(_ dir: TemporaryFolder, at: String, machineZone: String, _ extra: [String] = [],
                         assume: String = "network=unmetered,power=ac,free=50GiB") throws -> RunResult {
        try BinaryRunner.run(["plan", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null", "--at", at,
                              "--assume", assume, "--timeline"] + extra,
                             in: dir.url, environment: ["PREFETCH_MACHINE_ID": "kiosk-17", "TZ": machineZone])
    }

    @Test func feedsInSeveralZonesOnAMachineInAnother() throws {
        let result = try Self.timeline(try Self.fixture(), at: "2026-11-30T03:00:00+01:00", machineZone: "Europe/London")
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("timeline in Europe/London, this machine's zone\nMon 2026-11-30 00:00 to Wed 2026-12-02 00:00 · 1 column = 34m\n"))
        #expect(!result.stdout.contains("\u{1b}["), "no colour when stdout is not a terminal")
        #expect(result.stdout.split(separator: "\n").allSatisfy { $0.count <= 100 }, "100 columns when not a terminal")
        #expect(result.stdout.split(separator: "\n").contains { $0.count == 100 }, "the chart lines take the 100 columns")
        try PlanCommandTests.expectGolden(result.stdout, "timeline-zones.txt")
    }

    /// Europe's spring forward: the day has 23 hours, 02:00 never happens (the ruler skips
    /// it), and a 02:30 release fires at the end of the gap.
    @Test func aDayOfTwentyThreeHours() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby.yaml", "name: lobby\ntimezone: Europe/Berlin\nschedule: \"30 2 * * *\"\nwindow: \"01:00-04:00\"\nresources:\n  - url: https://cdn.example.com/a.mp4\n    size: 40MiB\n")
        let result = try Self.timeline(dir, at: "2026-03-29T01:30:00+01:00", machineZone: "Europe/Berlin", ["--days", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Sun 2026-03-29 00:00 to Mon 2026-03-30 00:00 · 1 column = 16m"), "\(result.stdout)")
        try PlanCommandTests.expectGolden(result.stdout, "timeline-spring.txt")
    }

    /// Europe's fall back: 25 hours, 02:00–03:00 twice, one release at the first 02:30; a
    /// machine on battery on a metered link holds both feeds back.
    @Test func aDayOfTwentyFiveHoursHeldBack() throws {
        let dir = try TemporaryFolder()
        try dir.write("feeds/lobby.yaml", "name: lobby\ntimezone: Europe/Berlin\nschedule: \"30 2 * * *\"\nwindow: \"01:00-04:00\"\nconditions: { network: unmetered, power: ac }\nresources:\n  - url: https://cdn.example.com/a.mp4\n    size: 40MiB\n")
        try dir.write("feeds/signage.yaml", Self.signage)
        let result = try Self.timeline(dir, at: "2026-10-25T02:45:00+02:00", machineZone: "Europe/Berlin", ["--days", "1"],
                                       assume: "network=metered,power=battery,battery=20")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("1 column = 18m") && result.stdout.contains("held back: network metered, on battery"), "\(result.stdout)")
        try PlanCommandTests.expectGolden(result.stdout, "timeline-fall.txt")
    }

    @Test func twoWeeks() throws {
        let result = try Self.timeline(try Self.fixture(), at: "2026-11-30T03:00:00+01:00", machineZone: "UTC", ["--days", "14"])
        #expect(result.status == 0, "\(result.stderr)")
        try PlanCommandTests.expectGolden(result.stdout, "timeline-14d.txt")
    }

    /// On a terminal the picture takes its width, and colour (`script` gives the binary a
    /// pseudo-terminal of 72 columns).
    @Test func aTerminalsWidthAndColour() throws {
        let dir = try Self.fixture()
        let binary = BinaryRunner.executable.path
        let command = "stty cols 72; TZ=UTC PREFETCH_MACHINE_ID=kiosk-17 \(binary) plan --feeds feeds --cache cache --config /dev/null"
            + " --at 2026-11-30T03:00:00+01:00 --assume network=unmetered,power=ac,free=50GiB --timeline"
        let result = try BinaryRunner.run(["-qec", command, "/dev/null"], in: dir.url, executable: URL(fileURLWithPath: "/usr/bin/script"))
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("\u{1b}[32m█"), "windows in green on a terminal")
        let visible = result.stdout.replacingOccurrences(of: "\u{1b}\\[[0-9;]*m", with: "", options: .regularExpression)
        // The pseudo-terminal ends lines with CR LF (one Character in Swift).
        let lines = visible.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n").map(String.init)
        let charts = lines.filter { $0.hasPrefix("lobby ") || $0.hasPrefix("signage ") || $0.hasPrefix("howe ") }
        #expect(charts.count == 3, "\(visible)")
        #expect(charts.allSatisfy { $0.count == 72 }, "\(charts.map(\.count)): \(visible)")
        #expect(lines.allSatisfy { $0.count <= 72 }, "\(visible)")
    }

    @Test func itsOptionsUsageErrors() throws {
        let dir = try Self.fixture()
        for (extra, message) in [(["--json"], "--timeline and --json cannot be used together"),
                                 (["--days", "0"], "--days must be a whole number from 1 to 14, not '0'"),
                                 (["--days", "15"], "--days must be a whole number from 1 to 14, not '15'"),
                                 (["--days", "+3"], "--days must be a whole number from 1 to 14, not '+3'"),
                                 (["--days", "two"], "--days must be a whole number from 1 to 14, not 'two'")] {
            let result = try Self.timeline(dir, at: "2026-11-30T03:00:00+01:00", machineZone: "UTC", extra)
            #expect(result.status == 2 && result.stdout.isEmpty, "\(extra)")
            #expect(result.stderr.hasPrefix("prefetch: error: \(message)\nUsage: prefetch plan "), "\(extra): \(result.stderr)")
        }
        let alone = try BinaryRunner.run(["plan", "--days", "3", "--config", "/dev/null"], in: dir.url)
        #expect(alone.status == 2 && alone.stderr.hasPrefix("prefetch: error: --days is for --timeline\n"), "\(alone.stderr)")
    }
}
