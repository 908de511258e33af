import Foundation
import Testing
@testable import PrefetchCore

/// The nesting rule of SPEC §7 on seeded random documents — flow and block lists and
/// mappings mixed, anchors and aliases among them — against the generator's own count: the
/// first collection (in file order) that opens at level 33 is the one error, at the place
/// libyaml gives its start; a document whose collections all stay at 32 or above parses,
/// however deep its aliases repeat each other. `PREFETCH_NESTING_SEED` replays a run.
@Suite struct NestingDepthTests {
    /// Writes a random document and records where each collection opens and at which level.
    struct Writer {
        enum Kind: CaseIterable { case flowList, flowMap, blockList, blockMap }

        var random: SplitMix64
        var text = ""
        var line = 1
        var column = 1
        /// Each collection's level and start, in file order.
        var opened: [(level: Int, at: PrefetchCore.SourceLocation)] = []
        var anchors: [String] = []
        var names = 0
        /// How deep the spine of this document goes.
        let target: Int
        /// How likely (in percent) a collection in block context is a flow one: a third of
        /// the documents stay block all the way, a third mostly, a third turn to flow soon.
        let flowChance: UInt64

        init(seed: UInt64) {
            random = SplitMix64(seed: seed)
            target = Int(random.next() % 44) + 1
            flowChance = [0, 4, 30][Int(random.next() % 3)]
        }

        mutating func write(_ piece: String) {
            for character in piece {
                if character == "\n" {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            }
            text += piece
        }

        mutating func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }

        mutating func name(_ prefix: String) -> String {
            names += 1
            return prefix + String(names)
        }

        /// A leaf: a scalar, maybe anchored, or an alias of a finished anchor.
        mutating func leaf() {
            if !anchors.isEmpty, chance(25) {
                write("*" + anchors[Int(random.next() % UInt64(anchors.count))])
                return
            }
            if chance(15) {
                let anchor = name("s")
                write("&\(anchor) v")
                anchors.append(anchor)
            } else {
                write(name("v"))
            }
        }

        /// A collection at `level` on the spine (`spine`: it leads to the target depth) or a
        /// side branch, in flow context when `flow`; block ones begin at `indent` (the column
        /// of their first entry, less one), already positioned there.
        mutating func collection(level: Int, spine: Bool, flow: Bool, indent: Int) {
            // Block context stays block mostly, so that deep block nestings come up too.
            let kinds: [Kind] = flow || chance(flowChance) ? [.flowList, .flowMap] : [.blockList, .blockMap]
            let kind = kinds[Int(random.next() % UInt64(kinds.count))]
            var anchor: String?
            if kind == .flowList || kind == .flowMap, chance(15) {
                anchor = name("c")
            }
            if let anchor { opened.append((level, PrefetchCore.SourceLocation(line: line, column: column))); write("&\(anchor) ") }
            else { opened.append((level, PrefetchCore.SourceLocation(line: line, column: column))) }
            let deeper = spine && level < target
            var children = Int(random.next() % 3) + (kind == .blockList || kind == .blockMap ? 1 : 0)
            if deeper { children = max(children, 1) }
            let spineChild = deeper ? Int(random.next() % UInt64(children)) : -1
            switch kind {
            case .flowList, .flowMap:
                write(kind == .flowList ? "[" : "{")
                for index in 0..<children {
                    if index > 0 { write(", ") }
                    if kind == .flowMap { write(name("k") + ": ") }
                    child(level: level, spine: index == spineChild, flow: true, indent: indent)
                }
                write(kind == .flowList ? "]" : "}")
            case .blockList, .blockMap:
                let entryColumn = column
                for index in 0..<children {
                    if index > 0 { write("\n" + String(repeating: " ", count: entryColumn - 1)) }
                    if kind == .blockList {
                        write("- ")
                        child(level: level, spine: index == spineChild, flow: false, indent: entryColumn + 1, inline: true)
                    } else {
                        write(name("k") + ":")
                        child(level: level, spine: index == spineChild, flow: false, indent: entryColumn - 1 + 2, inline: false)
                    }
                }
            }
            if let anchor { anchors.append(anchor) }
        }

