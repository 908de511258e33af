import Testing
@testable import PrefetchCore

/// Which reading changes wake the daemon for work a plan left waiting (`ConditionWake`),
/// from real plans, and what a running transfer goes by when a reading turns unknown
/// (`ConditionSnapshot.keepingKnown`), and what an unknown reading counts as.
@Suite struct ConditionWakeTests {
    static let now = PlannerTests.at("2026-11-30T03:00:00Z")

    static func wake(_ conditions: String, _ snapshot: ConditionSnapshot, size: String = "1MiB") -> ConditionWake {
        let feed = PlannerTests.feed("timezone: UTC\nconditions: { \(conditions) }\nresources:\n  - url: https://e.com/a.bin\n    size: \(size)\n")
        let plan = Planner.plan(PlanInput(feeds: [feed], conditions: snapshot, now: Self.now))
        return ConditionWake(plan, feeds: [feed])
    }

    static let big: UInt64 = 1 << 40

    @Test func theLinkTurningUnmeteredWakesWorkWaitingForIt() {
        let wake = Self.wake("network: unmetered", ConditionSnapshot(metered: true, freeBytes: Self.big))
        #expect(wake.network && !wake.needsPolling)
        #expect(wake.unblocks(ConditionSnapshot(metered: false, freeBytes: Self.big)))
        #expect(!wake.unblocks(ConditionSnapshot(metered: true, freeBytes: Self.big / 2)))  // free space moved: nothing waits on it
        // Unknown, counting as unmetered (metered_default): it starts.
        #expect(wake.unblocks(ConditionSnapshot(metered: false, freeBytes: Self.big, networkUnknown: "NetworkManager did not answer")))
    }

    @Test func powerAndBattery() {
        let onBattery = ConditionSnapshot(onAC: false, batteryLevel: 30, freeBytes: Self.big)
        let ac = Self.wake("power: ac", onBattery)
        #expect(ac.power && ac.needsPolling)
        #expect(ac.unblocks(ConditionSnapshot(onAC: true, freeBytes: Self.big)))
        #expect(!ac.unblocks(ConditionSnapshot(onAC: false, batteryLevel: 90, freeBytes: Self.big)))
        let level = Self.wake("min_battery: 40", onBattery)
        #expect(level.battery == 40)
        #expect(!level.unblocks(ConditionSnapshot(onAC: false, batteryLevel: 39, freeBytes: Self.big)))
        #expect(level.unblocks(ConditionSnapshot(onAC: false, batteryLevel: 40, freeBytes: Self.big)))
        #expect(level.unblocks(ConditionSnapshot(onAC: true, freeBytes: Self.big)))
    }

    @Test func freeSpaceReachingWhatAWaitingTransferNeeds() {
        let wake = Self.wake("min_free_space: 1GiB", ConditionSnapshot(freeBytes: 1 << 30), size: "1MiB")
        #expect(wake.freeSpace == (1 << 30) + (1 << 20))
        #expect(!wake.unblocks(ConditionSnapshot(freeBytes: (1 << 30) + 4096)))
        #expect(wake.unblocks(ConditionSnapshot(freeBytes: (1 << 30) + (1 << 20))))
        #expect(wake.unblocks(ConditionSnapshot(freeBytes: nil, freeUnknown: "statvfs hung")))  // unknown counts as enough
    }

    @Test func nothingWaitingWakesNothing() {
        let wake = Self.wake("network: any", ConditionSnapshot(metered: true, freeBytes: Self.big))
        #expect(wake == ConditionWake(planned: wake.planned))
        #expect(!wake.unblocks(ConditionSnapshot(onAC: true, metered: false, freeBytes: 0)))
    }

    /// Unknown readings count as SPEC §7 says: the network as `metered_default`, power as
    /// AC, free space as enough; each keeps its reason.
    @Test(arguments: [Config.MeteredDefault.metered, .unmetered])
    func whatUnknownCountsAs(_ meteredDefault: Config.MeteredDefault) {
        let snapshot = ConditionSnapshot(ConditionReadings(power: .unknown(reason: "p"), network: .unknown(reason: "n"), free: .unknown(reason: "f")),
                                         meteredDefault: meteredDefault)
        #expect(snapshot.metered == (meteredDefault == .metered) && snapshot.networkUnknown == "n")
        #expect(snapshot.onAC && snapshot.batteryLevel == nil && snapshot.powerUnknown == "p")
        #expect(snapshot.freeBytes == nil && snapshot.freeUnknown == "f")
        let known = ConditionSnapshot(ConditionReadings(power: .known(PowerState(onAC: false, batteryLevel: 20), source: "sysfs"),
                                                        network: .known(true, source: "NM"), free: .known(5, source: "statvfs")),
                                      meteredDefault: meteredDefault)
        #expect(known == ConditionSnapshot(onAC: false, batteryLevel: 20, powerSource: "sysfs", metered: true, networkSource: "NM",
                                           freeBytes: 5, freeSource: "statvfs"))
    }

    /// A running transfer keeps the last known reading of each kind; an unknown one never
    /// pauses it, a known one replaces it.
    @Test func aRunningTransferKeepsTheLastKnownReading() {
        let start = ConditionSnapshot(onAC: true, powerSource: "sysfs", metered: false, networkSource: "NM (no)", freeBytes: 10, freeSource: "statvfs")
        var unmetered = Conditions()
        unmetered.network = .unmetered
        unmetered.power = .ac
        // The bus hangs; metered_default would say metered: the transfer goes on as it was.
        let hung = ConditionSnapshot(onAC: true, powerSource: "unknown: AC assumed", metered: true, networkSource: "config metered_default: metered",
                                     freeBytes: nil, freeSource: "unknown", networkUnknown: "NetworkManager did not answer within 2 s",
                                     powerUnknown: "power supplies: no answer within 2 s", freeUnknown: "statvfs hung")
        let kept = start.keepingKnown(hung)
        #expect(kept == start)
        #expect(RunPass.conditionLost(unmetered, kept) == nil)
        // A known metered reading arrives: it pauses.
        let metered = ConditionSnapshot(onAC: false, batteryLevel: 50, powerSource: "sysfs", metered: true, networkSource: "NM (yes)", freeBytes: 9, freeSource: "statvfs")
        let next = kept.keepingKnown(metered)
        #expect(next == metered)
        #expect(RunPass.conditionLost(unmetered, next) == "network metered")
    }
}
