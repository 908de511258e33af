import Foundation

/// What a command reads from its options, the configuration and the environment, parsed once
/// and checked before anything is touched (SPEC §5; `Settings.load` in Commands/): a bad
/// value is a usage error naming it, exit 2. The layers below get these values, never the
/// environment to parse again (the environment itself still goes to the transfers, for
/// manifest headers' `${VAR}`).
struct Settings: Sendable {
    let config: Config
    /// `PREFETCH_CLOCK_OFFSET`.
    let clockOffset: TimeSpan
    /// `plan --at`.
    let at: Instant?
    /// `PREFETCH_TRANSFER_THREADS` (nil: the engine decides).
    let transferThreads: Int?
    /// `PREFETCH_MACHINE_ID`, else the config's `machine_id`, else the system's files.
    let machineID: MachineID?
    /// `PREFETCH_BOOT_ID`, else the kernel's.
    let bootID: String
    /// `--assume`.
    let assumptions: Assumptions
    /// `PREFETCH_FAULT`: crash tests' faults (debug builds only; `FaultPoints`).
    let faults: FaultPoints
    /// The environment, for manifest headers' `${VAR}` and the probes' `DBUS_SYSTEM_BUS_ADDRESS`.
    let environment: [String: String]
    /// `--metrics-file`, else the config's `metrics_file` (SPEC §6).
    var metricsFile: String? = nil

    /// The time this command reads: `--at`, else the system clock shifted by the offset.
    func now() -> Instant { at ?? Clock.realNow() + clockOffset }

    /// `PREFETCH_TRANSFER_THREADS` as a count (nil when unset).
    static func transferThreads(environment: [String: String]) throws(ValueError) -> Int? {
        guard let text = environment["PREFETCH_TRANSFER_THREADS"], !text.isEmpty else { return nil }
        guard let count = Int(text), (1...64).contains(count) else {
            throw ValueError("PREFETCH_TRANSFER_THREADS: expected a whole number from 1 to 64, got '\(text)'")
        }
        return count
    }
}
