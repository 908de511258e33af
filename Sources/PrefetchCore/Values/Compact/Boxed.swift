/// A value most instances of a type lack, with the value that means "lacks it": nil, or an
/// empty record. `Boxed` keeps nothing for it.
protocol Defaulted: Equatable {
    /// The value that means "none": what a new instance holds, and what `Boxed` stores for free.
    static var absent: Self { get }
}

extension Optional: Defaulted where Wrapped: Equatable {
    static var absent: Self { nil }
}

/// The one copy-on-write box: a value behind one immutable reference that copies share and a
/// change replaces whole, and no reference at all (one word, nil) while the value is
/// `absent`. For the parts that few of a type's many instances have (a resource's mirrors and
/// headers, a state record's failure, a job's partial), so that the rest pay one word.
///
///     @Boxed var rare = Rare.absent
///     rare.headers = [...]          // a new box; copies made before keep the old one
@propertyWrapper
struct Boxed<Value: Defaulted & Sendable>: Sendable, Equatable {
    private final class Storage: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private var storage: Storage?

    init(wrappedValue: Value) {
        storage = wrappedValue == .absent ? nil : Storage(wrappedValue)
    }

    var wrappedValue: Value {
        get { storage?.value ?? .absent }
        set { storage = newValue == .absent ? nil : Storage(newValue) }
    }

    /// Whether a value other than `absent` is held (asked without copying it out).
    var isHeld: Bool { storage != nil }

    /// Equal when they share the box, or hold equal values.
    static func == (a: Boxed, b: Boxed) -> Bool {
        a.storage === b.storage || a.wrappedValue == b.wrappedValue
    }
}