        /// An entry's value. In block context `inline` says it follows `- ` on its line (a
        /// block collection may start right there); otherwise it follows `key:`.
        mutating func child(level: Int, spine: Bool, flow: Bool, indent: Int, inline: Bool = true) {
            let nested = spine || chance(20)
            if !nested {
                if !flow && !inline { write(" ") }
                leaf()
                return
            }
            if flow {
                collection(level: level + 1, spine: spine, flow: true, indent: indent)
            } else if inline {
                collection(level: level + 1, spine: spine, flow: false, indent: indent)
            } else if chance(flowChance) {
                write(" ")
                collection(level: level + 1, spine: spine, flow: true, indent: indent)
            } else {
                write("\n" + String(repeating: " ", count: indent))
                collection(level: level + 1, spine: spine, flow: false, indent: indent)
            }
        }

        /// The whole document: its root collection is level 1.
        mutating func document() {
            if chance(10) { write("# a comment\n") }
            collection(level: 1, spine: true, flow: chance(flowChance), indent: 0)
            write("\n")
        }
    }

    static let seed: UInt64 = {
        let environment = ProcessInfo.processInfo.environment["PREFETCH_NESTING_SEED"]
        return environment.flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
    }()

    @Test func randomNestingsAgainstTheirCount() {
        print("NestingDepthTests: PREFETCH_NESTING_SEED=\(Self.seed)")
        var deep = 0, shallow = 0
        for index in 0..<400 {
            var writer = Writer(seed: Self.seed &+ UInt64(index) &* 0x9E37_79B9_7F4A_7C15)
            writer.document()
            let expected = writer.opened.first { $0.level == YAMLParser.maxDepth + 1 }
            let outcome: String
            do {
                _ = try YAMLParser.parse(Array(writer.text.utf8), limits: FeedDecoder.scalars)
                outcome = "parsed"
            } catch {
                outcome = "\(error.location): \(error.message)"
            }
            if let expected {
                deep += 1
                #expect(outcome.hasPrefix("\(expected.at): this ") && outcome.hasSuffix("opens level 33 of nesting; at most 32 levels are allowed"),
                        "seed \(Self.seed), document \(index):\n\(writer.text)")
            } else {
                shallow += 1
                #expect(outcome == "parsed", "seed \(Self.seed), document \(index) (deepest level \(writer.opened.map { $0.level }.max() ?? 0)):\n\(writer.text)")
            }
        }
        print("NestingDepthTests: \(deep) documents too deep, \(shallow) not")
        if ProcessInfo.processInfo.environment["PREFETCH_NESTING_SHOW"] != nil {
            var writer = Writer(seed: Self.seed)
            writer.document()
            print(writer.text)
        }
        #expect(deep > 50 && shallow > 50, "seed \(Self.seed): \(deep) too deep, \(shallow) not")
    }

    /// Aliases repeat their anchors without copies; a chain of anchors, each 31 levels
    /// deep around the one before, makes a tree about 7,000 levels deep within the alias
    /// budget. Parsing and releasing it must not recurse that deep: it is done here on a
    /// thread with a 256 KiB stack (a recursive release needs megabytes).
    @Test func aTreeThatAliasesMakeDeepIsReleasedWithoutRecursion() throws {
        var yaml = "a0: &a0 x\n"
        for index in 1...230 {
            yaml += "a\(index): &a\(index) " + String(repeating: "[", count: 30) + "*a\(index - 1)" + String(repeating: "]", count: 30) + "\n"
        }
        let bytes = Array(yaml.utf8)
        let finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var depth = 0
        nonisolated(unsafe) var failure: String?
        let thread = Thread {
            do {
                var document: YAMLDocument? = try YAMLParser.parse(bytes, limits: FeedDecoder.scalars)
                var node = document?.root
                if case .mapping(let pairs)? = node?.content { node = pairs.last?.value }
                while let current = node {
                    guard case .sequence(let items) = current.content, let first = items.first else { break }
                    depth += 1
                    node = first
                }
                node = nil
                document = nil
                _ = document
            } catch let error as YAMLSyntaxError {
                failure = "\(error.location): \(error.message)"
            } catch {
                failure = "\(error)"
            }
            finished.signal()
        }
        thread.stackSize = 256 << 10
        thread.start()
        finished.wait()
        #expect(failure == nil)
        #expect(depth == 230 * 30)
    }
}
