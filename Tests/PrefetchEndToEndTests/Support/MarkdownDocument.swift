import Foundation

/// One Markdown file of the README or the manual, read as the docs tests need it: its fenced
/// blocks, its headings and the anchors GitHub makes of them, and its links.
struct MarkdownDocument {
    /// A fenced block: its info string (`yaml`, `sh`, `console`, …; "" when none), the line
    /// of its opening fence (1-based) and its text, each line ending in a newline.
    struct Block {
        let info: String
        let line: Int
        let text: String
        var firstLine: String { String(text.prefix { $0 != "\n" }) }
        /// The info string's words: `yaml fragment` is a YAML block marked as a fragment.
        var tags: [String] { info.split(separator: " ").map(String.init) }
    }

    struct Heading {
        let level: Int
        let text: String
        let line: Int
    }

    struct Link {
        let target: String
        let line: Int
    }

    /// The repository's root folder.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../..").standardized

    /// README.md, every page of docs/ and bench/README.md: everything a reader follows.
    static func all() throws -> [MarkdownDocument] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return try (["README.md"] + docs + ["bench/README.md"]).map { try MarkdownDocument($0) }
    }

    /// The file's path relative to the repository's root (`docs/fleet.md`).
    let path: String
    let lines: [String]
    let blocks: [Block]
    let headings: [Heading]
    let links: [Link]

    init(_ path: String) throws {
        self.path = path
        let text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        lines = text.components(separatedBy: "\n")
        var blocks: [Block] = [], headings: [Heading] = [], links: [Link] = []
        var open: (info: String, line: Int, fence: String)?
        var body = ""
        for (index, line) in lines.enumerated() {
            if let current = open {
                if line.trimmingCharacters(in: .whitespaces) == current.fence {
                    blocks.append(Block(info: current.info, line: current.line, text: body))
                    open = nil
                } else {
                    body += line + "\n"
                }
                continue
            }
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("```") {
                let fence = String(trimmed.prefix { $0 == "`" })
                open = (String(trimmed.dropFirst(fence.count)).trimmingCharacters(in: .whitespaces), index + 1, fence)
                body = ""
                continue
            }
            if let level = Self.headingLevel(line) {
                headings.append(Heading(level: level, text: String(line.dropFirst(level + 1)), line: index + 1))
            }
            for target in Self.linkTargets(in: line) { links.append(Link(target: target, line: index + 1)) }
        }
        self.blocks = blocks
        self.headings = headings
        self.links = links
    }

    /// The anchors of the headings as GitHub makes them: the text in lower case, without what is
    /// not a letter, digit, space, `-` or `_`, spaces made `-`; the second of a name gets `-1`.
    var anchors: Set<String> {
        var seen: [String: Int] = [:], out: Set<String> = []
        for heading in headings {
            let base = Self.slug(heading.text)
            let count = seen[base, default: 0]
            out.insert(count == 0 ? base : "\(base)-\(count)")
            seen[base] = count + 1
        }
        return out
    }

    static func slug(_ heading: String) -> String {
        String(heading.lowercased().unicodeScalars.compactMap { scalar -> Character? in
            if scalar == " " { return "-" }
            if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) { return Character(scalar) }
            return nil
        })
    }

    private static func headingLevel(_ line: String) -> Int? {
        let hashes = line.prefix { $0 == "#" }.count
        guard (1...6).contains(hashes), line.dropFirst(hashes).first == " " else { return nil }
        return hashes
    }

    /// The targets of `[text](target)` links on a line, outside inline code.
    static func linkTargets(in line: String) -> [String] {
        var outside = "", inCode = false
        for character in line {
            if character == "`" { inCode.toggle(); outside.append(" "); continue }
            outside.append(inCode ? " " : character)
        }
        var targets: [String] = []
        var rest = Substring(outside)
        while let close = rest.range(of: "](") {
            let after = rest[close.upperBound...]
            guard let end = after.firstIndex(where: { $0 == ")" || $0 == " " }) else { break }
            targets.append(String(after[..<end]))
            rest = after[end...]
        }
        return targets
    }

    /// The blocks between a heading (its text, exactly) and the next heading of the same or a
    /// higher level.
    func blocks(under heading: String) -> [Block] {
        guard let start = headings.firstIndex(where: { $0.text == heading }) else { return [] }
        let level = headings[start].level
        let end = headings[(start + 1)...].first { $0.level <= level }?.line ?? Int.max
        return blocks.filter { $0.line > headings[start].line && $0.line < end }
    }

    /// The rows of the tables between a heading and the next of the same or a higher level,
    /// each as its cells (trimmed, `\|` read as `|`), header and separator rows included.
    func tableRows(under heading: String) -> [[String]] {
        guard let start = headings.firstIndex(where: { $0.text == heading }) else { return [] }
        let level = headings[start].level
        let end = headings[(start + 1)...].first { $0.level <= level }?.line ?? lines.count + 1
        return lines[headings[start].line..<(end - 1)].filter { $0.hasPrefix("|") }.map { line in
            let cells = line.replacingOccurrences(of: "\\|", with: "\u{0}").split(separator: "|", omittingEmptySubsequences: false)
            return cells.dropFirst().dropLast().map {
                $0.replacingOccurrences(of: "\u{0}", with: "|").trimmingCharacters(in: .whitespaces)
            }
        }
    }

    /// The first block after the first line that contains `marker`.
    func block(after marker: String) -> Block? {
        guard let line = lines.firstIndex(where: { $0.contains(marker) }) else { return nil }
        return blocks.first { $0.line > line + 1 }
    }
}
