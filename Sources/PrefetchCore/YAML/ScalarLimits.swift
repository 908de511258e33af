/// Which limit applies to a scalar, by where it stands in the document (SPEC §7): a rule
/// names the keys and list items on the way from the root, and any other value, and every
/// mapping key, gets the default. Applied by the parser to every scalar as it arrives, so
/// even a value no decoder would read is bounded, and a long one is never copied.
public struct ScalarLimits: Sendable {
    /// One step from a collection to a child.
    public enum Step: Sendable, Hashable {
        /// The value of this key of a mapping.
        case key(String)
        /// The value of any key of a mapping.
        case anyKey
        /// Any item of a list.
        case item
    }

    /// A place and its limit.
    public struct Rule: Sendable {
        public let path: [Step]
        public let limit: ScalarLimit

        public init(_ path: [Step], _ limit: ScalarLimit) {
            self.path = path
            self.limit = limit
        }
    }

    /// Every value no rule names.
    public var value: ScalarLimit
    /// Every mapping key.
    public var key: ScalarLimit
    /// The places with their own limit.
    public var rules: [Rule]

    /// Limits with `rules` for their places.
    public init(value: ScalarLimit, key: ScalarLimit, rules: [Rule] = []) {
        self.value = value
        self.key = key
        self.rules = rules
    }

    /// The limit for a value reached by `path` from the root (a key's own text uses `key`).
    public func limit(at path: [Step]) -> ScalarLimit {
        limit(depth: path.count) { path[$0] }
    }

    /// The same for a path of `depth` steps given one at a time (the parser's open
    /// collections, without building an array for every scalar).
    func limit(depth: Int, step: (Int) -> Step) -> ScalarLimit {
        for rule in rules where rule.path.count == depth {
            var matches = true
            for (index, wanted) in rule.path.enumerated() {
                let actual = step(index)
                if !(wanted == actual || (wanted == .anyKey && actual != .item)) {
                    matches = false
                    break
                }
            }
            if matches { return rule.limit }
        }
        return value
    }
}
