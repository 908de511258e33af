import Foundation

/// Turns a feed manifest's YAML into a checked `Feed`, reporting every problem it finds.
public struct FeedDecoder {
    /// Top-level keys of a feed manifest, in the order the README documents them.
    public static let feedKeys = ["name", "schedule", "timezone", "window", "days", "jitter", "conditions",
                                  "refresh", "retry", "limits", "prune", "resources"]
    static let conditionKeys = ["network", "power", "min_battery", "min_free_space", "metered_budget"]
    static let retryKeys = ["attempts", "backoff", "max_backoff"]
    static let limitKeys = ["concurrency", "max_rate", "connect_timeout", "stall_timeout", "max_redirects"]
    static let resourceKeys = ["url", "path", "sha256", "size", "max_size", "not_before", "expires", "priority", "headers"]

    private let config: Config

    /// A decoder that checks sizes against `config`'s global cap.
    public init(config: Config) {
        self.config = config
    }

    /// Decodes one manifest. `file` is the name used in diagnostics; its stem is the
    /// default feed name. Returns nil for the feed when any error was found.
    public func decode(_ bytes: [UInt8], file: String) -> (feed: Feed?, diagnostics: [Diagnostic]) {
        var reader = NodeReader(file: file)
        let root: YAMLNode?
        do {
            root = try YAMLParser.parse(bytes)
        } catch {
            return (nil, [Diagnostic(.error, file: file, at: error.location, error.message)])
        }
        guard let root, !root.isNull else {
            return (nil, [Diagnostic(.error, file: file, at: SourceLocation(line: 1, column: 1),
                                     "the manifest is empty; a feed needs at least 'resources'")])
        }
        let feed = decodeFeed(root, file: file, reader: &reader)
        return (reader.hasErrors ? nil : feed, reader.sortedDiagnostics)
    }

