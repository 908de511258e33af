/// Reads typed values out of YAML nodes and collects every problem as a diagnostic,
/// so one pass reports all errors in a file — up to `maxErrors`: a file made to hurt costs
/// one screen of errors, not minutes and memory for a million (`finished` says so).
struct NodeReader {
    /// The errors one file reports at most.
    static let maxErrors = 1000

    let file: String
    private(set) var diagnostics: [Diagnostic] = []
    /// Where the first error past `maxErrors` was found.
    private(set) var firstDropped: SourceLocation?

    init(file: String) {
        self.file = file
    }

    /// The diagnostics in file order (problems are found in key order, not line order).
    var sortedDiagnostics: [Diagnostic] {
        let origin = SourceLocation(line: 0, column: 0)
        return diagnostics.enumerated().sorted {
            let a = $0.element.location ?? origin, b = $1.element.location ?? origin
            return a != b ? a < b : $0.offset < $1.offset
        }.map(\.element)
    }

    var hasErrors: Bool { errorCount > 0 }
    /// How many errors were found.
    private(set) var errorCount = 0
    /// True once `maxErrors` errors were found: loops over a file's entries stop.
    var isFull: Bool { errorCount >= Self.maxErrors }

    mutating func error(_ message: String, at location: SourceLocation) {
        errorCount += 1
        guard errorCount <= Self.maxErrors else {
            if firstDropped == nil { firstDropped = location }
            return
        }
        diagnostics.append(Diagnostic(.error, file: file, at: location, message))
    }

    /// Takes over another reader's diagnostics, within `maxErrors`.
    mutating func absorb(_ other: NodeReader) {
        for diagnostic in other.diagnostics {
            if diagnostic.severity == .warning {
                diagnostics.append(diagnostic)
            } else {
                error(diagnostic.message, at: diagnostic.location ?? SourceLocation(line: 1, column: 1))
            }
        }
        if let dropped = other.firstDropped { error("", at: dropped) }
    }

    /// The diagnostics in file order, and when errors were left out (`maxErrors` reached, or
    /// the reading stopped at `stoppedAt`) one more that says so, where that happened.
    func finished(stoppedAt: SourceLocation? = nil) -> [Diagnostic] {
        guard let at = stoppedAt ?? firstDropped else { return sortedDiagnostics }
        var all = sortedDiagnostics
        all.append(Diagnostic(.error, file: file, at: at, "more than \(Self.maxErrors) errors; the rest of the file is not checked"))
        return all
    }

    mutating func warning(_ message: String, at location: SourceLocation) {
        diagnostics.append(Diagnostic(.warning, file: file, at: location, message))
    }

    /// Reports a value error at its exact column when the scalar sits on one line as written.
    mutating func error(_ problem: ValueError, in node: YAMLNode) {
        error(problem.message, at: location(of: problem, in: node))
    }

    func location(of problem: ValueError, in node: YAMLNode) -> SourceLocation {
        guard node.isVerbatim else { return node.location }
        return node.textLocation.advanced(by: problem.offset)
    }

    /// A mapping's entries by key. Reports a non-mapping, duplicate keys, non-scalar keys and
    /// keys outside `allowed` (with a "did you mean" hint).
    mutating func mapping(_ node: YAMLNode, allowed: [String], what: String) -> Entries? {
        if node.isOverLimit { return nil }  // reported by the parser, once
        guard case .mapping(let pairs) = node.content else {
            error("\(what) must be a mapping of keys to values, found \(node.kindDescription)", at: node.location)
            return nil
        }
        var entries = Entries()
        entries.pairs.reserveCapacity(min(pairs.count, allowed.count))
        for pair in pairs {
            if isFull {
                error("", at: pair.key.location)  // past the limit: only where checking stopped is kept
                break
            }
            guard checkLength(pair.key, ScalarLimit.key) else { continue }
            guard let key = pair.key.scalar else {
                error("a key must be a plain word, found \(pair.key.kindDescription)", at: pair.key.location)
                continue
            }
            if let first = entries[key] {
                error("duplicate key '\(key)' (first at line \(first.key.location.line))", at: pair.key.location)
                continue
            }
            guard allowed.contains(key) else {
                var message = "unknown key '\(key)' in \(what)"
                if let guess = Suggestion.closest(to: key, among: allowed) { message += " (did you mean '\(guess)'?)" }
                error(message, at: pair.key.location)
                continue
            }
            entries.pairs.append((key, pair))
        }
        return entries
    }

