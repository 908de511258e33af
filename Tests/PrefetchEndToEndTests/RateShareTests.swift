import Foundation
import Testing
@testable import PrefetchCore

/// A feed's `max_rate` is shared fairly among its running transfers: the cap holds for the
/// feed as a whole, and no transfer takes the whole budget while the others get nothing (the
/// plan's order — smallest first among equals — is what the finish order shows).
@Suite struct RateShareTests {
    @Test func theFeedsRateIsSharedAmongItsTransfers() throws {
        let s = try FaultHarness()
        let big = FaultTests.bytes(8 << 20, seed: 800)
        let small = (0..<3).map { FaultTests.bytes(1 << 20, seed: 801 + UInt64($0)) }
        s.origin.serve("/big.bin", OriginResource(big, etag: "\"big\""))
        for (index, body) in small.enumerated() { s.origin.serve("/s\(index).bin", OriginResource(body, etag: "\"s\(index)\"")) }
        try s.feed("limits: { max_rate: 4MiB/s, concurrency: 4 }\nresources:\n  - url: ORIGIN/big.bin\n"
                   + (0..<3).map { "  - url: ORIGIN/s\($0).bin\n" }.joined())
        let result = try s.runJSON()
        #expect(result.status == 0, "\(result.diagnostics)")
        let placed = result.events.filter { $0["type"] as? String == "placed" }
        let order = placed.compactMap { $0["path"] as? String }
        #expect(order.last == "big.bin", "finish order \(order)")
        // Four transfers share 4 MiB/s: each small file moves at about 1 MiB/s and is done in
        // about a second (alone with the whole budget the big one would take 2 s first).
        for event in placed where event["path"] as? String != "big.bin" {
            let seconds = event["seconds"] as? Double ?? .infinity
            #expect(seconds < 1.8, "\(event["path"] ?? "?") took \(seconds) s: it did not get its share")
        }
        // The cap holds for the feed as a whole (11 MiB at 4 MiB/s: about 2.75 s).
        #expect(result.seconds > 2.3, "the feed moved 11 MiB in \(result.seconds) s, over its 4 MiB/s")
        for (index, body) in small.enumerated() { #expect(s.digest("t/s\(index).bin") == FaultTests.sha(body)) }
        #expect(s.digest("t/big.bin") == FaultTests.sha(big))
    }
}