    private func decodeFeed(_ root: YAMLNode, file: String, reader: inout NodeReader) -> Feed? {
        guard let entries = reader.mapping(root, allowed: Self.feedKeys, what: "a feed") else { return nil }
        let start = SourceLocation(line: 1, column: 1)

        // Name: explicit, or the file's stem.
        var name = ""
        var nameLocation = start
        if let node = entries["name"]?.value {
            nameLocation = node.location
            name = reader.value(node, what: "name") { (text) throws(ValueError) -> String in
                if let problem = FeedName.problem(text) { throw problem }
                return text
            } ?? ""
        } else {
            let stem = Self.stem(of: file)
            if FeedName.problem(stem) == nil {
                name = stem
            } else {
                reader.error("the file name '\(stem)' is not a valid feed name ([a-z0-9][a-z0-9._-]{0,63}); add 'name:'", at: start)
            }
        }

        // Zone first: bare dates and windows are read in it.
        var zone = ZoneCatalog.system.zone
        var zoneName = ZoneCatalog.system.name
        if let node = entries["timezone"]?.value, let found = reader.value(node, what: "timezone", ZoneCatalog.zone(named:)) {
            zone = found
            zoneName = node.scalar ?? found.identifier
        }

        let schedule = entries["schedule"].flatMap { reader.value($0.value, what: "schedule", CronExpression.parse) }

        var windows: [TimeWindow] = []
        if let node = entries["window"]?.value, let items = reader.list(node, what: "window", single: true) {
            if items.isEmpty { reader.error("window must list at least one window, or be left out", at: node.location) }
            for item in items {
                if let window = reader.value(item, what: "a window", TimeWindow.parse) { windows.append(window) }
            }
        }

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

        var jitter = TimeSpan.zero
        if let node = entries["jitter"]?.value, let span = reader.value(node, what: "jitter", { (t) throws(ValueError) in try TimeSpan.parse(t) }) {
            jitter = span
            let shapes = windows.isEmpty && days != nil ? [TimeWindow(start: 0, end: 0)] : windows
            if jitter.seconds > 0, let shortest = shapes.min(by: { $0.lengthMinutes < $1.lengthMinutes }),
               jitter.seconds >= Int64(shortest.lengthMinutes) * 60 {
                reader.warning("jitter \(jitter) is not shorter than the window \(shortest); offsets are reduced modulo the window's length", at: node.location)
            }
        }

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

        let hasTiming = schedule != nil || !windows.isEmpty
        var refresh = hasTiming ? TimeSpan.zero : .hours(1)
        if let node = entries["refresh"]?.value, let span = reader.value(node, what: "refresh", { (t) throws(ValueError) in try TimeSpan.parse(t) }) {
            refresh = span
        }

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

        var limits = FeedLimits()
        if let node = entries["limits"]?.value, let l = reader.mapping(node, allowed: Self.limitKeys, what: "limits") {
            if let n = l["concurrency"]?.value, let v = reader.integer(n, what: "concurrency", range: 1...1024) { limits.concurrency = v }
            if let n = l["max_rate"]?.value, let v = reader.value(n, what: "max_rate", { (t) throws(ValueError) in try ByteRate.parse(t, per: "s") }) { limits.maxRate = v }
            if let n = l["connect_timeout"]?.value, let v = reader.positiveSpan(n, what: "connect_timeout") { limits.connectTimeout = v }
            if let n = l["stall_timeout"]?.value, let v = reader.positiveSpan(n, what: "stall_timeout") { limits.stallTimeout = v }
            if let n = l["max_redirects"]?.value, let v = reader.integer(n, what: "max_redirects", range: 0...100) { limits.maxRedirects = v }
        }

        var prune = false
        if let node = entries["prune"]?.value, let v = reader.boolean(node, what: "prune") { prune = v }

        let clock = ZoneClock(zone)
        var resources: [Resource] = []
        if let node = entries["resources"]?.value {
            if let items = reader.list(node, what: "resources") {
                if items.isEmpty { reader.warning("this feed lists no resources", at: node.location) }
                resources = decodeResources(items, clock: clock, reader: &reader)
            }
        } else {
            reader.error("a feed needs 'resources': a list of things to fetch", at: root.location)
        }

        return Feed(name: name, file: file, nameLocation: nameLocation, schedule: schedule, timeZone: zone, timeZoneName: zoneName,
                    windows: windows, days: days, jitter: jitter, conditions: conditions, refresh: refresh,
                    retry: retry, limits: limits, prune: prune, resources: resources)
    }

