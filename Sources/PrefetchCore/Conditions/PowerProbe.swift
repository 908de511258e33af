import Foundation

/// Reads power supplies from sysfs (`/sys/class/power_supply`), SPEC §1: a `Mains` or
/// `USB` supply with `online` = 1 means AC; a system `Battery`'s `capacity` is the level;
/// no supply known means AC (desktops, servers, VMs). A read can hang (a battery behind a
/// slow embedded controller): `ConditionProbes` bounds it.
public struct PowerProbe: Sendable {
    public var root: String

    public init(root: String = "/sys/class/power_supply") {
        self.root = root
    }

    public func read() -> Probed<PowerState> {
        guard case .success(let names) = FileSystem.listDirectory(root), !names.isEmpty else {
            return .known(PowerState(onAC: true), source: "no power supply found: AC assumed")
        }
        func value(_ supply: String, _ file: String) -> String? {
            guard case .success(let bytes) = FileSystem.readFile(root + "/" + supply + "/" + file) else { return nil }
            return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: " \t\r\n")
        }
        var acOnline = false
        var levels: [Int] = []
        var charging = false
        for name in names {
            let type = value(name, "type") ?? ""
            if type == "Mains" || type.hasPrefix("USB") {
                if value(name, "online") == "1" { acOnline = true }
            } else if type == "Battery", value(name, "scope") != "Device" {  // not a mouse's battery
                if let level = value(name, "capacity").flatMap({ Int($0) }) { levels.append(level) }
                if value(name, "status") == "Charging" { charging = true }
            }
        }
        if acOnline { return .known(PowerState(onAC: true), source: root) }
        if levels.isEmpty { return .known(PowerState(onAC: true), source: "\(root): no battery, AC assumed") }
        if charging { return .known(PowerState(onAC: true), source: "\(root): battery charging") }
        return .known(PowerState(onAC: false, batteryLevel: levels.reduce(0, +) / levels.count), source: root)
    }
}
