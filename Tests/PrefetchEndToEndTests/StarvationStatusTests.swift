import Foundation
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6, "Starvation is visible", through the real binary: runs that find the link
/// metered move nothing, and `status` counts the release instants passed since, with the
/// reason seen last; a run that gets through ends the streak.
@Suite(.serialized) struct StarvationStatusTests {
    @Test func statusCountsTheWindowsMissedAndWhy() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(FaultTests.bytes(2000, seed: 71), etag: "\"a\""))
        try s.feed("schedule: \"0 * * * *\"\ntimezone: UTC\nconditions: { network: unmetered }\nresources:\n  - url: ORIGIN/a.bin\n")
        try s.dir.write("config.yaml", "starved_after: 3\n")
        let config = s.dir.url.appendingPathComponent("config.yaml").path
        for offset in ["+0s", "+1h", "+2h", "+3h"] {
            let run = try s.run(["run", "--assume", "network=metered"], environment: ["PREFETCH_CLOCK_OFFSET": offset], config: config)
            #expect(run.status == 0, "\(run.stderr)")
        }
        #expect(s.origin.requests.isEmpty, "nothing moved over the metered link")
        let seen = try #require(s.state()?.feeds["t"]?.firstSeen, "the first pass recorded when it saw the feed")
        // The release instants (every hour) passed since: the windows of a feed without one.
        let now = Date().timeIntervalSince1970 + 3.5 * 3600
        let expected = Int(floor(now / 3600)) - Int(floor(Double(seen.seconds) / 3600))
        let json = try s.run(["status", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+3h30m"], config: config)
            .events.first { $0["type"] as? String == "feed" }
        #expect(json?["missed_windows"] as? Int == expected && json?["starved"] as? Bool == true, "\(json ?? [:])")
        #expect(json?["missed_reason"] as? String == "network metered", "\(json ?? [:])")
        let text = try s.run(["status"], environment: ["PREFETCH_CLOCK_OFFSET": "+3h30m"], config: config)
        #expect(text.stdout.contains("\(expected) windows missed: network metered (starved: 3 or more in a row)"), "\(text.stdout)")
        // Hours later with no run at all: the reason is that nothing ran.
        let later = try s.run(["status", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+6h30m"], config: config)
            .events.first { $0["type"] as? String == "feed" }
        #expect(later?["missed_windows"] as? Int == expected + 3 && later?["missed_reason"] as? String == "prefetch did not run while it was open",
                "\(later ?? [:])")
        // An unmetered link: the release arrives and the streak ends.
        let through = try s.run(["run", "--assume", "network=unmetered"], environment: ["PREFETCH_CLOCK_OFFSET": "+6h30m"], config: config)
        #expect(through.status == 0, "\(through.stderr)")
        let after = try s.run(["status", "--json"], environment: ["PREFETCH_CLOCK_OFFSET": "+6h40m"], config: config)
            .events.first { $0["type"] as? String == "feed" }
        #expect(after?["missed_windows"] as? Int == 0 && after?["starved"] as? Bool == false, "\(after ?? [:])")
    }

    /// `starved_after` is checked like every other key.
    @Test func starvedAfterMustBeAPositiveWholeNumber() throws {
        let s = try FaultHarness()
        try s.feed("resources:\n  - url: ORIGIN/a.bin\n")
        try s.dir.write("config.yaml", "starved_after: 0\n")
        let result = try s.run(["status"], config: s.dir.url.appendingPathComponent("config.yaml").path)
        #expect(result.status == 2 && result.stderr.contains("config.yaml:1:16: error: starved_after must be from 1 to 100000, found 0"), "\(result.stderr)")
    }
}