    private func decodeResources(_ items: [YAMLNode], clock: ZoneClock, reader: inout NodeReader) -> [Resource] {
        var resources: [Resource] = []
        resources.reserveCapacity(items.count)
        var files: [String: SourceLocation] = [:]
        var folders: [String: SourceLocation] = [:]
        files.reserveCapacity(items.count)
        for item in items {
            guard let entries = reader.mapping(item, allowed: Self.resourceKeys, what: "a resource") else { continue }
            guard let urlNode = entries["url"]?.value else {
                reader.error("a resource needs a 'url'", at: item.location)
                continue
            }
            let url = reader.value(urlNode, what: "url", ResourceURL.parse)

            var path: String?
            var pathNode = urlNode
            if let node = entries["path"]?.value {
                pathNode = node
                path = reader.value(node, what: "path") { (text) throws(ValueError) -> String in
                    if let problem = RelativePath.problem(text) { throw problem }
                    return text
                }
            } else if let url {
                do {
                    if let segment = try url.lastSegment(), !segment.isEmpty {
                        if segment.contains("/") {
                            reader.error("the URL's last segment '\(segment)' holds an encoded '/'; add a 'path'", at: urlNode.location)
                        } else if let problem = RelativePath.problem(segment) {
                            reader.error("the URL's last segment '\(segment)' is not a safe file name (\(problem.message)); add a 'path'", at: urlNode.location)
                        } else {
                            path = segment
                        }
                    } else {
                        reader.error("the URL ends in '/', so the resource needs a 'path'", at: urlNode.location)
                    }
                } catch {
                    reader.error(error.message + "; add a 'path'", at: urlNode.location)
                }
            }

            var sha256: String?
            if let node = entries["sha256"]?.value {
                sha256 = reader.value(node, what: "sha256") { (text) throws(ValueError) -> String in
                    let lowered = text.lowercased()
                    guard lowered.utf8.count == 64, lowered.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
                        throw ValueError("sha256 must be 64 hexadecimal digits, found \(text.count) characters")
                    }
                    return lowered
                }
            }
            let size = entries["size"].flatMap { reader.value($0.value, what: "size", ByteSize.parse) }
            let maxSize = entries["max_size"].flatMap { reader.value($0.value, what: "max_size", ByteSize.parse) }
            if let size, let node = entries["size"]?.value {
                if let maxSize, size > maxSize {
                    reader.error("size \(size.bytes) is larger than max_size \(maxSize.bytes)", at: node.location)
                } else if size > config.maxSize {
                    reader.error("size \(size.bytes) is larger than the global max_size \(config.maxSize) (config)", at: node.location)
                }
            }
            if let maxSize, let node = entries["max_size"]?.value {
                if maxSize.bytes == 0 { reader.error("max_size must be more than 0", at: node.location) }
                if maxSize > config.maxSize {
                    reader.warning("max_size \(maxSize) is above the global max_size \(config.maxSize); the global cap applies", at: node.location)
                }
            }
            let notBefore = entries["not_before"].flatMap { reader.value($0.value, what: "not_before", Timestamp.parse) }?.resolved(in: clock)
            let expires = entries["expires"].flatMap { reader.value($0.value, what: "expires", Timestamp.parse) }?.resolved(in: clock)
            if let notBefore, let expires, expires <= notBefore, let node = entries["expires"]?.value {
                reader.error("expires is not after not_before: the resource could never be fetched", at: node.location)
            }
            var priority = Priority.normal
            if let node = entries["priority"]?.value,
               let value = reader.choice(node, what: "priority", Priority.allCases.map { ($0.rawValue, $0) }) {
                priority = value
            }
            var headers: [HeaderField] = []
            if let node = entries["headers"]?.value {
                if case .mapping(let pairs) = node.content {
                    var seen: [String: SourceLocation] = [:]
                    for pair in pairs {
                        guard let name = reader.value(pair.key, what: "a header name", { (text) throws(ValueError) -> String in
                            if let problem = HeaderTemplate.nameProblem(text) { throw problem }
                            return text
                        }) else { continue }
                        if let first = seen[name.lowercased()] {
                            reader.error("header '\(name)' is given twice (first at line \(first.line))", at: pair.key.location)
                            continue
                        }
                        seen[name.lowercased()] = pair.key.location
                        if let value = reader.value(pair.value, what: "header '\(name)'", HeaderTemplate.parse) {
                            headers.append(HeaderField(name: name, value: value))
                        }
                    }
                } else {
                    reader.error("headers must be a mapping of header names to values, found \(node.kindDescription)", at: node.location)
                }
            }

            guard let url, let path else { continue }
            if let first = files[path] {
                reader.error("path '\(path)' is already used by the resource at line \(first.line)", at: pathNode.location)
                continue
            }
            if let other = folders[path] {
                reader.error("path '\(path)' is also a folder of the resource at line \(other.line)", at: pathNode.location)
                continue
            }
            var ancestor = Substring(path)
            var conflict = false
            while let slash = ancestor.lastIndex(of: "/") {
                ancestor = ancestor[..<slash]
                let key = String(ancestor)
                if let file = files[key] {
                    reader.error("path '\(path)' would put a folder where the resource at line \(file.line) keeps its file '\(key)'", at: pathNode.location)
                    conflict = true
                    break
                }
                if folders[key] != nil { break }  // its ancestors are recorded already
                folders[key] = item.location
            }
            if conflict { continue }
            files[path] = item.location

            resources.append(Resource(url: url, path: path, sha256: sha256, size: size?.bytes, maxSize: maxSize?.bytes,
                                      notBefore: notBefore, expires: expires, priority: priority, headers: headers,
                                      location: item.location))
        }
        return resources
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
