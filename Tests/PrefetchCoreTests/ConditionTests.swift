import Foundation
import Testing
@testable import PrefetchCore

/// Power, network and disk probes on captured output, and `--assume`.
@Suite struct ConditionTests {
    /// Lays out a `/sys/class/power_supply` tree: supply name → attribute → value (with the
    /// trailing newline sysfs writes).
    static func sysfs(_ supplies: [String: [String: String]]) throws -> TemporaryFolderForUnitTests {
        let folder = try TemporaryFolderForUnitTests()
        for (name, attributes) in supplies {
            try FileManager.default.createDirectory(atPath: folder.path + "/" + name, withIntermediateDirectories: true)
            for (attribute, value) in attributes { folder.write(name + "/" + attribute, value + "\n") }
        }
        return folder
    }

    @Test func laptopOnMains() throws {
        let root = try Self.sysfs(["AC": ["type": "Mains", "online": "1"],
                                   "BAT0": ["type": "Battery", "capacity": "87", "status": "Charging"]])
        let reading = PowerProbe(root: root.path).read()
        #expect(reading.onAC && reading.batteryLevel == nil)
    }

    @Test func laptopOnBattery() throws {
        let root = try Self.sysfs(["AC": ["type": "Mains", "online": "0"],
                                   "BAT0": ["type": "Battery", "capacity": "23", "status": "Discharging"],
                                   "hidpp_battery_0": ["type": "Battery", "scope": "Device", "capacity": "5", "status": "Discharging"]])
        let reading = PowerProbe(root: root.path).read()
        #expect(!reading.onAC)
        #expect(reading.batteryLevel == 23)  // the mouse's battery (scope Device) does not count
    }

    @Test func usbCPowerCountsAsAC() throws {
        let root = try Self.sysfs(["ucsi-source-psy-USBC000:001": ["type": "USB", "online": "1"],
                                   "BAT1": ["type": "Battery", "capacity": "50", "status": "Charging"]])
        #expect(PowerProbe(root: root.path).read().onAC)
    }

    @Test func noSuppliesMeansAC() throws {
        let empty = try Self.sysfs([:])
        #expect(PowerProbe(root: empty.path).read() == PowerProbe.Reading(onAC: true, batteryLevel: nil, source: "no power supply found: AC assumed"))
        #expect(PowerProbe(root: "/nonexistent/power_supply").read().onAC)
    }

    @Test(arguments: [
        ("u 1\n", 1), ("u 4\n", 4), ("u 3", 3), ("   variant       uint32 2\n", 2), ("", nil), ("s \"x\"", nil),
    ] as [(String, Int?)])
    func networkManagerOutput(_ output: String, _ expected: Int?) {
        #expect(NetworkProbe.parseMetered(output) == expected)
    }

    @Test func meteredFromNetworkManager() {
        let yes = NetworkProbe(run: { tool, _ in tool == "busctl" ? "u 3\n" : nil }, systemBus: { true }).read()
        #expect(yes.metered == true && yes.source == "NetworkManager (guessed yes)")
        let no = NetworkProbe(run: { tool, _ in tool == "dbus-send" ? "   variant       uint32 4\n" : nil }, systemBus: { true }).read()
        #expect(no.metered == false)
        let absent = NetworkProbe(run: { _, _ in nil }, systemBus: { true }).read()
        #expect(absent.metered == nil && absent.source == "NetworkManager not running")
        let unknown = NetworkProbe(run: { _, _ in "u 0\n" }, systemBus: { true }).read()
        #expect(unknown.metered == nil)
        // Without a system bus nothing is spawned at all.
        let noBus = NetworkProbe(run: { _, _ in Issue.record("spawned without a bus"); return nil }, systemBus: { false }).read()
        #expect(noBus == NetworkProbe.Reading(metered: nil, source: "NetworkManager not running (no D-Bus system bus)"))
    }

    @Test func unknownNetworkFollowsTheConfig() {
        var config = Config()
        config.meteredDefault = .metered
        let probes = ConditionProbes(power: PowerProbe(root: "/nonexistent"), network: NetworkProbe(run: { _, _ in nil }, systemBus: { true }))
        let snapshot = probes.snapshot(config: config, cache: "/nonexistent/cache/below")
        #expect(snapshot.metered)
        #expect(snapshot.networkSource == "NetworkManager not running; config metered_default: metered")
        #expect(snapshot.freeBytes != nil)  // statvfs of the nearest existing folder
    }

