import Foundation

/// One reading of whether the link is metered: NetworkManager over the D-Bus system bus
/// through sd-bus (`NetworkManagerClient`, `MeteredRule`), within a deadline that bounds
/// the connection, its authentication and every call. Without a system bus socket nothing
/// is loaded or connected. `NetworkWatch` keeps a reading current for a run or the daemon.
public struct NetworkProbe: Sendable {
    public var bus: SystemBusAddress

    public init(bus: SystemBusAddress = SystemBusAddress(environment: ProcessInfo.processInfo.environment)) {
        self.bus = bus
    }

    /// The reading, by `deadline` (`Clock.monotonicNanoseconds`); unknown with the reason
    /// when there is no bus, nothing answered in time, or NetworkManager cannot say.
    public func read(until deadline: UInt64) -> Probed<Bool> {
        if let absence = bus.absence { return .unknown(reason: absence) }
        do {
            let connection = try BusConnection(address: bus.address)
            return MeteredRule.reading(try NetworkManagerClient.read(connection, until: deadline))
        } catch {
            return .unknown(reason: error.description)
        }
    }
}
