import Foundation

/// The three kinds of probe — power supplies, NetworkManager over D-Bus, free space — and
/// one bounded reading of them all (`plan`, `status`, `gc`, `verify`): each runs on a
/// thread of its own, side by side, and a probe that has not answered within `timeout`
/// (2 s) reads *unknown*, whatever it was doing (SPEC §7). A run and the daemon keep
/// their readings current with `ConditionMonitor` instead.
public struct ConditionProbes: Sendable {
    public var power: PowerProbe
    public var network: NetworkProbe
    /// The bound on every probe, in seconds (SPEC §7: 2 s).
    public var timeout: Double = 2

    public init(power: PowerProbe = PowerProbe(), network: NetworkProbe = NetworkProbe()) {
        self.power = power
        self.network = network
    }

    /// The probes of this environment: `DBUS_SYSTEM_BUS_ADDRESS` names the system bus.
    public init(environment: [String: String]) {
        self.init(network: NetworkProbe(bus: SystemBusAddress(environment: environment)))
    }

    /// Nanoseconds the network probe's own deadline comes before `timeout`: its specific
    /// reason ("NetworkManager did not answer") wins over the worker's generic one.
    static let networkMargin: UInt64 = 100_000_000

    /// One reading of each kind, all within `timeout`. What `assumptions` override is not
    /// probed (it reads as assumed; `Assumptions.applied` lays the values over it).
    public func read(cache: String, assumptions: Assumptions = Assumptions()) -> ConditionReadings {
        let start = Clock.monotonicNanoseconds()
        let deadline = start + UInt64(timeout * 1e9)
        let workers = (power: BoundedWorker(name: "prefetch power probe"), network: BoundedWorker(name: "prefetch network probe"),
                       free: BoundedWorker(name: "prefetch disk probe"))
        defer {
            workers.power.finish()
            workers.network.finish()
            workers.free.finish()
        }
        let assumed = "--assume"
        let power = self.power, network = self.network
        let pendingPower = assumptions.onAC == nil ? workers.power.submit { power.read() } : nil
        let networkDeadline = deadline > start + Self.networkMargin ? deadline - Self.networkMargin : deadline
        let pendingNetwork = assumptions.metered == nil ? workers.network.submit { network.read(until: networkDeadline) } : nil
        let pendingFree = assumptions.freeBytes == nil ? workers.free.submit { DiskProbe.read(at: cache) } : nil
        let late = "no answer within \(Self.seconds(timeout))"
        return ConditionReadings(
            power: pendingPower.map { $0.wait(until: deadline) ?? .unknown(reason: "power supplies: \(late)") }
                ?? .known(PowerState(onAC: true), source: assumed),
            network: pendingNetwork.map { $0.wait(until: deadline) ?? .unknown(reason: "NetworkManager probe: \(late)") }
                ?? .known(false, source: assumed),
            free: pendingFree.map { $0.wait(until: deadline) ?? .unknown(reason: "statvfs of \(cache): \(late)") }
                ?? .known(0, source: assumed))
    }

    /// The snapshot now (one bounded reading); a network NetworkManager cannot judge follows
    /// the config's `metered_default`. What `assumptions` override is not probed at all.
    public func snapshot(config: Config, cache: String, assumptions: Assumptions = Assumptions()) -> ConditionSnapshot {
        ConditionSnapshot(self.read(cache: cache, assumptions: assumptions), meteredDefault: config.meteredDefault)
    }

    /// "2 s", "1.5 s".
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