    /// A mapping's entries by key: a handful at most, found by a linear search (cheaper than
    /// hashing for a manifest's many small mappings).
    struct Entries {
        var pairs: [(name: String, pair: (key: YAMLNode, value: YAMLNode))] = []

        subscript(_ name: String) -> (key: YAMLNode, value: YAMLNode)? {
            pairs.first { $0.name == name }?.pair
        }
    }

    /// False, reporting nothing, for a scalar the parser found over its limit; false with
    /// an error for one over `limit` here (an alias can repeat a scalar written where a
    /// longer one is allowed). A limit error replaces every other error of the value.
    mutating func checkLength(_ node: YAMLNode, _ limit: ScalarLimit) -> Bool {
        if node.isOverLimit { return false }
        if let text = node.scalar, let problem = limit.problem(text.utf8.count) {
            error(problem, at: node.isVerbatim ? node.textLocation : node.location)
            return false
        }
        return true
    }

    /// A scalar's text; reports null, lists and mappings.
    mutating func string(_ node: YAMLNode, what: String, limit: ScalarLimit = .value) -> String? {
        guard checkLength(node, limit) else { return nil }
        guard let text = node.scalar, !node.isNull else {
            error("\(what) must be a string, found \(node.kindDescription)", at: node.location)
            return nil
        }
        return text
    }

    /// A scalar parsed by `parse`; problems are reported at their column.
    mutating func value<T>(_ node: YAMLNode, what: String, limit: ScalarLimit = .value, _ parse: (String) throws(ValueError) -> T) -> T? {
        guard checkLength(node, limit) else { return nil }
        guard let text = node.scalar, !node.isNull else {
            error("\(what) must be a value, found \(node.kindDescription)", at: node.location)
            return nil
        }
        do {
            return try parse(text)
        } catch {
            self.error(error, in: node)
            return nil
        }
    }

    /// A whole number in `range`.
    mutating func integer(_ node: YAMLNode, what: String, range: ClosedRange<Int>) -> Int? {
        value(node, what: what) { (text) throws(ValueError) -> Int in
            guard let number = Int(text), text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") }) else {
                throw ValueError("\(what) must be a whole number, found '\(text)'")
            }
            guard range.contains(number) else {
                let upper = range.upperBound == Int.max ? "" : " to \(range.upperBound)"
                throw ValueError("\(what) must be \(upper.isEmpty ? "at least \(range.lowerBound)" : "from \(range.lowerBound)\(upper)"), found \(number)")
            }
            return number
        }
    }

    /// `true` or `false`, and nothing else (YAML 1.1's yes/no/on/off are refused).
    mutating func boolean(_ node: YAMLNode, what: String) -> Bool? {
        value(node, what: what) { (text) throws(ValueError) -> Bool in
            guard case .scalar(_, .plain) = node.content else {
                throw ValueError("\(what) must be true or false without quotes")
            }
            switch text {
            case "true": return true
            case "false": return false
            default: throw ValueError("\(what) must be true or false, found '\(text)'")
            }
        }
    }

    /// One of `choices`.
    mutating func choice<T>(_ node: YAMLNode, what: String, _ choices: [(String, T)]) -> T? {
        value(node, what: what) { (text) throws(ValueError) -> T in
            if let match = choices.first(where: { $0.0 == text }) { return match.1 }
            let names = choices.map(\.0)
            var message = "\(what) must be \(names.dropLast().joined(separator: ", ")) or \(names.last!), found '\(text)'"
            if let guess = Suggestion.closest(to: text, among: names) { message += " (did you mean '\(guess)'?)" }
            throw ValueError(message)
        }
    }

    /// The items of a list; a single scalar counts as a list of one when `single` is true.
    mutating func list(_ node: YAMLNode, what: String, single: Bool = false) -> [YAMLNode]? {
        if node.isOverLimit { return nil }  // reported by the parser, once
        switch node.content {
        case .sequence(let items): return items
        case .scalar where single && !node.isNull: return [node]
        default:
            error("\(what) must be a list, found \(node.kindDescription)", at: node.location)
            return nil
        }
    }
}
