import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// Power, network and disk probes on real files and sockets, and `--assume`.
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
        let reading = try #require(PowerProbe(root: root.path).read().value)
        #expect(reading.onAC && reading.batteryLevel == nil)
    }

    @Test func laptopOnBattery() throws {
        let root = try Self.sysfs(["AC": ["type": "Mains", "online": "0"],
                                   "BAT0": ["type": "Battery", "capacity": "23", "status": "Discharging"],
                                   "hidpp_battery_0": ["type": "Battery", "scope": "Device", "capacity": "5", "status": "Discharging"]])
        let reading = try #require(PowerProbe(root: root.path).read().value)
        #expect(!reading.onAC)
        #expect(reading.batteryLevel == 23)  // the mouse's battery (scope Device) does not count
    }

    @Test func usbCPowerCountsAsAC() throws {
        let root = try Self.sysfs(["ucsi-source-psy-USBC000:001": ["type": "USB", "online": "1"],
                                   "BAT1": ["type": "Battery", "capacity": "50", "status": "Charging"]])
        #expect(PowerProbe(root: root.path).read().value?.onAC == true)
    }

    @Test func noSuppliesMeansAC() throws {
        let empty = try Self.sysfs([:])
        #expect(PowerProbe(root: empty.path).read() == .known(PowerState(onAC: true), source: "no power supply found: AC assumed"))
        #expect(PowerProbe(root: "/nonexistent/power_supply").read().value?.onAC == true)
    }

    /// Without a system bus socket nothing is loaded or connected: the reading is unknown
    /// at once, saying so.
    @Test func noSystemBusMeansUnknownAtOnce() throws {
        let folder = try TemporaryFolder()
        let probe = NetworkProbe(bus: SystemBusAddress("unix:path=\(folder.file("no-bus"))"))
        let started = Date()
        let reading = probe.read(until: Clock.monotonicNanoseconds() + 2_000_000_000)
        #expect(reading == .unknown(reason: "no D-Bus system bus (\(folder.file("no-bus")) does not exist)"))
        #expect(Date().timeIntervalSince(started) < 0.5)
    }

    @Test(arguments: [
        ([:], SystemBusAddress.defaultAddress, ["/run/dbus/system_bus_socket"]),
        (["DBUS_SYSTEM_BUS_ADDRESS": ""], SystemBusAddress.defaultAddress, ["/run/dbus/system_bus_socket"]),
        (["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/tmp/a%20b/bus,guid=00ff"], "unix:path=/tmp/a%20b/bus,guid=00ff", ["/tmp/a b/bus"]),
        (["DBUS_SYSTEM_BUS_ADDRESS": "unix:abstract=/x;unix:path=/y"], "unix:abstract=/x;unix:path=/y", ["/y"]),
    ] as [([String: String], String, [String])])
    func theSystemBusAddress(_ environment: [String: String], _ address: String, _ paths: [String]) {
        let bus = SystemBusAddress(environment: environment)
        #expect(bus.address == address)
        #expect(bus.socketPaths == paths)
    }

    @Test func anAbstractSocketMayBeThere() {
        #expect(SystemBusAddress("unix:abstract=/nowhere").absence == nil)  // not a file: asked, not looked for
        #expect(SystemBusAddress("unix:path=/nonexistent/bus").absence != nil)
    }

    @Test func unknownNetworkFollowsTheConfig() throws {
        var config = Config()
        config.meteredDefault = .metered
        let folder = try TemporaryFolder()
        let probes = ConditionProbes(power: PowerProbe(root: "/nonexistent"),
                                     network: NetworkProbe(bus: SystemBusAddress("unix:path=\(folder.file("no-bus"))")))
        let snapshot = probes.snapshot(config: config, cache: "/nonexistent/cache/below")
        #expect(snapshot.metered)
        #expect(snapshot.networkUnknown == "no D-Bus system bus (\(folder.file("no-bus")) does not exist)")
        #expect(snapshot.networkSource == "config metered_default: metered")
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
