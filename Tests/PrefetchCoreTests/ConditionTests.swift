import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// Power, network and disk probes on captured output, and `--assume`.
@Suite struct ConditionTests {
    /// Lays out a `/sys/class/power_supply` tree: supply name → attribute → value (with the
    /// trailing newline sysfs writes).
    static func sysfs(_ supplies: [String: [String: String]]) throws -> TemporaryFolder {
        let folder = try TemporaryFolder()
        for (name, attributes) in supplies {
            try FileManager.default.createDirectory(atPath: folder.path + "/" + name, withIntermediateDirectories: true)
            for (attribute, value) in attributes { try folder.write(name + "/" + attribute, value + "\n") }
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
