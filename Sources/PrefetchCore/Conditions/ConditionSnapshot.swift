/// The machine's conditions as probed (or assumed) at one moment, each with its source.
public struct ConditionSnapshot: Sendable, Equatable {
    /// Power: on AC, or on battery with a level when known.
    public var onAC: Bool
    public var batteryLevel: Int?
    public var powerSource: String
    /// Whether the link is metered.
    public var metered: Bool
    public var networkSource: String
    /// Free bytes on the cache filesystem; nil when unknown.
    public var freeBytes: UInt64?
    public var freeSource: String

    public init(onAC: Bool = true, batteryLevel: Int? = nil, powerSource: String = "assumed",
                metered: Bool = false, networkSource: String = "assumed",
                freeBytes: UInt64? = nil, freeSource: String = "unknown") {
        self.onAC = onAC
        self.batteryLevel = batteryLevel
        self.powerSource = powerSource
        self.metered = metered
        self.networkSource = networkSource
        self.freeBytes = freeBytes
        self.freeSource = freeSource
    }
}

/// `--assume network=metered|unmetered,power=ac|battery,battery=35,free=10GiB`.
public struct Assumptions: Sendable, Equatable {
    public var metered: Bool?
    public var onAC: Bool?
    public var batteryLevel: Int?
    public var freeBytes: UInt64?

    public init() {}

    /// Parses the option's value; errors name the bad part.
    public static func parse(_ text: String) throws(ValueError) -> Assumptions {
        var result = Assumptions()
        var offset = 0
        for pair in text.split(separator: ",", omittingEmptySubsequences: false) {
            defer { offset += pair.count + 1 }
            guard let equals = pair.firstIndex(of: "=") else {
                throw ValueError("expected KEY=VALUE in --assume, found '\(pair)'", at: offset)
            }
            let key = pair[..<equals], value = String(pair[pair.index(after: equals)...])
            switch key {
            case "network":
                guard value == "metered" || value == "unmetered" else {
                    throw ValueError("--assume network= takes metered or unmetered, not '\(value)'", at: offset)
                }
                result.metered = value == "metered"
            case "power":
                guard value == "ac" || value == "battery" else {
                    throw ValueError("--assume power= takes ac or battery, not '\(value)'", at: offset)
                }
                result.onAC = value == "ac"
            case "battery":
                guard let level = Int(value), (0...100).contains(level), value.allSatisfy(\.isNumber) else {
                    throw ValueError("--assume battery= takes a percentage from 0 to 100, not '\(value)'", at: offset)
                }
                result.batteryLevel = level
            case "free":
                do {
                    result.freeBytes = try ByteSize.parse(value).bytes
                } catch {
                    throw ValueError("--assume free=: \(error.message)", at: offset)
                }
            default:
                var message = "unknown key '\(key)' in --assume; use network, power, battery or free"
                if let guess = Suggestion.closest(to: String(key), among: ["network", "power", "battery", "free"]) {
                    message += " (did you mean '\(guess)'?)"
                }
                throw ValueError(message, at: offset)
            }
        }
        // battery=N alone implies power=battery; power=ac,battery=N is a laptop on its charger.
        if result.batteryLevel != nil, result.onAC == nil { result.onAC = false }
        return result
    }

    /// Probes what is not assumed, then lays the assumptions over it.
    public func snapshot(_ probes: ConditionProbes, config: Config, cache: String) -> ConditionSnapshot {
        applied(to: probes.snapshot(config: config, cache: cache, assumptions: self))
    }

    /// The snapshot with these assumptions laid over what the probes said.
    public func applied(to probed: ConditionSnapshot) -> ConditionSnapshot {
        var out = probed
        if let metered { out.metered = metered; out.networkSource = "--assume" }
        if let onAC {
            out.onAC = onAC
            out.powerSource = "--assume"
            if onAC && batteryLevel == nil { out.batteryLevel = nil }
        }
        if let batteryLevel { out.batteryLevel = batteryLevel; out.powerSource = "--assume" }
        if let freeBytes { out.freeBytes = freeBytes; out.freeSource = "--assume" }
        return out
    }
}
