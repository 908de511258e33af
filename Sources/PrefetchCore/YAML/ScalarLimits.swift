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
        var alive = allRules
        for (depth, step) in path.enumerated() { alive = narrow(alive, depth: depth, step: step) }
        return limit(alive: alive, depth: path.count)
    }

    /// Every rule, as a set of bits (rule n is bit n; at most 64 rules).
    var allRules: UInt64 { rules.count >= 64 ? .max : (1 << rules.count) - 1 }

    /// Of the rules in `alive`, those whose step at `depth` is `step`: how the parser keeps,
    /// for each open collection, the rules its place still matches, so that a scalar's limit
    /// costs no walk over the open collections.
    func narrow(_ alive: UInt64, depth: Int, step: Step) -> UInt64 {
        var kept: UInt64 = 0
        var bits = alive
        while bits != 0 {
            let index = bits.trailingZeroBitCount
            bits &= bits - 1
            let path = rules[index].path
            guard depth < path.count else { continue }
            let wanted = path[depth]
            if wanted == step || (wanted == .anyKey && step != .item) { kept |= 1 << index }
        }
        return kept
    }

    /// The limit of a value `depth` steps from the root whose place matches the rules `alive`.
    func limit(alive: UInt64, depth: Int) -> ScalarLimit {
        var bits = alive
        while bits != 0 {
            let index = bits.trailingZeroBitCount
            bits &= bits - 1
            if rules[index].path.count == depth { return rules[index].limit }
        }
        return value
    }
}
