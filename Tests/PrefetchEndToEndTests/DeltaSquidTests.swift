import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §9 "Behind a site cache": deltas through a real Squid in front of the test origin, two
/// kiosks (each its own cache) taking the same new version. With Squid's default
/// `range_offset_limit 0` the control file is cached like any file (the second kiosk's comes
/// from Squid) and every range request is forwarded to the origin; with the manual's
/// `range_offset_limit none` Squid answers ranges from a copy it fetched whole. Either way
/// each kiosk places the new version.
@Suite(.serialized) struct DeltaSquidTests {
    static func kiosks(_ origin: TestOrigin, squid: SquidProxy) throws -> [FaultHarness] {
        try (0..<2).map { _ in
            let kiosk = FaultHarness(dir: try TemporaryFolder(), origin: origin)
            _ = try kiosk.dir.write("config.yaml", "proxy: \(squid.url)\n")
            return kiosk
        }
    }

    /// Both kiosks hold the old version, then the new one is published with its control file.
    /// The file's URL is mutable, so it says `no-cache` (Squid revalidates it at each request;
    /// with a `max-age` Squid would answer from the old version, whose ranges are stale);
    /// its control file is kept for a day.
    static func publish(_ origin: TestOrigin, _ kiosks: [FaultHarness], old: [UInt8], new: [UInt8]) throws {
        origin.serve("/img.bin", OriginResource(old, etag: "\"v1\"", cacheControl: "no-cache"))
        for kiosk in kiosks {
            try kiosk.feed(DeltaTests.entry(old))
            let first = try kiosk.run(["run"], config: kiosk.dir.file("config.yaml"))
            #expect(first.status == 0, "\(first.diagnostics)")
        }
        origin.serve("/img.bin", OriginResource(new, etag: "\"v2\"", cacheControl: "no-cache"))
        origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(new, name: "img.bin"), etag: "\"z2\"", cacheControl: "max-age=86400"))
        for kiosk in kiosks { try kiosk.feed(DeltaTests.entry(new)) }
    }

    @Test func rangesAreForwardedAndTheControlFileIsCached() throws {
        let (old, new) = DeltaTests.pair(21)
        let origin = try TestOrigin()
        let squid = try SquidProxy(settings: try SquidProxy.siteSettings().filter { !$0.hasPrefix("range_offset_limit") })
        let kiosks = try Self.kiosks(origin, squid: squid)
        try Self.publish(origin, kiosks, old: old, new: new)
        var ranged = 0
        for (index, kiosk) in kiosks.enumerated() {
            let before = origin.requests(to: "/img.bin").count
            let run = try kiosk.runJSON(config: kiosk.dir.file("config.yaml"))
            #expect(run.status == 0, "kiosk \(index): \(run.diagnostics)")
            #expect(kiosk.cached("t/img.bin") == new, "kiosk \(index)")
            #expect(DeltaTests.event(run, "placed")?["delta"] as? Bool == true, "kiosk \(index): \(run.stdout)")
            let forwarded = origin.requests(to: "/img.bin").dropFirst(before)
            #expect(!forwarded.isEmpty && forwarded.allSatisfy { $0.header("range") != nil }, "kiosk \(index): ranges forwarded: \(forwarded.map(\.headers))")
            ranged += forwarded.count
        }
        #expect(origin.requests(to: "/img.bin.zsync").count == 1, "the second kiosk's control file came from squid")
        #expect(origin.bytesSent(to: "/img.bin") < 2 * old.count + new.count / 2, "the ranges, not the file, for the deltas (\(ranged) requests)")
    }

    @Test func withTheManualsSettingsSquidAnswersRangesFromItsCopy() throws {
        let (old, new) = DeltaTests.pair(22)
        let origin = try TestOrigin()
        let squid = try SquidProxy()
        let kiosks = try Self.kiosks(origin, squid: squid)
        try Self.publish(origin, kiosks, old: old, new: new)
        for (index, kiosk) in kiosks.enumerated() {
            let run = try kiosk.runJSON(config: kiosk.dir.file("config.yaml"))
            #expect(run.status == 0, "kiosk \(index): \(run.diagnostics)")
            #expect(kiosk.cached("t/img.bin") == new, "kiosk \(index): \(run.stdout)")
        }
        #expect(origin.requests(to: "/img.bin.zsync").count == 1, "the control file is cached")
    }

    /// A mutable URL served with a day's `max-age`: Squid answers the kiosks from the old
    /// version it keeps. Its ranges are stale (another complete length), the whole fetch is the
    /// old file (a sha256 mismatch): the kiosks fail, and keep the old version — nothing wrong
    /// is placed. (docs/fleet.md: such URLs must say `no-cache`.)
    @Test func aSiteCacheThatServesTheOldVersionPlacesNothingWrong() throws {
        let (old, new) = DeltaTests.pair(23)
        let origin = try TestOrigin()
        let squid = try SquidProxy(settings: try SquidProxy.siteSettings().filter { !$0.hasPrefix("range_offset_limit") })
        let kiosks = try Self.kiosks(origin, squid: squid)
        origin.serve("/img.bin", OriginResource(old, etag: "\"v1\"", cacheControl: "max-age=86400"))
        for kiosk in kiosks {
            try kiosk.feed(DeltaTests.entry(old))
            #expect(try kiosk.run(["run"], config: kiosk.dir.file("config.yaml")).status == 0)
        }
        origin.serve("/img.bin", OriginResource(new, etag: "\"v2\"", cacheControl: "max-age=86400"))
        origin.serve("/img.bin.zsync", OriginResource(try Zsyncmake.control(new, name: "img.bin"), etag: "\"z2\""))
        let kiosk = kiosks[0]
        try kiosk.feed(DeltaTests.entry(new))
        let run = try kiosk.runJSON(config: kiosk.dir.file("config.yaml"))
        #expect(run.status == 1, "\(run.stdout)")
        #expect(DeltaTests.event(run, "delta")?["reason"] as? String == "ranges stale", "\(run.stdout)")
        #expect(kiosk.cached("t/img.bin") == old && kiosk.partials.isEmpty, "the old version stays, nothing else")
    }
}
