internal import CYAML

/// A YAML syntax error, located at the place libyaml reported.
public struct YAMLSyntaxError: Error, Sendable {
    /// Where the problem is.
    public var location: SourceLocation
    /// What is wrong, in words a manifest author can act on.
    public var message: String
}

/// A parsed document: its root node, and the scalars that broke a length limit (each
/// reported once, where it starts; the rest of the file is still read).
public struct YAMLDocument: Sendable {
    /// The root node; nil for a file with no document.
    public var root: YAMLNode?
    /// Scalars longer than their place allows (SPEC §7), in file order.
    public var problems: [YAMLSyntaxError]
    /// Where reading stopped because `stopWhen` said so; the tree is then incomplete.
    public var stoppedAt: SourceLocation?
}

/// Parses YAML text into a `YAMLNode` tree with libyaml's event API, within the limits of
/// SPEC §7: the bytes are checked first (UTF-8, printable), nesting is counted from the
/// events as they arrive and reading stops at level 33 (libyaml's scanner is quadratic in
/// flow nesting: the rest of such a file is never read), aliases repeat their anchor's
/// node without copying it and may stand for at most 1,000,000 nodes in all, and each
/// scalar is measured against its place's limit before its text is copied.
///
/// One document per file; an unknown alias is an error.
public enum YAMLParser {
    /// The deepest level a collection may open at; the root collection is level 1.
    public static let maxDepth = 32
    /// The most nodes all the aliases of a file may stand for together.
    public static let maxAliasNodes = 1_000_000

    /// Where the items of the list under a top-level key go, instead of into the tree.
    enum ItemStream {
        /// Each item as a node, to `handler`.
        case nodes(key: String, handler: (YAMLNode) -> Void)
        /// Each item's events, to `collector`, which builds no tree.
        case events(key: String, collector: FlatItemCollector)
    }

    /// Parses `bytes` as a single YAML document.
    ///
    /// With `streaming`, each item of the list under that top-level key is handed to the
    /// handler as soon as it is complete and is not kept in the tree (the list node stays,
    /// empty): a 100,000-resource manifest never holds all its nodes at once.
    ///
    /// `stopWhen`, asked after each event with the number of `problems` so far, ends the
    /// reading early (a file with an error in each of its million entries is not read to
    /// its end).
    public static func parse(_ bytes: [UInt8], limits: ScalarLimits,
                             streaming: (key: String, handler: (YAMLNode) -> Void)? = nil,
                             stopWhen: ((_ problems: Int) -> Bool)? = nil) throws(YAMLSyntaxError) -> YAMLDocument {
        return try bytes.withUnsafeBufferPointer { (buffer) throws(YAMLSyntaxError) -> YAMLDocument in
            if let problem = YAMLText.firstProblem(buffer) { throw problem }
            return try run(limits: limits, streaming: streaming.map { .nodes(key: $0.key, handler: $0.handler) }, stopWhen: stopWhen,
                           input: { yaml_parser_set_input_string(&$0, buffer.baseAddress, buffer.count) },
                           error: { syntaxError($0, bytes: buffer) })
        }
    }

