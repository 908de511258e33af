/// The machine's conditions as probed (or assumed) at one moment, each with its source.
/// A reading that is *unknown* (SPEC §7) keeps its reason and counts as its default:
/// the network as the config's `metered_default`, power as AC, free space as enough.
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
    /// Why each reading is unknown, when it is (then the value above is what it counts as).
    public var networkUnknown: String?
    public var powerUnknown: String?
    public var freeUnknown: String?

    public init(onAC: Bool = true, batteryLevel: Int? = nil, powerSource: String = "assumed",
                metered: Bool = false, networkSource: String = "assumed",
                freeBytes: UInt64? = nil, freeSource: String = "unknown",
                networkUnknown: String? = nil, powerUnknown: String? = nil, freeUnknown: String? = nil) {
        self.onAC = onAC
        self.batteryLevel = batteryLevel
        self.powerSource = powerSource
        self.metered = metered
        self.networkSource = networkSource
        self.freeBytes = freeBytes
        self.freeSource = freeSource
        self.networkUnknown = networkUnknown
        self.powerUnknown = powerUnknown
        self.freeUnknown = freeUnknown
    }

    /// The snapshot of three readings: an unknown network counts as `meteredDefault`,
    /// unknown power as AC, unknown free space as enough (no figure).
    public init(_ readings: ConditionReadings, meteredDefault: Config.MeteredDefault) {
        switch readings.power {
        case .known(let state, let source):
            self.init(onAC: state.onAC, batteryLevel: state.batteryLevel, powerSource: source)
        case .unknown(let reason):
            self.init(onAC: true, powerSource: "unknown: AC assumed", powerUnknown: reason)
        }
        switch readings.network {
        case .known(let metered, let source):
            self.metered = metered
            networkSource = source
        case .unknown(let reason):
            metered = meteredDefault == .metered
            networkSource = "config metered_default: \(meteredDefault.rawValue)"
            networkUnknown = reason
        }
        switch readings.free {
        case .known(let bytes, let source):
            freeBytes = bytes
            freeSource = source
        case .unknown(let reason):
            freeBytes = nil
            freeSource = "unknown"
            freeUnknown = reason
        }
    }

    /// What a running transfer goes by (SPEC §7): the readings of `latest` that are known,
    /// and for each kind that is unknown there the value this snapshot holds (the last
    /// known one, or the one the transfers started with). An unknown reading never pauses.
    public func keepingKnown(_ latest: ConditionSnapshot) -> ConditionSnapshot {
        var out = self
        if latest.networkUnknown == nil {
            out.metered = latest.metered
            out.networkSource = latest.networkSource
            out.networkUnknown = nil
        }
        if latest.powerUnknown == nil {
            out.onAC = latest.onAC
            out.batteryLevel = latest.batteryLevel
            out.powerSource = latest.powerSource
            out.powerUnknown = nil
        }
        if latest.freeUnknown == nil {
            out.freeBytes = latest.freeBytes
            out.freeSource = latest.freeSource
            out.freeUnknown = nil
        }
        return out
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

    /// Probes what is not assumed (one bounded reading), then lays the assumptions over it.
    public func snapshot(_ probes: ConditionProbes, config: Config, cache: String) -> ConditionSnapshot {
        applied(to: probes.snapshot(config: config, cache: cache, assumptions: self))
    }

    /// The snapshot with these assumptions laid over what the probes said.
    public func applied(to probed: ConditionSnapshot) -> ConditionSnapshot {
        var out = probed
        if let metered { out.metered = metered; out.networkSource = "--assume"; out.networkUnknown = nil }
        if let onAC {
            out.onAC = onAC
            out.powerSource = "--assume"
            out.powerUnknown = nil
            if onAC && batteryLevel == nil { out.batteryLevel = nil }
        }
        if let batteryLevel { out.batteryLevel = batteryLevel; out.powerSource = "--assume"; out.powerUnknown = nil }
        if let freeBytes { out.freeBytes = freeBytes; out.freeSource = "--assume"; out.freeUnknown = nil }
        return out
    }
}
