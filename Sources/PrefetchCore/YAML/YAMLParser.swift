internal import CYAML

/// A YAML syntax error, located at the place libyaml reported.
public struct YAMLSyntaxError: Error, Sendable {
    /// Where the problem is.
    public var location: SourceLocation
    /// What is wrong, in words a manifest author can act on.
    public var message: String
}

/// Parses YAML text into a `YAMLNode` tree with libyaml's event API.
///
/// One document per file; anchors and aliases are resolved by reference (an alias
/// repeats its anchor's node); an unknown alias is an error.
public enum YAMLParser {
    /// Parses `bytes` as a single YAML document. Returns nil for a file with no document.
    ///
    /// With `streaming`, each item of the list under that top-level key is handed to the
    /// handler as soon as it is complete and is not kept in the tree (the list node stays,
    /// empty): a 100,000-resource manifest never holds all its nodes at once.
    public static func parse(_ bytes: [UInt8], streaming: (key: String, handler: (YAMLNode) -> Void)? = nil) throws(YAMLSyntaxError) -> YAMLNode? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            throw YAMLSyntaxError(location: SourceLocation(line: 1, column: 1), message: "out of memory")
        }
        defer { yaml_parser_delete(&parser) }

        return try bytes.withUnsafeBufferPointer { (buffer) throws(YAMLSyntaxError) -> YAMLNode? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
            var builder = TreeBuilder(streaming: streaming)
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(&parser, &event) == 1 else {
                    throw syntaxError(parser, bytes: buffer)
                }
                defer { yaml_event_delete(&event) }
                if event.type == YAML_STREAM_END_EVENT { break }
                try builder.consume(event)
            }
            return builder.root
        }
    }

    private static func location(_ mark: yaml_mark_t) -> SourceLocation {
        SourceLocation(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    /// Turns libyaml's problem/context into one message, with hints for the usual traps.
    private static func syntaxError(_ parser: yaml_parser_t, bytes: UnsafeBufferPointer<UInt8>) -> YAMLSyntaxError {
        let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
        let context = parser.context.map { String(cString: $0) }
        // For a scanner error the alias or anchor starts at the context mark.
        var at = location(parser.problem_mark)
        let message: String
        if context == "while scanning an alias" {
            at = location(parser.context_mark)
            message = "a plain value cannot start with '*' (YAML reads it as an alias); quote it, as in schedule: \"*/15 * * * *\""
        } else if problem == "found character that cannot start any token" {
            let index = Int(parser.problem_mark.index)
            let character = index < bytes.count ? bytes[index] : 0
            if character == UInt8(ascii: "\t") {
                message = "tabs cannot indent YAML; use spaces"
            } else if character == UInt8(ascii: "@") || character == UInt8(ascii: "`") {
                message = "a plain value cannot start with '\(UnicodeScalar(character))'; quote the value, as in schedule: \"@daily\""
            } else {
                message = "a plain value cannot start with this character; quote the value"
            }
        } else if problem.contains("tab") || context?.contains("tab") == true {
            message = "tabs cannot indent YAML; use spaces"
        } else if let context, Int(parser.problem_mark.index) >= bytes.count, parser.context_mark.index < parser.problem_mark.index {
            // An unclosed '[', '{' or quote is found missing only at the end of the file: point
            // at where it opens, not at the empty last line.
            at = location(parser.context_mark)
            message = problem.contains("end of stream")
                ? "the file ends before this is closed (\(context) that starts here)"
                : "\(problem) before the end of the file (\(context) that starts here)"
        } else if let context {
            message = "\(problem) (\(context))"
        } else {
            message = problem
        }
        // A mark at the end of a file without a final line break is past its last line.
        return YAMLSyntaxError(location: SourceText(bytes: Array(bytes)).clamped(at), message: message)
    }

    /// Assembles nodes from events with an explicit stack. Frames are objects so that
    /// appending to an open sequence or mapping mutates it in place (an enum payload
    /// would be copied on every item, which is quadratic in the list's length).
    private struct TreeBuilder {
        final class Frame {
            let isMapping: Bool
            let location: SourceLocation
            let anchor: String?
            let tag: String?
            var items: [YAMLNode] = []
            var pairs: [(key: YAMLNode, value: YAMLNode)] = []
            var pendingKey: YAMLNode?

            init(isMapping: Bool, location: SourceLocation, anchor: String?, tag: String?) {
                self.isMapping = isMapping
                self.location = location
                self.anchor = anchor
                self.tag = tag
            }
        }

        let streaming: (key: String, handler: (YAMLNode) -> Void)?
        var stack: [Frame] = []
        var anchors: [String: YAMLNode] = [:]
        var root: YAMLNode?
        var documents = 0

        mutating func consume(_ event: yaml_event_t) throws(YAMLSyntaxError) {
            let at = YAMLParser.location(event.start_mark)
            switch event.type {
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw YAMLSyntaxError(location: at, message: "a second YAML document starts here; one feed per file")
                }
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
                let style: YAMLNode.ScalarStyle
                switch scalar.style {
                case YAML_SINGLE_QUOTED_SCALAR_STYLE: style = .singleQuoted
                case YAML_DOUBLE_QUOTED_SCALAR_STYLE: style = .doubleQuoted
                case YAML_LITERAL_SCALAR_STYLE: style = .literal
                case YAML_FOLDED_SCALAR_STYLE: style = .folded
                default: style = .plain
                }
                let quotes = style == .singleQuoted || style == .doubleQuoted ? 2 : 0
                // Verbatim when the source is the text as written (errors then point at their
                // column). ASCII text is as wide as its bytes, so only other text is counted by
                // character (grapheme breaking is costly on a manifest's thousands of scalars).
                let width = Int(event.end_mark.column - event.start_mark.column)
                let verbatim = (style == .plain || quotes == 2) && event.start_mark.line == event.end_mark.line
                    && (width == scalar.length + quotes || width == text.count + quotes)
                let node = YAMLNode(.scalar(text, style), at: at, tag: Self.string(scalar.tag), isVerbatim: verbatim)
                add(node, anchor: Self.string(scalar.anchor))
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.data.alias.anchor) ?? ""
                guard var node = anchors[name] else {
                    throw YAMLSyntaxError(location: at, message: "unknown alias '*\(name)'; if this is a cron expression, quote it")
                }
                node.location = at
                add(node, anchor: nil)
            case YAML_SEQUENCE_START_EVENT:
                let start = event.data.sequence_start
                stack.append(Frame(isMapping: false, location: at, anchor: Self.string(start.anchor), tag: Self.string(start.tag)))
            case YAML_MAPPING_START_EVENT:
                let start = event.data.mapping_start
                stack.append(Frame(isMapping: true, location: at, anchor: Self.string(start.anchor), tag: Self.string(start.tag)))
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                guard let frame = stack.popLast() else { return }
                let content: YAMLNode.Content = frame.isMapping ? .mapping(frame.pairs) : .sequence(frame.items)
                frame.items = []
                frame.pairs = []
                add(YAMLNode(content, at: frame.location, tag: frame.tag), anchor: frame.anchor)
            default:
                break
            }
        }

        private mutating func add(_ node: YAMLNode, anchor: String?) {
            if let anchor { anchors[anchor] = node }
            guard let top = stack.last else {
                root = node
                return
            }
            if !top.isMapping {
                if let streaming, stack.count == 2, stack[0].isMapping, stack[0].pendingKey?.scalar == streaming.key {
                    streaming.handler(node)
                } else {
                    top.items.append(node)
                }
            } else if let key = top.pendingKey {
                top.pairs.append((key: key, value: node))
                top.pendingKey = nil
            } else {
                top.pendingKey = node
            }
        }

        private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            guard let pointer else { return nil }
            return String(cString: pointer)
        }
    }
}
