/// The power supplies as read: on AC, or on battery with a level when one is known.
public struct PowerState: Sendable, Equatable {
    public var onAC: Bool
    public var batteryLevel: Int?

    public init(onAC: Bool, batteryLevel: Int? = nil) {
        self.onAC = onAC
        self.batteryLevel = batteryLevel
    }
}
