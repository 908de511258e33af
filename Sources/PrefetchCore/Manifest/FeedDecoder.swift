import Foundation

/// Turns a feed manifest's YAML into a checked `Feed`, reporting every problem it finds.
public struct FeedDecoder {
    /// Top-level keys of a feed manifest, in the order docs/manifests.md documents them.
    public static let feedKeys = ["name", "schedule", "timezone", "window", "days", "jitter", "conditions",
                                  "refresh", "retry", "limits", "prune", "consistency", "encoding", "zsync", "resources"]
    static let conditionKeys = ["network", "power", "min_battery", "min_free_space", "metered_budget"]
    static let retryKeys = ["attempts", "backoff", "max_backoff"]
    static let limitKeys = ["concurrency", "max_rate", "connect_timeout", "stall_timeout", "max_redirects",
                            "response_timeout"]

    private let config: Config

    /// Where a feed manifest's scalars have limits of their own (`mirrors`, SPEC §8, are
    /// URLs too: bounded as such whenever they are read).
    static let scalars = ScalarLimits(value: .value, key: .key, rules: [
        .init([.key("resources"), .item, .key("url")], InputLimits.url),
        .init([.key("resources"), .item, .key("mirrors"), .item], InputLimits.url),
        .init([.key("resources"), .item, .key("zsync")], InputLimits.url),
        .init([.key("resources"), .item, .key("path")], InputLimits.path),
        .init([.key("resources"), .item, .key("headers"), .anyKey], InputLimits.headerValue),
    ])

    /// A decoder that checks sizes against `config`'s global cap.
    public init(config: Config) {
        self.config = config
    }

    /// Decodes one manifest. `file` is the name used in diagnostics; its stem is the
    /// default feed name. Returns nil for the feed when any error was found.
    ///
    /// The bytes are all there is to it (the fuzzing entry point): a manifest over the
    /// config's `max_manifest_size` is refused here too, before it is parsed.
    /// `defaultName`, when given, replaces the stem of `file` as the name of a manifest that
    /// gives none (a feed source's manifest: named in messages by its label, named as a feed
    /// by its URL's file stem, SPEC §8).
    public func decode(_ bytes: [UInt8], file: String, defaultName: String? = nil) -> (feed: Feed?, diagnostics: [Diagnostic]) {
        if bytes.count > config.maxManifestSize.bytes {
            return (nil, [Diagnostic(.error, file: file, at: nil, Self.tooLarge(size: bytes.count, exact: true, config: config))])
        }
        var reader = NodeReader(file: file)
        let resources = ResourceDecoder(config: config, file: file)
        let root: YAMLNode?
        do {
            let document = try YAMLParser.parse(bytes, limits: FeedDecoder.scalars,
                                                streaming: (key: "resources", handler: resources.decode),
                                                stopWhen: { $0 + resources.errorCount >= NodeReader.maxErrors })
            for problem in document.problems { reader.error(problem.message, at: problem.location) }
            if let stopped = document.stoppedAt {
                // Enough to act on; the rest of the file would cost time and memory for more.
                resources.report(into: &reader)
                return (nil, reader.finished(stoppedAt: stopped))
            }
            root = document.root
        } catch {
            return (nil, [Diagnostic(.error, file: file, at: error.location, error.message)])
        }
        guard let root, !root.isNull else {
            return (nil, [Diagnostic(.error, file: file, at: SourceLocation(line: 1, column: 1),
                                     "the manifest is empty; a feed needs at least 'resources'")])
        }
        let feed = decodeFeed(root, file: file, defaultName: defaultName, reader: &reader, resources: resources)
        return (reader.hasErrors ? nil : feed, reader.finished())
    }