    @Test func assumptions() throws {
        let probed = ConditionSnapshot(onAC: true, powerSource: "sysfs", metered: false, networkSource: "NM",
                                       freeBytes: 100, freeSource: "statvfs")
        let all = try Assumptions.parse("network=metered,power=battery,battery=35,free=10GiB").applied(to: probed)
        #expect(all == ConditionSnapshot(onAC: false, batteryLevel: 35, powerSource: "--assume", metered: true,
                                         networkSource: "--assume", freeBytes: 10 << 30, freeSource: "--assume"))
        let battery = try Assumptions.parse("battery=80").applied(to: probed)
        #expect(!battery.onAC && battery.batteryLevel == 80)  // battery=N alone implies power=battery
        #expect(try Assumptions.parse("power=ac").applied(to: probed).onAC)
    }

    /// Every combination of the three power-related keys (each absent or given), over a probe
    /// that said AC and one that said battery: a laptop on its charger has both AC and a level
    /// (SPEC §2), `battery=N` alone implies battery power, and what is not assumed is probed.
    @Test func everyPowerAssumptionCombination() throws {
        let probes = [ConditionSnapshot(onAC: true, powerSource: "sysfs"),
                      ConditionSnapshot(onAC: false, batteryLevel: 55, powerSource: "sysfs")]
        for probed in probes {
            for power in [nil, "ac", "battery"] {
                for level in [nil, 0, 40, 100] {
                    let parts = [power.map { "power=\($0)" }, level.map { "battery=\($0)" }].compactMap { $0 }
                    guard !parts.isEmpty else { continue }
                    let text = parts.joined(separator: ",")
                    let got = try Assumptions.parse(text).applied(to: probed)
                    let onAC = power.map { $0 == "ac" } ?? (level != nil ? false : probed.onAC)
                    #expect(got.onAC == onAC, "\(text) over \(probed.powerSource) onAC \(probed.onAC)")
                    let expectedLevel = level ?? (power == "ac" ? nil : probed.batteryLevel)
                    #expect(got.batteryLevel == expectedLevel, "\(text): battery level")
                    #expect(got.powerSource == "--assume", "\(text)")
                }
            }
        }
    }

    @Test(arguments: [
        ("network=wifi", "--assume network= takes metered or unmetered, not 'wifi'"),
        ("battery=120", "--assume battery= takes a percentage from 0 to 100, not '120'"),
        ("free=lots", "--assume free=: expected a size such as 512, 64KiB, 20MiB, 2GiB or 1GB"),
        ("netwrk=metered", "unknown key 'netwrk' in --assume; use network, power, battery or free (did you mean 'network'?)"),
        ("metered", "expected KEY=VALUE in --assume, found 'metered'"),
    ])
    func badAssumptions(_ text: String, _ message: String) {
        #expect(throws: ValueError.self) { try Assumptions.parse(text) }
        do { _ = try Assumptions.parse(text) } catch { #expect(error.message == message) }
    }
}

