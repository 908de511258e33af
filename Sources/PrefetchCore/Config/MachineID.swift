import Foundation

/// The machine id that spreads a fleet's load, and where it came from.
public struct MachineID: Sendable, Equatable {
    public var value: String
    /// `PREFETCH_MACHINE_ID`, `config machine_id`, `/etc/machine-id` or `/var/lib/dbus/machine-id`.
    public var source: String
    /// False for a placeholder an image baked (an empty file, or systemd's `uninitialized`
    /// before first boot, SPEC §6): it counts as no id, and the search stops at it.
    public var usable: Bool

    public init(value: String, source: String, usable: Bool = true) {
        self.value = value
        self.source = source
        self.usable = usable
    }

    /// The id to spread jitter by: nil for a baked placeholder (jitter 0).
    public var usableValue: String? { usable ? value : nil }

    /// The id in SPEC §1's order: the environment, the config, then the two system files.
    /// Nil when none is set (jitter is then 0 and `plan` says so).
    public static func find(environment: [String: String], config: Config,
                            files: [String] = ["/etc/machine-id", "/var/lib/dbus/machine-id"]) -> MachineID? {
        if let value = environment["PREFETCH_MACHINE_ID"]?.trimmingSpaces(), !value.isEmpty {
            return MachineID(value: value, source: "PREFETCH_MACHINE_ID")
        }
        if let value = config.machineID { return MachineID(value: value, source: "config machine_id") }
        for file in files {
            if case .success(let bytes) = FileSystem.readFile(file) {
                let value = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: " \t\r\n")
                // A baked image's placeholder: not an id, and the next file (often a copy baked
                // with it, /var/lib/dbus/machine-id) is not believed either.
                if value.isEmpty || value == "uninitialized" { return MachineID(value: value, source: file, usable: false) }
                return MachineID(value: value, source: file)
            }
        }
        return nil
    }
}
