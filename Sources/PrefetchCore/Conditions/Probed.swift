/// What a probe answered: a value and where it came from, or *unknown* and why (SPEC §7:
/// it did not answer within its bound, or what it asked could not say). What an unknown
/// reading counts as is the snapshot's business (`ConditionSnapshot.init(power:network:free:meteredDefault:)`).
public enum Probed<Value: Sendable & Equatable>: Sendable, Equatable {
    case known(Value, source: String)
    case unknown(reason: String)

    /// The value, when known.
    public var value: Value? {
        if case .known(let value, _) = self { value } else { nil }
    }

    /// Why it is unknown, when it is.
    public var unknownReason: String? {
        if case .unknown(let reason) = self { reason } else { nil }
    }
}