    /// Decodes the regular file `file` (open as `opened`) as `decode` decodes its bytes, reading it in
    /// chunks instead of whole (`YAMLParser.parseFile`): a large manifest's bytes are never
    /// all in memory. Only for a clean file: nil when there is anything to say about it (an
    /// error or a warning, a file over `max_manifest_size`); the caller then reads it whole
    /// and calls `decode`, which says it, quoting the lines.
    func decodeClean(_ opened: FileDescriptor, file: String) -> Feed? {
        let limit = Int(clamping: config.maxManifestSize.bytes)
        // Too large already: refused without reading a byte of it, by the caller.
        guard case .success(let info) = opened.status(), info.st_size <= limit else { return nil }
        var reader = NodeReader(file: file)
        let resources = ResourceDecoder(config: config, file: file)
        // Each resource straight from the parser's events, with no node tree of its own.
        guard let document = YAMLParser.parseFile(opened, limit: limit, limits: FeedDecoder.scalars,
                                                  streaming: .events(key: "resources", collector: resources.collector(fileSize: Int(info.st_size))),
                                                  stopWhen: { $0 + resources.errorCount > 0 }),
              document.problems.isEmpty, document.stoppedAt == nil, let root = document.root, !root.isNull else { return nil }
        let feed = decodeFeed(root, file: file, defaultName: nil, reader: &reader, resources: resources)
        return reader.diagnostics.isEmpty ? feed : nil
    }

    /// The feed a manifest's root describes, each key checked in turn (errors and warnings
    /// into `reader`, in the order of the checks); nil when the root is no mapping.
    private func decodeFeed(_ root: YAMLNode, file: String, defaultName: String?, reader: inout NodeReader, resources streamed: ResourceDecoder) -> Feed? {
        guard let entries = reader.mapping(root, allowed: Self.feedKeys, what: "a feed") else { return nil }
        let (name, nameLocation) = Self.decodeName(entries, file: file, defaultName: defaultName, reader: &reader)
        // Zone first: bare dates and windows are read in it.
        let (zone, zoneName) = Self.decodeZone(entries, reader: &reader)
        let schedule = entries["schedule"].flatMap { reader.value($0.value, what: "schedule", CronExpression.parse) }
        let windows = Self.decodeWindows(entries, reader: &reader)
        let days = Self.decodeDays(entries, reader: &reader)
        let jitter = Self.decodeJitter(entries, windows: windows, days: days, reader: &reader)
        let conditions = Self.decodeConditions(entries, reader: &reader)

        let hasTiming = schedule != nil || !windows.isEmpty
        var refresh = hasTiming ? TimeSpan.zero : .hours(1)
        if let node = entries["refresh"]?.value, let span = reader.value(node, what: "refresh", { (t) throws(ValueError) in try TimeSpan.parse(t) }) {
            refresh = span
        }
        let retry = Self.decodeRetry(entries, reader: &reader)
        let limits = Self.decodeLimits(entries, reader: &reader)

        var prune = false
        if let node = entries["prune"]?.value, let v = reader.boolean(node, what: "prune") { prune = v }
        var consistency = Consistency.file
        if let node = entries["consistency"]?.value,
           let v = reader.choice(node, what: "consistency", [("file", Consistency.file), ("release", .release)]) { consistency = v }

        let resources = Self.decodeResources(entries, root: root, streamed: streamed, zone: zone, reader: &reader)
        return Feed(name: name, file: file, nameLocation: nameLocation, schedule: schedule, timeZone: zone, timeZoneName: zoneName,
                    windows: windows, days: days, jitter: jitter, conditions: conditions, refresh: refresh,
                    retry: retry, limits: limits, prune: prune, consistency: consistency, resources: resources)
    }

    /// Name: explicit, or the file's stem (`defaultName` when given); "" when neither is valid.
    private static func decodeName(_ entries: NodeReader.Entries, file: String, defaultName: String?,
                                   reader: inout NodeReader) -> (name: String, location: SourceLocation) {
        let start = SourceLocation(line: 1, column: 1)
        var name = ""
        var nameLocation = start
        if let node = entries["name"]?.value {
            nameLocation = node.location
            name = reader.value(node, what: "name") { (text) throws(ValueError) -> String in
                if let problem = FeedName.problem(text) { throw problem }
                return text
            } ?? ""
        } else {
            let stem = defaultName ?? Self.stem(of: file)
            if FeedName.problem(stem) == nil {
                name = stem
            } else {
                reader.error("the file name '\(stem)' is not a valid feed name ([a-z0-9][a-z0-9._-]{0,63}); add 'name:'", at: start)
            }
        }
        return (name, nameLocation)
    }

