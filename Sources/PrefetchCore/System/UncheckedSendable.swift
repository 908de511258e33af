/// A value handed to another thread that only ever uses it in ways that are safe there
/// (a stop flag read under its own lock; a digest fed from one thread at a time).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
