internal import CYAML

/// Reads each item of a streamed list straight from libyaml's events, with no tree built
/// for it: an item that is a mapping of known keys (`keys`, matched on their bytes) to
/// scalars or to flat lists and mappings of scalars becomes one node per key (`fields`, by
/// the key's index in `keys`; nil when the key is not there), handed to `handler`, which may
/// take them out. A
/// manifest's 100,000 resources then cost no mapping, no entry array and no key string each.
///
/// For clean files only (`YAMLParser.parseFile`): anything else in an item — an unknown or
/// repeated key, an anchor, a tag, an alias, deeper nesting, a scalar over its limit
/// (SPEC §7), an item that is not a mapping — and the collector `refuses`: the parse stops,
/// and the caller reads the file again the whole way, which reports it. So the collector
/// decides nothing a message depends on; it only takes the clean case's short way.
final class FlatItemCollector {
    /// What an event meant.
    enum Step {
        /// The item goes on.
        case more
        /// The item ended; it stood for `weight` nodes (as the tree builder counts them).
        case done(weight: Int)
        /// The item is one to report: the parse must stop.
        case refused
    }

    /// The keys an item may have, as bytes.
    private let keys: [[UInt8]]
    private let limits: ScalarLimits
    /// Called with each item's fields, where its mapping starts, and the byte offset there.
    private let handler: (_ fields: inout [YAMLNode?], _ at: SourceLocation, _ offset: Int) -> Void

    /// The rules of `limits` each key's value matches, found once (nil until the first item).
    private var keyRules: [UInt64]?
    private var fields: [YAMLNode?]
    /// The keys the item has so far, a bit each (at most 64 keys).
    private var given: UInt64 = 0
    /// 0 between items, 1 inside an item's mapping, 2 inside the collection a key holds.
    private var depth = 0
    /// The key whose value comes next; nil when a key comes next.
    private var key: Int?
    private var itemAt = SourceLocation(line: 1, column: 1)
    private var itemOffset = 0
    private var weight = 0
    /// The collection a key holds, while it is read: a list's items, or a mapping's pairs.
    private var childIsMapping = false
    private var childAt = SourceLocation(line: 1, column: 1)
    private var childItems: [YAMLNode] = []
    private var childPairs: [(key: YAMLNode, value: YAMLNode)] = []
    private var childKey: YAMLNode?

    init(keys: [String], limits: ScalarLimits, handler: @escaping (_ fields: inout [YAMLNode?], _ at: SourceLocation, _ offset: Int) -> Void) {
        precondition(keys.count <= 64, "a key's bit in `given`")
        self.keys = keys.map { Array($0.utf8) }
        self.limits = limits
        self.handler = handler
        fields = [YAMLNode?](repeating: nil, count: keys.count)
    }

    /// Takes one event of an item. `alive` is the rules of `limits` the items' place
    /// matches, `level` the nesting depth of the list (the tree builder's stack).
    func consume(_ event: yaml_event_t, alive: UInt64, level: Int) -> Step {
        let at = YAMLParser.location(event.start_mark)
        switch event.type {
        case YAML_MAPPING_START_EVENT where depth == 0:
            guard event.data.mapping_start.anchor == nil, event.data.mapping_start.tag == nil else { return .refused }
            if keyRules == nil {
                keyRules = keys.map { limits.narrow(alive, depth: level, step: .key(String(decoding: $0, as: UTF8.self))) }
            }
            depth = 1
            key = nil
            itemAt = at
            itemOffset = Int(event.start_mark.index)
            weight = 1
            return .more
        case YAML_MAPPING_END_EVENT where depth == 1:
            depth = 0
            handler(&fields, itemAt, itemOffset)  // it may take the nodes (`Optional.take`): no copy each
            while given != 0 {
                fields[given.trailingZeroBitCount] = nil
                given &= given - 1
            }
            return .done(weight: weight)
        case YAML_SCALAR_EVENT where depth == 1:
            let scalar = event.data.scalar
            guard scalar.anchor == nil, scalar.tag == nil else { return .refused }
            weight += 1
            guard let index = key else {
                // A key: one of `keys`, once.
                guard limits.key.problem(scalar.length) == nil,
                      let found = find(UnsafeBufferPointer(start: scalar.value, count: scalar.length)),
                      given & (1 << found) == 0 else { return .refused }
                given |= 1 << found
                key = found
                return .more
            }
            guard limits.limit(alive: keyRules![index], depth: level + 1).problem(scalar.length) == nil else { return .refused }
            fields[index] = YAMLParser.scalarNode(event, at: at)
            key = nil
            return .more
        case YAML_SEQUENCE_START_EVENT where depth == 1 && key != nil, YAML_MAPPING_START_EVENT where depth == 1 && key != nil:
            let isMapping = event.type == YAML_MAPPING_START_EVENT
            let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
            let tag = isMapping ? event.data.mapping_start.tag : event.data.sequence_start.tag
            guard anchor == nil, tag == nil, level + 2 < YAMLParser.maxDepth else { return .refused }
            depth = 2
            childIsMapping = isMapping
            childAt = at
            weight += 1
            return .more
        case YAML_SCALAR_EVENT where depth == 2:
            let scalar = event.data.scalar
            guard scalar.anchor == nil, scalar.tag == nil else { return .refused }
            weight += 1
            let alive = keyRules![key!]
            let limit: ScalarLimit
            if !childIsMapping {
                limit = limits.limit(alive: limits.narrow(alive, depth: level + 1, step: .item), depth: level + 2)
            } else if let name = childKey?.scalar {
                limit = limits.limit(alive: limits.narrow(alive, depth: level + 1, step: .key(name)), depth: level + 2)
            } else {
                limit = limits.key
            }
            guard limit.problem(scalar.length) == nil else { return .refused }
            let node = YAMLParser.scalarNode(event, at: at)
            if !childIsMapping {
                childItems.append(node)
            } else if let name = childKey {
                childPairs.append((key: name, value: node))
                childKey = nil
            } else {
                childKey = node
            }
            return .more
        case YAML_SEQUENCE_END_EVENT where depth == 2 && !childIsMapping, YAML_MAPPING_END_EVENT where depth == 2 && childIsMapping:
            let content: YAMLNode.Content = childIsMapping ? .mapping(childPairs) : .sequence(childItems)
            childItems = []
            childPairs = []
            fields[key!] = YAMLNode(content, at: childAt)
            key = nil
            depth = 1
            return .more
        default:
            return .refused
        }
    }

    /// The index of the key with these bytes.
    private func find(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        for (index, key) in keys.enumerated() where key.count == bytes.count {
            if key.withUnsafeBufferPointer({ $0.elementsEqual(bytes) }) { return index }
        }
        return nil
    }
}
