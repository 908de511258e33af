/// One reading of each kind of probe (SPEC §7), as `ConditionProbes` takes it once and
/// `ConditionMonitor` keeps it current.
public struct ConditionReadings: Sendable, Equatable {
    public var power: Probed<PowerState>
    public var network: Probed<Bool>
    public var free: Probed<UInt64>

    public init(power: Probed<PowerState>, network: Probed<Bool>, free: Probed<UInt64>) {
        self.power = power
        self.network = network
        self.free = free
    }
}