    /// `timezone`, else the system's zone: the zone and the name it is shown by.
    private static func decodeZone(_ entries: NodeReader.Entries, reader: inout NodeReader) -> (zone: TimeZone, name: String) {
        var zone = ZoneCatalog.system.zone
        var zoneName = ZoneCatalog.system.name
        if let node = entries["timezone"]?.value, let found = reader.value(node, what: "timezone", ZoneCatalog.zone(named:)) {
            zone = found
            zoneName = node.scalar ?? found.identifier
        }
        return (zone, zoneName)
    }

    /// `window`: one window or a list of them (none when left out).
    private static func decodeWindows(_ entries: NodeReader.Entries, reader: inout NodeReader) -> [TimeWindow] {
        var windows: [TimeWindow] = []
        if let node = entries["window"]?.value, let items = reader.list(node, what: "window", single: true) {
            if items.isEmpty { reader.error("window must list at least one window, or be left out", at: node.location) }
            for item in items {
                if let window = reader.value(item, what: "a window", TimeWindow.parse) { windows.append(window) }
            }
        }
        return windows
    }

    /// `days`: the weekdays listed, each once (nil when left out).
    private static func decodeDays(_ entries: NodeReader.Entries, reader: inout NodeReader) -> Set<Weekday>? {
        var days: Set<Weekday>?
        if let node = entries["days"]?.value, let items = reader.list(node, what: "days") {
            var set = Set<Weekday>()
            if items.isEmpty { reader.error("days must name at least one day, or be left out", at: node.location) }
            for item in items {
                guard let day = reader.value(item, what: "a day", Weekday.parse) else { continue }
                if set.contains(day) { reader.error("'\(day.name)' is listed twice", at: item.location) }
                set.insert(day)
            }
            days = set
        }
        return days
    }

    /// `jitter`, with a warning when it is not shorter than the shortest window (a day when
    /// only `days` is given).
    private static func decodeJitter(_ entries: NodeReader.Entries, windows: [TimeWindow], days: Set<Weekday>?,
                                     reader: inout NodeReader) -> TimeSpan {
        var jitter = TimeSpan.zero
        if let node = entries["jitter"]?.value, let span = reader.value(node, what: "jitter", { (t) throws(ValueError) in try TimeSpan.parse(t) }) {
            jitter = span
            let shapes = windows.isEmpty && days != nil ? [TimeWindow(start: 0, end: 0)] : windows
            if jitter.seconds > 0, let shortest = shapes.min(by: { $0.lengthMinutes < $1.lengthMinutes }),
               jitter.seconds >= Int64(shortest.lengthMinutes) * 60 {
                reader.warning("jitter \(jitter) is not shorter than the window \(shortest); offsets are reduced modulo the window's length", at: node.location)
            }
        }
        return jitter
    }

    /// `conditions`: network, power, battery, free space and the metered budget.
    private static func decodeConditions(_ entries: NodeReader.Entries, reader: inout NodeReader) -> Conditions {
        var conditions = Conditions()
        if let node = entries["conditions"]?.value, let c = reader.mapping(node, allowed: Self.conditionKeys, what: "conditions") {
            if let n = c["network"]?.value, let v = reader.choice(n, what: "network", [("any", Conditions.Network.any), ("unmetered", .unmetered)]) { conditions.network = v }
            if let n = c["power"]?.value, let v = reader.choice(n, what: "power", [("any", Conditions.Power.any), ("ac", .ac)]) { conditions.power = v }
            if let n = c["min_battery"]?.value, let v = reader.integer(n, what: "min_battery", range: 0...100) { conditions.minBattery = v }
            if let n = c["min_free_space"]?.value, let v = reader.value(n, what: "min_free_space", ByteSize.parse) { conditions.minFreeSpace = v }
            if let n = c["metered_budget"]?.value, let v = reader.value(n, what: "metered_budget", { (t) throws(ValueError) in try ByteRate.parse(t, per: "day") }) {
                conditions.meteredBudget = v
                if conditions.network == .unmetered {
                    reader.warning("metered_budget has no effect with network: unmetered", at: n.location)
                }
            }
        }
        return conditions
    }