    /// Parses the regular file open as `file` as `parse` parses its bytes, reading it in
    /// checked chunks (`YAMLFileInput`) instead of whole; at most `limit` bytes. Nil when the
    /// input or the syntax failed: the caller reads the file whole and parses it with `parse`,
    /// which reports why, where. (A document with `problems` is returned; it is not clean either.)
    /// With `.events`, nil too when the collector refused an item (`FlatItemCollector`).
    static func parseFile(_ file: FileDescriptor, limit: Int, limits: ScalarLimits,
                          streaming: ItemStream? = nil,
                          stopWhen: ((_ problems: Int) -> Bool)? = nil) -> YAMLDocument? {
        let input = YAMLFileInput(file, limit: limit)
        let handler: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int, UnsafeMutablePointer<Int>?) -> Int32 = {
            data, buffer, size, sizeRead in
            let input = Unmanaged<YAMLFileInput>.fromOpaque(data!).takeUnretainedValue()
            guard let count = input.read(into: buffer!, size: size) else { return 0 }
            sizeRead!.pointee = count
            return 1
        }
        let document = try? withExtendedLifetime(input) { () throws(YAMLSyntaxError) -> YAMLDocument in
            try run(limits: limits, streaming: streaming, stopWhen: stopWhen,
                    input: { yaml_parser_set_input(&$0, handler, Unmanaged.passUnretained(input).toOpaque()) },
                    error: { _ in YAMLSyntaxError(location: SourceLocation(line: 1, column: 1), message: "") })
        }
        return input.failed ? nil : document
    }

    /// The event loop: libyaml's events, from the input `input` sets, into a tree.
    private static func run(limits: ScalarLimits, streaming: ItemStream?,
                            stopWhen: ((_ problems: Int) -> Bool)?, input: (inout yaml_parser_t) -> Void,
                            error: (yaml_parser_t) -> YAMLSyntaxError) throws(YAMLSyntaxError) -> YAMLDocument {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            throw YAMLSyntaxError(location: SourceLocation(line: 1, column: 1), message: "out of memory")
        }
        defer { yaml_parser_delete(&parser) }
        input(&parser)
        yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING)
        var builder = TreeBuilder(limits: limits, streaming: streaming)
        var event = yaml_event_t()
        while true {
            guard yaml_parser_parse(&parser, &event) == 1 else {
                throw error(parser)
            }
            defer { yaml_event_delete(&event) }
            if event.type == YAML_STREAM_END_EVENT { break }
            try builder.consume(event)
            if let stopWhen, stopWhen(builder.problems.count) {
                return YAMLDocument(root: nil, problems: builder.problems, stoppedAt: location(event.end_mark))
            }
        }
        return YAMLDocument(root: builder.root, problems: builder.problems, stoppedAt: nil)
    }

    static func location(_ mark: yaml_mark_t) -> SourceLocation {
        SourceLocation(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    /// Turns libyaml's problem/context into one message, with hints for the usual traps.
    private static func syntaxError(_ parser: yaml_parser_t, bytes: UnsafeBufferPointer<UInt8>) -> YAMLSyntaxError {
        let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
        let context = parser.context.map { String(cString: $0) }
        // For a scanner error the alias or anchor starts at the context mark.
        var at = location(parser.problem_mark)
        let message: String
        if parser.error == YAML_READER_ERROR {
            // Found by `YAMLText` first; libyaml gives such a problem a byte offset, no mark.
            at = YAMLText.location(ofByte: Int(parser.problem_offset), in: bytes)
            message = problem
        } else if context == "while scanning an alias" {
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

    /// How libyaml says a scalar was written.
    static func style(_ style: yaml_scalar_style_t) -> YAMLNode.ScalarStyle {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: return .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: return .literal
        case YAML_FOLDED_SCALAR_STYLE: return .folded
        default: return .plain
        }
    }

    /// The node of a scalar event (within its limit), starting `at`: the tree builder's and
    /// `FlatItemCollector`'s, which must make the same nodes.
    static func scalarNode(_ event: yaml_event_t, at: SourceLocation, tag: String? = nil) -> YAMLNode {
        let scalar = event.data.scalar
        let style = Self.style(scalar.style)
        let quotes = style == .singleQuoted || style == .doubleQuoted ? 2 : 0
        let bytes = UnsafeBufferPointer(start: scalar.value, count: scalar.length)
        let text = String(decoding: bytes, as: UTF8.self)
        // Verbatim when the source is the text as written (errors then point at their
        // column): as many characters on one line as the text has. An escape is
        // always wider than the one character it stands for. ASCII text is as wide as
        // its bytes, so only other text is counted (grapheme breaking is costly on a
        // manifest's thousands of scalars); it must also be one character per scalar,
        // as the offsets of value errors count characters.
        let width = Int(event.end_mark.column - event.start_mark.column)
        var verbatim = (style == .plain || quotes == 2) && event.start_mark.line == event.end_mark.line
        if verbatim {
            let ascii = bytes.allSatisfy { $0 < 0x80 }
            let scalars = ascii ? scalar.length : text.unicodeScalars.count
            verbatim = width == scalars + quotes && (ascii || text.count == scalars)
        }
        return YAMLNode(.scalar(text, style), at: at, tag: tag, isVerbatim: verbatim)
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
            /// The nodes this collection stands for: itself and everything below, an alias
            /// counting as all of its anchor's.
            var weight = 1
            /// The scalar-limit rules the place of this collection matches (`ScalarLimits`):
            /// `reached` up to the collection itself, `here` with its current key or item too.
            var reached: UInt64 = 0
            var here: UInt64 = 0
            /// True for the list under the streamed key: its items are handed on, not kept.
            var streamsItems = false

            init(isMapping: Bool, location: SourceLocation, anchor: String?, tag: String?) {
                self.isMapping = isMapping
                self.location = location
                self.anchor = anchor
                self.tag = tag
            }
        }

        let limits: ScalarLimits
        let streamKey: String?
        let handler: ((YAMLNode) -> Void)?
        let collector: FlatItemCollector?
        /// True while the collector reads an item.
        var collecting = false
        var stack: [Frame] = []
        var anchors: [String: (node: YAMLNode, weight: Int)] = [:]
        var root: YAMLNode?
        var documents = 0
        var problems: [YAMLSyntaxError] = []
        /// The nodes the aliases read so far stand for.
        var aliasWeight = 0

        init(limits: ScalarLimits, streaming: ItemStream?) {
            self.limits = limits
            switch streaming {
            case .nodes(let key, let handler)?:
                (streamKey, self.handler, collector) = (key, handler, nil)
            case .events(let key, let collector)?:
                (streamKey, handler, self.collector) = (key, nil, collector)
            case nil:
                (streamKey, handler, collector) = (nil, nil, nil)
            }
        }

        mutating func consume(_ event: yaml_event_t) throws(YAMLSyntaxError) {
            if let collector, collecting || (stack.last?.streamsItems == true && event.type != YAML_SEQUENCE_END_EVENT) {
                // An item of the streamed list: its events go to the collector, not into the tree.
                let list = stack[stack.count - 1]
                switch collector.consume(event, alive: list.here, level: stack.count) {
                case .more:
                    collecting = true
                case .done(let weight):
                    collecting = false
                    list.weight += weight
                case .refused:
                    throw YAMLSyntaxError(location: YAMLParser.location(event.start_mark), message: "")
                }
                return
            }
            let at = YAMLParser.location(event.start_mark)
            switch event.type {
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw YAMLSyntaxError(location: at, message: "a second YAML document starts here; one feed per file")
                }
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                let limit = currentLimit()
                if let problem = limit.problem(scalar.length) {
                    // Measured before a String is made of it: the limit error replaces every
                    // other error of the value, and its text is never read.
                    let style = YAMLParser.style(scalar.style)
                    let quoted = style == .singleQuoted || style == .doubleQuoted
                    problems.append(YAMLSyntaxError(location: quoted ? at.advanced(by: 1) : at, message: problem))
                    add(YAMLNode(.scalar("", style), at: at, tag: Self.string(scalar.tag), isOverLimit: true),
                        anchor: Self.string(scalar.anchor), weight: 1)
                    return
                }
                add(YAMLParser.scalarNode(event, at: at, tag: Self.string(scalar.tag)), anchor: Self.string(scalar.anchor), weight: 1)
            case YAML_ALIAS_EVENT:
                let name = Self.string(event.data.alias.anchor) ?? ""
                guard let anchored = anchors[name] else {
                    throw YAMLSyntaxError(location: at, message: "unknown alias '*\(name)'; if this is a cron expression, quote it")
                }
                // The alias repeats the node it names, never a copy of it; what it stands for
                // is counted, so a billion laughs is refused at its first million.
                aliasWeight += anchored.weight
                if aliasWeight > YAMLParser.maxAliasNodes {
                    throw YAMLSyntaxError(location: at, message: "with this alias the file's aliases stand for more than "
                                          + "\(YAMLParser.maxAliasNodes) nodes (an alias bomb?); at most \(YAMLParser.maxAliasNodes) are allowed")
                }
                var node = anchored.node
                node.location = at
                add(node, anchor: nil, weight: anchored.weight)
            case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                let isMapping = event.type == YAML_MAPPING_START_EVENT
                // Counted from the events as they come: reading stops where level 33 opens.
                if stack.count >= YAMLParser.maxDepth {
                    throw YAMLSyntaxError(location: at, message: "this \(isMapping ? "mapping" : "list") opens level \(stack.count + 1) of nesting; "
                                          + "at most \(YAMLParser.maxDepth) levels are allowed")
                }
                let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
                let tag = isMapping ? event.data.mapping_start.tag : event.data.sequence_start.tag
                let frame = Frame(isMapping: isMapping, location: at, anchor: Self.string(anchor), tag: Self.string(tag))
                frame.reached = stack.last.map { $0.isMapping && $0.pendingKey == nil ? 0 : $0.here } ?? limits.allRules
                frame.here = isMapping ? 0 : limits.narrow(frame.reached, depth: stack.count, step: .item)
                frame.streamsItems = !isMapping && stack.count == 1 && stack[0].isMapping && streamKey != nil
                    && stack[0].pendingKey?.scalar == streamKey
                stack.append(frame)
            case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                guard let frame = stack.popLast() else { return }
                let content: YAMLNode.Content = frame.isMapping ? .mapping(frame.pairs) : .sequence(frame.items)
                frame.items = []
                frame.pairs = []
                add(YAMLNode(content, at: frame.location, tag: frame.tag), anchor: frame.anchor, weight: frame.weight)
            default:
                break
            }
        }

        /// The limit for the scalar that comes next: a key's, or the one its place names.
        private func currentLimit() -> ScalarLimit {
            guard let top = stack.last else { return limits.limit(alive: limits.allRules, depth: 0) }
            if top.isMapping, top.pendingKey == nil { return limits.key }
            return limits.limit(alive: top.here, depth: stack.count)
        }

        private mutating func add(_ node: YAMLNode, anchor: String?, weight: Int) {
            if let anchor { anchors[anchor] = (node, weight) }
            guard let top = stack.last else {
                root = node
                return
            }
            top.weight += weight
            if !top.isMapping {
                if top.streamsItems, let handler {
                    handler(node)
                } else {
                    top.items.append(node)
                }
            } else if let key = top.pendingKey {
                top.pairs.append((key: key, value: node))
                top.pendingKey = nil
                top.here = 0
            } else {
                top.pendingKey = node
                if top.reached != 0 { top.here = limits.narrow(top.reached, depth: stack.count - 1, step: .key(node.scalar ?? "")) }
            }
        }

        private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
            guard let pointer else { return nil }
            return String(cString: pointer)
        }
    }
}