/// state.db: schema, migrations, and a round trip through the snapshot the planner reads.
@Suite struct StateStoreTests {
    @Test func roundTrip() throws {
        let folder = try TemporaryFolderForUnitTests()
        let path = folder.path + "/state.db"
        #expect(try StateStore.openReadOnly(path) == nil)  // readers never create it
        #expect(!FileManager.default.fileExists(atPath: path))

        let store = try StateStore.openForWriting(path)
        let key = ResourceKey(feed: "lobby", path: "loop/intro.mp4")
        try store.recordRelease(feed: "lobby", release: 1000)
        try store.recordValidated(key, urlHash: "h1", validators: Validators(etag: "\"abc\"", lastModified: "Sun, 29 Nov 2026 10:00:00 GMT"),
                                  length: 42, sha256: "00", placed: true, at: 1100)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "b"), urlHash: "h2", entry: "e-h2", release: 1000, error: "HTTP 503",
                                permanent: false, nextRetry: 1300, at: 1200)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "b"), urlHash: "h2", entry: "e-h2", release: 1000, error: "HTTP 503",
                                permanent: false, nextRetry: 1400, at: 1250)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "c"), urlHash: "h3", entry: "e-h3", release: 900, error: "old", permanent: false, nextRetry: nil, at: 950)
        try store.recordFailure(ResourceKey(feed: "lobby", path: "c"), urlHash: "h3", entry: "e-h3", release: 1000, error: "HTTP 404", permanent: true, nextRetry: nil, at: 1150)
        try store.recordPartial(ResourceKey(feed: "lobby", path: "d"), PartialState(urlHash: "h4", validators: Validators(etag: "\"p\""),
                                                                                  totalLength: 100, syncedOffset: 40, updatedAt: 1200))
        try store.addMeteredBytes(MeteredDay(feed: "lobby", day: "2026-11-29"), 10)
        try store.addMeteredBytes(MeteredDay(feed: "lobby", day: "2026-11-29"), 5)
        for (bytes, seconds) in [(10 << 20, 10.0), (30 << 20, 10.0), (20 << 20, 10.0)] {
            try store.recordRun(startedAt: 0, finishedAt: 10, bodyBytes: UInt64(bytes), transferSeconds: seconds, placed: 1, fresh: 0, failed: 0)
        }
        try store.recordReleaseFinished(feed: "lobby", at: 1500)

        let snapshot = try #require(try StateStore.openReadOnly(path)).snapshot()
        #expect(snapshot.feeds["lobby"] == FeedState(lastRelease: 1000, lastReleaseFinished: 1500, lastSuccess: 1500))
        let placed = try #require(snapshot.resources[key])
        #expect(placed.validators == Validators(etag: "\"abc\"", lastModified: "Sun, 29 Nov 2026 10:00:00 GMT"))
        #expect(placed.length == 42 && placed.placedAt == 1100 && placed.validatedAt == 1100 && placed.failures == 0)
        let retried = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "b")])
        #expect(retried.failures == 2 && retried.nextRetry == 1400 && retried.failureRelease == 1000 && retried.lastError == "HTTP 503")
        let newRelease = try #require(snapshot.resources[ResourceKey(feed: "lobby", path: "c")])
        #expect(newRelease.failures == 1 && newRelease.permanentFailure)  // counting starts again at a release
        #expect(snapshot.resources[ResourceKey(feed: "lobby", path: "d")]?.partial?.syncedOffset == 40)
        #expect(snapshot.meteredBytes[MeteredDay(feed: "lobby", day: "2026-11-29")] == 15)
        #expect(snapshot.throughput == Double(2 << 20))  // median of 1, 2 and 3 MiB/s

        // A 304 confirms the copy: its validators and time change, its length and sha256 stay.
        try store.recordValidated(key, urlHash: "h1", validators: Validators(etag: "\"abd\""), length: nil, sha256: nil, placed: false, at: 1700)
        let confirmed = try #require(try store.snapshot().resources[key])
        #expect(confirmed.length == 42 && confirmed.sha256 == placed.sha256 && confirmed.placedAt == 1100 && confirmed.validatedAt == 1700)
        #expect(confirmed.validators == Validators(etag: "\"abd\""))
        // A new copy placed without a sha256 to check records none.
        try store.recordValidated(key, urlHash: "h1", validators: Validators(), length: 7, sha256: nil, placed: true, at: 1800)
        let replaced = try #require(try store.snapshot().resources[key])
        #expect(replaced.length == 7 && replaced.sha256 == nil && replaced.placedAt == 1800)

        // A success clears the failure record and the partial.
        try store.recordValidated(ResourceKey(feed: "lobby", path: "d"), urlHash: "h4", validators: Validators(), length: 100,
                                  sha256: nil, placed: true, at: 1600)
        let after = try store.snapshot()
        #expect(after.resources[ResourceKey(feed: "lobby", path: "d")]?.partial == nil)
    }

    @Test func historyIsBounded() throws {
        let folder = try TemporaryFolderForUnitTests()
        let store = try StateStore.openForWriting(folder.path + "/state.db")
        for i in 0..<25 {
            try store.recordAttempt(ResourceKey(feed: "f", path: "p\(i)"), startedAt: Instant(seconds: Int64(i)), finishedAt: Instant(seconds: Int64(i)), bytes: 1,
                                    httpStatus: 200, outcome: "placed", error: nil)
            try store.recordRun(startedAt: Instant(seconds: Int64(i)), finishedAt: Instant(seconds: Int64(i)), bodyBytes: 1, transferSeconds: 1, placed: 1, fresh: 0, failed: 0)
        }
        try store.pruneHistory(attempts: 10, runs: 3)
        let db = try SQLiteConnection(path: folder.path + "/state.db", readOnly: true)
        let attempts = try db.prepare("SELECT COUNT(*), MIN(started_at), MAX(started_at) FROM attempts")
        #expect(try attempts.step())
        #expect([attempts.int(0), attempts.int(1).map { $0 / 1_000_000_000 }, attempts.int(2).map { $0 / 1_000_000_000 }] == [10, 15, 24])  // the newest ten
        let runs = try db.prepare("SELECT COUNT(*), MIN(started_at) FROM runs")
        #expect(try runs.step())
        #expect([runs.int(0), runs.int(1).map { $0 / 1_000_000_000 }] == [3, 22])
    }

    @Test func theSnapshotFollowsEveryWrite() throws {
        let folder = try TemporaryFolderForUnitTests()
        let path = folder.path + "/state.db"
        let store = try StateStore.openForWriting(path)
        #expect(try store.snapshot().feeds.isEmpty)
        try store.recordRelease(feed: "a", release: 1)  // this connection
        #expect(try store.snapshot().feeds["a"]?.lastRelease == 1)
        let other = try StateStore.openForWriting(path)  // another writer (another process, as far as SQLite knows)
        try other.recordRelease(feed: "b", release: 2)
        #expect(try store.snapshot().feeds["b"]?.lastRelease == 2)
        let unchanged = try store.snapshot()
        #expect(unchanged.feeds.count == 2)
    }

    @Test func aNewerSchemaIsRefused() throws {
        let folder = try TemporaryFolderForUnitTests()
        let path = folder.path + "/state.db"
        _ = try StateStore.openForWriting(path)
        let db = try SQLiteConnection(path: path, readOnly: false)
        try db.execute("PRAGMA user_version = 99")
        #expect(throws: SQLiteError.self) { try StateStore.openReadOnly(path) }
        #expect(throws: SQLiteError.self) { try StateStore.openForWriting(path) }
    }

    @Test func garbageIsAnError() throws {
        let folder = try TemporaryFolderForUnitTests()
        let path = folder.write("state.db", "this is not a database, just text that is long enough to have a header......")
        #expect(throws: SQLiteError.self) { try StateStore.openReadOnly(path)?.snapshot() }
    }
}
