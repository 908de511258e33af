/// A YAML node with the place it starts in its file: what the manifest decoder reads.
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

    /// The node's content.
    public var content: Content
    /// Where the node starts.
    public var location: SourceLocation
    /// An explicit tag such as `!!str`, if the source gave one.
    public var tag: String?
    /// True when a scalar's text stands in the source character for character on one line
    /// (no escapes, no folding), so a column inside the text maps to a column in the file.
    public var isVerbatim: Bool

    /// Creates a node.
    public init(_ content: Content, at location: SourceLocation, tag: String? = nil, isVerbatim: Bool = false) {
        self.content = content
        self.location = location
        self.tag = tag
        self.isVerbatim = isVerbatim
    }

    /// True for the plain scalars YAML reads as null: empty, `~`, `null`.
    public var isNull: Bool {
        guard tag == nil, case .scalar(let text, .plain) = content else { return false }
        return text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL"
    }

    /// The scalar's text, or nil for a sequence or mapping.
    public var scalar: String? {
        if case .scalar(let text, _) = content { return text }
        return nil
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
        if case .scalar(_, let style) = content, style == .singleQuoted || style == .doubleQuoted {
            return location.advanced(by: 1)
        }
        return location
    }
}