    /// `retry`: attempts and backoff (`max_backoff` at least `backoff`).
    private static func decodeRetry(_ entries: NodeReader.Entries, reader: inout NodeReader) -> RetryPolicy {
        var retry = RetryPolicy()
        if let node = entries["retry"]?.value, let r = reader.mapping(node, allowed: Self.retryKeys, what: "retry") {
            if let n = r["attempts"]?.value, let v = reader.integer(n, what: "attempts", range: 1...1000) { retry.attempts = v }
            if let n = r["backoff"]?.value, let v = reader.positiveSpan(n, what: "backoff") { retry.backoff = v }
            if let n = r["max_backoff"]?.value, let v = reader.positiveSpan(n, what: "max_backoff") {
                retry.maxBackoff = v
                if v < retry.backoff { reader.error("max_backoff \(v) is shorter than backoff \(retry.backoff)", at: n.location) }
            } else if r["max_backoff"] == nil, retry.backoff > retry.maxBackoff {
                retry.maxBackoff = retry.backoff
            }
        }
        return retry
    }

    /// `limits`: the feed's concurrency, rate, timeouts and redirects.
    private static func decodeLimits(_ entries: NodeReader.Entries, reader: inout NodeReader) -> FeedLimits {
        var limits = FeedLimits()
        if let node = entries["limits"]?.value, let l = reader.mapping(node, allowed: Self.limitKeys, what: "limits") {
            if let n = l["concurrency"]?.value, let v = reader.integer(n, what: "concurrency", range: 1...1024) { limits.concurrency = v }
            if let n = l["max_rate"]?.value, let v = reader.value(n, what: "max_rate", { (t) throws(ValueError) in try ByteRate.parse(t, per: "s") }) { limits.maxRate = v }
            if let n = l["connect_timeout"]?.value, let v = reader.positiveSpan(n, what: "connect_timeout") { limits.connectTimeout = v }
            if let n = l["stall_timeout"]?.value, let v = reader.positiveSpan(n, what: "stall_timeout") { limits.stallTimeout = v }
            if let n = l["max_redirects"]?.value, let v = reader.integer(n, what: "max_redirects", range: 0...100) { limits.maxRedirects = v }
            if let n = l["response_timeout"]?.value, let v = reader.positiveSpan(n, what: "response_timeout") { limits.responseTimeout = v }
        }
        return limits
    }

    /// `resources`, as `streamed` decoded them while the file was parsed, then the feed's
    /// `encoding` given to those that give none.
    private static func decodeResources(_ entries: NodeReader.Entries, root: YAMLNode, streamed: ResourceDecoder, zone: TimeZone,
                                        reader: inout NodeReader) -> [Resource] {
        var resources: [Resource] = []
        if let node = entries["resources"]?.value {
            if reader.list(node, what: "resources") != nil {
                if streamed.count == 0 { reader.warning("this feed lists no resources", at: node.location) }
                resources = streamed.finish(clock: ZoneClock(zone), reader: &reader)
            }
        } else {
            reader.error("a feed needs 'resources': a list of things to fetch", at: root.location)
        }

        // encoding (SPEC §7 "Encoded bodies"): the feed's is the default of its resources,
        // which may give their own.
        if let node = entries["encoding"]?.value, let encoding = reader.encoding(node) {
            streamed.inheritEncoding(encoding, into: &resources)
        }
        // zsync (SPEC §9): the same, after `encoding`, which may rule a delta out.
        let zsyncNode = entries["zsync"]?.value
        var noHosts: StringInterner? = nil
        let zsync = zsyncNode.flatMap { reader.zsync($0, hosts: &noHosts, urlAllowed: false) }
        streamed.inheritZsync(zsync, at: zsyncNode?.location, into: &resources, reader: &reader)
        return resources
    }

    /// The error for a manifest of `size` bytes over the config's `max_manifest_size`.
    static func tooLarge(size: Int, exact: Bool, config: Config) -> String {
        InputLimits.tooLarge("manifest", size: size, exact: exact, limit: "max_manifest_size \(config.maxManifestSize) (\(config.maxManifestSize.bytes) bytes)")
    }

    /// The file name without folder and `.yaml`/`.yml` extension.
    static func stem(of file: String) -> String {
        var name = Substring(file.split(separator: "/").last ?? Substring(file))
        for suffix in [".yaml", ".yml"] where name.hasSuffix(suffix) {
            name = name.dropLast(suffix.count)
            break
        }
        return String(name)
    }
}
