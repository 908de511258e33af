import Foundation

/// Reads power supplies from sysfs (`/sys/class/power_supply`), SPEC §1: a `Mains` or
/// `USB` supply with `online` = 1 means AC; a system `Battery`'s `capacity` is the level;
/// no supply known means AC (desktops, servers, VMs).
public struct PowerProbe: Sendable {
    public var root: String

    public init(root: String = "/sys/class/power_supply") {
        self.root = root
    }

    public struct Reading: Sendable, Equatable {
        public var onAC: Bool
        public var batteryLevel: Int?
        public var source: String
    }

    public func read() -> Reading {
        guard case .success(let names) = FileSystem.listDirectory(root), !names.isEmpty else {
            return Reading(onAC: true, batteryLevel: nil, source: "no power supply found: AC assumed")
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
        if acOnline { return Reading(onAC: true, batteryLevel: nil, source: root) }
        if levels.isEmpty { return Reading(onAC: true, batteryLevel: nil, source: "\(root): no battery, AC assumed") }
        if charging { return Reading(onAC: true, batteryLevel: nil, source: "\(root): battery charging") }
        return Reading(onAC: false, batteryLevel: levels.reduce(0, +) / levels.count, source: root)
    }
}

/// Asks NetworkManager whether the primary connection is metered, through its D-Bus
/// `Metered` property (`NMMetered`: 1 yes, 3 guessed yes count as metered).
public struct NetworkProbe: Sendable {
    public typealias Runner = @Sendable (_ executable: String, _ arguments: [String]) -> String?

    public var run: Runner

    public init(run: @escaping Runner = NetworkProbe.runProcess, systemBus: (@Sendable () -> Bool)? = nil) {
        self.run = run
        if let systemBus { self.systemBus = systemBus }
    }

    public struct Reading: Sendable, Equatable {
        /// Nil when NetworkManager could not say.
        public var metered: Bool?
        public var source: String
    }

    static let busctl = ["--system", "get-property", "org.freedesktop.NetworkManager",
                         "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager", "Metered"]
    static let dbusSend = ["--system", "--print-reply=literal", "--dest=org.freedesktop.NetworkManager",
                           "/org/freedesktop/NetworkManager", "org.freedesktop.DBus.Properties.Get",
                           "string:org.freedesktop.NetworkManager", "string:Metered"]

    /// Where the D-Bus system bus listens; without it NetworkManager cannot be asked, and
    /// spawning the tools would only cost time.
    public var systemBus: @Sendable () -> Bool = {
        if let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"], !address.isEmpty { return true }
        return FileSystem.kind(of: "/run/dbus/system_bus_socket") != nil || FileSystem.kind(of: "/var/run/dbus/system_bus_socket") != nil
    }

    public func read() -> Reading {
        guard systemBus() else { return Reading(metered: nil, source: "NetworkManager not running (no D-Bus system bus)") }
        for (tool, arguments) in [("busctl", Self.busctl), ("dbus-send", Self.dbusSend)] {
            guard let output = run(tool, arguments), let value = Self.parseMetered(output) else { continue }
            switch value {
            case 1, 3: return Reading(metered: true, source: "NetworkManager (\(value == 1 ? "yes" : "guessed yes"))")
            case 2, 4: return Reading(metered: false, source: "NetworkManager (\(value == 2 ? "no" : "guessed no"))")
            default: return Reading(metered: nil, source: "NetworkManager (unknown)")
            }
        }
        return Reading(metered: nil, source: "NetworkManager not running")
    }

    /// The `NMMetered` number in `busctl` (`u 4`) or `dbus-send --print-reply=literal`
    /// (`   variant       uint32 4`) output.
    public static func parseMetered(_ output: String) -> Int? {
        let words = output.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard let last = words.last, let value = Int(last),
              words.contains(where: { $0 == "u" || $0 == "uint32" }) else { return nil }
        return value
    }

    /// Runs a tool from PATH with a short timeout; its stdout when it exits 0.
    public static let runProcess: Runner = { executable, arguments in
        let candidates = ["/usr/bin/", "/bin/", "/usr/local/bin/"].map { $0 + executable }
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        return ChildProcess.output(path, arguments, timeout: 2)  // not Foundation's Process: no libdispatch threads (issue 19)
    }
}

/// Free space on the filesystem that holds (or will hold) the cache folder.
public enum DiskProbe {
    /// Bytes available to an unprivileged writer, from `statvfs` of `path` or its nearest
    /// existing ancestor (plan never creates the cache folder).
    public static func freeBytes(at path: String) -> UInt64? {
        var candidate = path.isEmpty ? "." : path
        while true {
            if case .success(let free) = FileSystem.freeBytes(at: candidate) { return free }
            guard candidate != "/" && candidate != "." else { return nil }
            let trimmed = candidate.hasSuffix("/") ? String(candidate.dropLast()) : candidate
            if let slash = trimmed.lastIndex(of: "/") {
                candidate = slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
            } else {
                candidate = "."
            }
        }
    }
}

/// Probes every condition at once, for `plan` and `run`.
public struct ConditionProbes: Sendable {
    public var power: PowerProbe
    public var network: NetworkProbe

    public init(power: PowerProbe = PowerProbe(), network: NetworkProbe = NetworkProbe()) {
        self.power = power
        self.network = network
    }

    /// The snapshot now; a network NetworkManager cannot judge follows the config's
    /// `metered_default`. What `assumptions` override is not probed at all.
    public func snapshot(config: Config, cache: String, assumptions: Assumptions = Assumptions()) -> ConditionSnapshot {
        let power = assumptions.onAC == nil ? self.power.read() : PowerProbe.Reading(onAC: true, batteryLevel: nil, source: "--assume")
        let network = assumptions.metered == nil ? self.network.read() : NetworkProbe.Reading(metered: false, source: "--assume")
        let free = assumptions.freeBytes == nil ? DiskProbe.freeBytes(at: cache) : nil
        return ConditionSnapshot(
            onAC: power.onAC, batteryLevel: power.batteryLevel, powerSource: power.source,
            metered: network.metered ?? (config.meteredDefault == .metered),
            networkSource: network.metered == nil ? "\(network.source); config metered_default: \(config.meteredDefault.rawValue)" : network.source,
            freeBytes: free, freeSource: free == nil ? "unknown" : "statvfs")
    }
}
