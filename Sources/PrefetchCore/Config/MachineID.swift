import Foundation

/// The machine id that spreads a fleet's load, and where it came from.
public struct MachineID: Sendable, Equatable {
    public var value: String
    /// `PREFETCH_MACHINE_ID`, `config machine_id`, `/etc/machine-id` or `/var/lib/dbus/machine-id`.
    public var source: String

    public init(value: String, source: String) {
        self.value = value
        self.source = source
    }

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
                if !value.isEmpty { return MachineID(value: value, source: file) }
            }
        }
        return nil
    }
}
