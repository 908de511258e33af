import Foundation
import Testing
@testable import PrefetchCore

/// The text exposition format as `Metrics.render` writes it: label values escaped, numbers
/// without exponent or trailing zeros, no timestamps, HELP and TYPE for every family.
@Suite struct MetricsFormatTests {
    @Test func labelsAreEscapedAndNumbersPlain() {
        #expect(Metrics.quote("a\"b\\c\nd") == "\"a\\\"b\\\\c\\nd\"")
        #expect(Metrics.format(0) == "0" && Metrics.format(1.5) == "1.5" && Metrics.format(0.0004) == "0" && Metrics.format(12.3456) == "12.346")
        #expect(Metrics.seconds(Instant(nanoseconds: 1_764_547_200_250_000_000)) == "1764547200.25")
    }

    @Test func anEmptyFleetStillHasEveryFamily() {
        let text = Metrics.render(Metrics.Snapshot(feeds: [], origins: [], lastRun: Instant(seconds: 10), lastRunSeconds: 0.5))
        #expect(text.contains("# TYPE prefetch_transfers_total counter\n"))
        #expect(text.hasSuffix("prefetch_last_run_timestamp_seconds 10\n# HELP prefetch_last_run_duration_seconds How long the last pass took.\n# TYPE prefetch_last_run_duration_seconds gauge\nprefetch_last_run_duration_seconds 0.5\n"))
        #expect(text.components(separatedBy: "# HELP ").count - 1 == 13)
        #expect(text.contains("# TYPE prefetch_reused_bytes_total counter\n"))
    }
}
