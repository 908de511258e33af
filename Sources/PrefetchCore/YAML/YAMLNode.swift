/// A YAML node with the place it starts in its file: what the manifest decoder reads.
///
/// A list or mapping keeps its children in a shared box: copying a node (an alias repeats
/// its anchor's node) copies no children, and the box takes its tree apart with a loop when
/// the last reference goes, so releasing a tree never recurses as deep as the tree is (the
/// depth of a tree that aliases repeat inside each other is not bounded by the nesting rule).
public struct YAMLNode: Sendable {
    /// How a scalar was written; a quoted scalar is always a string.
    public enum ScalarStyle: Sendable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    /// The node's content.
    public enum Content: Sendable {
        case scalar(String, ScalarStyle)
        case sequence([YAMLNode])
        case mapping([(key: YAMLNode, value: YAMLNode)])
    }

    /// A scalar's text ("" for a collection), and a collection's children (nil for a
    /// scalar): plain fields, not an enum with payloads, so that copying a node (a manifest's
    /// decoder does, hundreds of thousands of times) is two retains, not a call through the
    /// runtime's value witnesses.
    private var text: String
    private var children: Children?
    private var style: ScalarStyle
    /// Where the node starts.
    public var location: SourceLocation
    /// An explicit tag such as `!!str`, if the source gave one.
    public var tag: String?
    /// True when a scalar's text stands in the source character for character on one line
    /// (no escapes, no folding), so a column inside the text maps to a column in the file.
    public var isVerbatim: Bool
    /// True for a scalar longer than its place in the file allows (SPEC §7): the parser has
    /// reported it and kept none of its text; readers skip it without a second error.
    public var isOverLimit: Bool

    /// Creates a node.
    public init(_ content: Content, at location: SourceLocation, tag: String? = nil, isVerbatim: Bool = false, isOverLimit: Bool = false) {
        switch content {
        case .scalar(let text, let style): (self.text, children, self.style) = (text, nil, style)
        case .sequence(let items): (text, children, style) = ("", Children(items: items), .plain)
        case .mapping(let pairs): (text, children, style) = ("", Children(pairs: pairs), .plain)
        }
        self.location = location
        self.tag = tag
        self.isVerbatim = isVerbatim
        self.isOverLimit = isOverLimit
    }

    /// The node's content.
    public var content: Content {
        guard let children else { return .scalar(text, style) }
        return children.isMapping ? .mapping(children.pairs) : .sequence(children.items)
    }

    /// True for the plain scalars YAML reads as null: empty, `~`, `null`.
    public var isNull: Bool {
        guard tag == nil, !isOverLimit, children == nil, style == .plain else { return false }
        // By length first: every value is asked, and few are 0, 1 or 4 bytes long.
        switch text.utf8.count {
        case 0: return true
        case 1: return text == "~"
        case 4: return text == "null" || text == "Null" || text == "NULL"
        default: return false
        }
    }

    /// The scalar's text, or nil for a sequence or mapping.
    public var scalar: String? {
        children == nil ? text : nil
    }

    /// A word for the node's kind in error messages ("a list", "a mapping", ...).
    public var kindDescription: String {
        switch content {
        case .sequence: return "a list"
        case .mapping: return "a mapping"
        case .scalar(let text, let style):
            if isNull { return "nothing (null)" }
            if style == .plain, tag == nil {
                if text == "true" || text == "false" { return "a boolean" }
                if text.first.map({ $0.isNumber || $0 == "-" || $0 == "+" }) == true,
                   Double(text) != nil { return "a number" }
            }
            return "a string"
        }
    }

    /// The column where the scalar's text itself begins (after an opening quote).
    public var textLocation: SourceLocation {
        if children == nil, style == .singleQuoted || style == .doubleQuoted {
            return location.advanced(by: 1)
        }
        return location
    }

    fileprivate var isCollection: Bool {
        children != nil
    }

    /// Hands this node's box to `doomed` when this node holds its last reference, leaving
    /// the node without children: one step of taking a tree apart without recursion.
    fileprivate mutating func surrender(into doomed: inout [Children]) {
        guard var children else { return }
        (text, self.children, style) = ("", nil, .plain)
        if isKnownUniquelyReferenced(&children) { doomed.append(children) }
    }

    /// A list's items or a mapping's pairs. Immutable once built: only `deinit`, which holds
    /// the last reference, empties it.
    fileprivate final class Children: @unchecked Sendable {
        let isMapping: Bool
        var items: [YAMLNode]
        var pairs: [(key: YAMLNode, value: YAMLNode)]
        /// Whether a child is a list or mapping: only then is there a tree below to take apart.
        private let nests: Bool

        init(items: [YAMLNode]) {
            isMapping = false
            self.items = items
            pairs = []
            nests = items.contains { $0.isCollection }
        }

        init(pairs: [(key: YAMLNode, value: YAMLNode)]) {
            isMapping = true
            items = []
            self.pairs = pairs
            nests = pairs.contains { $0.key.isCollection || $0.value.isCollection }
        }

        /// Takes the tree below apart with an explicit list: each box whose last reference
        /// is a child here is emptied in turn, so every box's own `deinit` finds nothing left.
        deinit {
            guard nests else { return }  // scalars only: released flat as it is
            var doomed: [Children] = []
            empty(into: &doomed)
            while let next = doomed.popLast() {
                next.empty(into: &doomed)
            }
        }

        private func empty(into doomed: inout [Children]) {
            var items: [YAMLNode] = []
            var pairs: [(key: YAMLNode, value: YAMLNode)] = []
            swap(&items, &self.items)
            swap(&pairs, &self.pairs)
            // Mutating the taken arrays copies them first if someone else still holds them;
            // then every box in them is shared and stays, as it must.
            for index in items.indices { items[index].surrender(into: &doomed) }
            for index in pairs.indices {
                pairs[index].key.surrender(into: &doomed)
                pairs[index].value.surrender(into: &doomed)
            }
        }
    }
}
