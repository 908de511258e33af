import Foundation
import Testing
@testable import PrefetchCore

/// Good manifests → typed values, with SPEC §5's defaults.
@Suite struct FeedDecoderTests {
    static func feed(_ yaml: String, file: String = "feeds/f.yaml") throws -> Feed {
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: file)
        #expect(diagnostics.filter { $0.severity == .error }.isEmpty, "\(diagnostics.map(\.headline))")
        return try #require(feed)
    }

    @Test func defaults() throws {
        let feed = try Self.feed("resources:\n  - url: https://cdn.example.com/loop/intro%20v2.mp4?sig=abc\n")
        #expect(feed.name == "f")
        #expect(feed.schedule == nil)
        #expect(feed.windows.isEmpty)
        #expect(feed.days == nil)
        #expect(feed.jitter == .zero)
        #expect(feed.conditions == Conditions())
        #expect(feed.conditions.network == .any && feed.conditions.power == .any && feed.conditions.minBattery == 0)
        #expect(feed.refresh == .hours(1))  // neither schedule nor window: refresh defaults to 1h
        #expect(feed.retry == RetryPolicy())
        #expect(feed.retry.attempts == 5 && feed.retry.backoff.seconds == 30 && feed.retry.maxBackoff.seconds == 3600)
        #expect(feed.limits.concurrency == 4 && feed.limits.maxRate == nil && feed.limits.maxRedirects == nil)
        #expect(feed.prune == false)
        #expect(feed.timeZoneName == TimeZone.current.identifier)
        let resource = try #require(feed.resources.first)
        #expect(resource.path == "intro v2.mp4")  // last segment, percent-decoded, no query
        #expect(resource.priority == .normal)
        #expect(resource.url.redacted == "https://cdn.example.com/loop/intro%20v2.mp4?…")
        #expect(resource.location == SourceLocation(line: 2, column: 5))
    }

    @Test func refreshDefaultsToZeroWithAScheduleOrWindow() throws {
        #expect(try Self.feed("schedule: \"@daily\"\nresources: []\n").refresh == .zero)
        #expect(try Self.feed("window: \"01:00-02:00\"\nresources: []\n").refresh == .zero)
    }

    @Test func everyFieldOfTheSpecExample() throws {
        let yaml = """
        name: lobby-screens            # comment
        schedule: "30 2 * * *"
        timezone: Europe/Berlin
        window: ["01:00-05:00", "22:00-23:30"]
        days: [mon, tue, wed, thu, fri, sat, sun]
        jitter: 20m
        conditions:
          network: unmetered
          power: ac
          min_battery: 40
          min_free_space: 2GiB
        refresh: 24h
        retry: { attempts: 7, backoff: 1m, max_backoff: 1h }
        limits: { concurrency: 2, max_rate: 20MiB/s, connect_timeout: 10s, stall_timeout: 2m, max_redirects: 3 }
        prune: true
        resources:
          - url: https://cdn.example.com/loop/intro.mp4
            path: loop/intro.mp4
            sha256: 2C26B46B68FFC68FF99B453C1D30413413422D706483BFA0F98A5E886266E7AE
            size: 734003200
            max_size: 1GiB
            not_before: 2026-12-01T00:00:00Z
            expires: 2026-12-31
            priority: high
            headers: { Authorization: "Bearer ${LOBBY_TOKEN}" }
        """
        let feed = try Self.feed(yaml)
        #expect(feed.name == "lobby-screens")
        #expect(feed.schedule?.source == "30 2 * * *")
        #expect(feed.timeZoneName == "Europe/Berlin")
        #expect(feed.windows == [TimeWindow(start: 60, end: 300), TimeWindow(start: 1320, end: 1410)])
        #expect(feed.days == Set(Weekday.allCases))
        #expect(feed.jitter.seconds == 1200)
        #expect(feed.conditions.network == .unmetered && feed.conditions.power == .ac)
        #expect(feed.conditions.minBattery == 40 && feed.conditions.minFreeSpace?.bytes == 2 << 30)
        #expect(feed.refresh.seconds == 86_400)
        #expect(feed.retry.attempts == 7 && feed.retry.backoff.seconds == 60)
        #expect(feed.limits.concurrency == 2 && feed.limits.maxRate?.bytes == 20 << 20)
        #expect(feed.limits.connectTimeout?.seconds == 10 && feed.limits.stallTimeout?.seconds == 120 && feed.limits.maxRedirects == 3)
        #expect(feed.prune)
        let resource = try #require(feed.resources.first)
        #expect(resource.path == "loop/intro.mp4")
        #expect(resource.sha256 == "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae")
        #expect(resource.size == 734_003_200 && resource.maxSize == 1 << 30)
        #expect(resource.notBefore == 1_796_083_200)          // 2026-12-01T00:00:00Z
        #expect(resource.expires == 1_798_671_600)            // 2026-12-31 00:00 in Berlin = 2026-12-30T23:00:00Z
        #expect(resource.priority == .high)
        #expect(resource.headers == [HeaderField(name: "Authorization", value: HeaderTemplate(parts: [.literal("Bearer "), .variable("LOBBY_TOKEN")]))])
    }

    @Test func headerValuesStayUnresolved() throws {
        let feed = try Self.feed("resources:\n  - url: https://e.com/a\n    headers: { X-Key: \"${SECRET}\" }\n")
        let header = try #require(feed.resources.first?.headers.first)
        #expect(header.value.variables == ["SECRET"])
        #expect(header.value.display == "${SECRET}")
        #expect(throws: MissingVariable(name: "SECRET")) { try header.value.resolve([:]) }
        #expect(try header.value.resolve(["SECRET": "s3"]) == "s3")
    }

    @Test func maxBackoffFollowsALongBackoff() throws {
        let feed = try Self.feed("retry: { backoff: 2h }\nresources: []\n")
        #expect(feed.retry.backoff.seconds == 7200 && feed.retry.maxBackoff.seconds == 7200)
    }

    @Test func hundredThousandResourcesDecode() throws {
        var yaml = "resources:\n"
        for i in 0..<2000 { yaml += "  - url: https://e.com/f/\(i).bin\n    size: \(i + 1)\n" }
        let feed = try Self.feed(yaml)
        #expect(feed.resources.count == 2000)
        #expect(feed.resources.last?.path == "1999.bin")
        #expect(feed.resources.last?.location.line == 4000)
    }
}

/// A feed's `limits.response_timeout` (SPEC §5): the config's when absent, above 0s.
extension FeedDecoderTests {
    @Test func responseTimeoutLimit() throws {
        #expect(try Self.feed("limits: { response_timeout: 10m }\nresources: []\n").limits.responseTimeout?.seconds == 600)
        #expect(try Self.feed("resources: []\n").limits.responseTimeout == nil)
        let (_, diagnostics) = FeedDecoder(config: Config()).decode(Array("limits: { response_timeout: 0s }\nresources: []\n".utf8), file: "f.yaml")
        #expect(diagnostics.filter { $0.severity == .error }.map(\.headline) == ["f.yaml:1:29: error: response_timeout must be longer than 0s"])
    }
}
