import Foundation
import Testing
@testable import PrefetchCore

/// How a diagnostic quotes its source line (SPEC §7): cut to 200 characters around the
/// column with `…` where it was cut, the caret under the column, URL query values elided,
/// control characters made harmless; columns count characters as libyaml's do.
@Suite struct SourceExcerptTests {
    static func render(_ line: String, column: Int, message: String = "m") -> (line: String, caret: String) {
        let renderer = DiagnosticRenderer(sources: ["f.yaml": SourceText(bytes: Array((line + "\nnext\n").utf8))])
        let text = renderer.render(Diagnostic(.error, file: "f.yaml", at: SourceLocation(line: 1, column: column), message))
        let parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return (parts[1], parts[2])
    }

    /// The character the caret points at.
    static func pointed(_ excerpt: (line: String, caret: String)) -> Character? {
        let line = Array(excerpt.line.unicodeScalars)
        let index = excerpt.caret.unicodeScalars.count - 1
        return index < line.count ? Character(line[index]) : nil
    }

    /// Characters that say where they are: each a scalar of its own (U+F0000 + n, private use).
    static func ruler(_ count: Int) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: (0..<count).map { Unicode.Scalar(0xF0000 + UInt32($0))! })
        return String(view)
    }

    @Test func aLineOf200CharactersIsShownWhole() {
        let excerpt = Self.render(Self.ruler(200), column: 150)
        #expect(excerpt.line == Self.ruler(200))
        #expect(excerpt.caret == String(repeating: " ", count: 149) + "^")
    }

    @Test(arguments: [(201, 1), (201, 201), (201, 202), (1000, 1), (1000, 99), (1000, 100), (1000, 101), (1000, 500),
                      (1000, 900), (1000, 902), (1000, 999), (1000, 1000), (1000, 1001), (70_000, 35_000)])
    func aLongerLineIsCutAroundTheColumn(_ length: Int, _ column: Int) {
        let line = Self.ruler(length)
        let excerpt = Self.render(line, column: column)
        let shown = Array(excerpt.line.unicodeScalars)
        #expect(shown.count == 200, "\(excerpt.line)")
        #expect(excerpt.caret.last == "^" && excerpt.caret.dropLast().allSatisfy { $0 == " " })
        let caret = excerpt.caret.count - 1
        if column <= length {
            #expect(Self.pointed(excerpt) == Character(Array(line.unicodeScalars)[column - 1]))
        } else {
            #expect(caret == shown.count + column - length - 1)
        }
        // `…` exactly where something was left out, and the rest is the line as it is.
        let cutBefore = shown.first == "…", cutAfter = shown.last == "…"
        #expect(cutBefore || cutAfter)
        var view = String.UnicodeScalarView()
        view.append(contentsOf: shown.dropFirst(cutBefore ? 1 : 0).dropLast(cutAfter ? 1 : 0))
        let kept = String(view)
        let start = line.range(of: kept)!.lowerBound
        #expect(cutBefore == (start != line.startIndex))
        #expect(cutAfter == (line.range(of: kept)!.upperBound != line.endIndex))
        // Around the column: as much on either side as the line has, up to about half.
        #expect(caret >= min(column - 1, 98))
        if column <= length { #expect(shown.count - caret - 1 >= min(length - column, 98)) }
    }

    @Test func tabsStayTabsUnderACutLine() {
        let line = "\t\t" + String(repeating: "a", count: 50) + "\tX" + String(repeating: "b", count: 300)
        let excerpt = Self.render(line, column: 54)
        #expect(excerpt.line.hasPrefix("\t\t" + String(repeating: "a", count: 50) + "\tX"))
        #expect(excerpt.caret == "\t\t" + String(repeating: " ", count: 50) + "\t^")
    }

    @Test func columnsCountCharactersNotBytes() {
        let excerpt = Self.render("é日😀x e\u{301}y", column: 7)
        #expect(excerpt.caret == "      ^")  // é, 日, 😀, x, space, e, then the combining accent
        #expect(Self.pointed(Self.render("é日😀x", column: 4)) == "x")
    }

    @Test(arguments: [
        ("  - url: https://e.com/a?token=SECRET", 10, "  - url: https://e.com/a?…", "         ^"),
        ("  - url: https://e.com/a?token=SECRET", 30, "  - url: https://e.com/a?…", "                         ^"),
        ("  - {url: \"https://e.com/a?sig=SECRET\", path: b}", 47, "  - {url: \"https://e.com/a?…\", path: b}", "                                     ^"),
        ("x: [http://a/b?k=SECRET, https://c/d?k=SECRET2] # ok", 1, "x: [http://a/b?… https://c/d?… # ok", "^"),
        ("a?b c://d e", 1, "a?b c://d e", "^"),
    ])
    func queryValuesAreElided(_ line: String, _ column: Int, _ shown: String, _ caret: String) {
        let excerpt = Self.render(line, column: column)
        #expect(excerpt.line == shown)
        #expect(excerpt.caret == caret)
    }

    /// A query long enough to push the column out of a 200-character excerpt, elided first:
    /// no part of it shows, wherever the excerpt starts.
    @Test func aLongQueryNeverShowsThroughACut() {
        let secret = String(repeating: "S", count: 5000)
        let line = "  - url: https://e.com/a?t=" + secret + " " + Self.ruler(400)
        for column in [1, 20, 30, 2000, 4990, 5030, 5200, 5400] {
            let excerpt = Self.render(line, column: column)
            #expect(!excerpt.line.contains("S"), "column \(column): \(excerpt.line)")
            #expect(excerpt.line.count <= 200)
        }
        let after = Self.render(line, column: 5028 + 150)  // the ruler's 150th character
        #expect(Self.pointed(after) == Character(Unicode.Scalar(0xF0000 + 149)!))
        let giant = "x: https://e.com/a?t=" + String(repeating: "S", count: 200_000) + " y: [b]"
        let late = Self.render(giant, column: giant.count - 1)
        #expect(late.line == "…… y: [b]" && Self.pointed(late) == "b", "\(late.line)")
    }

    @Test func controlCharactersAreShownAsReplacements() {
        let renderer = DiagnosticRenderer(sources: ["f.yaml": SourceText(bytes: Array("a: \u{1B}[31mred\u{9B}\n".utf8))])
        let text = renderer.render(Diagnostic(.error, file: "f.yaml", at: SourceLocation(line: 1, column: 4), "unknown key '\u{1B}[2J'"))
        #expect(text == "f.yaml:1:4: error: unknown key '\\u{1B}[2J'\na: \u{FFFD}[31mred\u{FFFD}\n   ^\n")
    }

    /// One renderer over many diagnostics of one long line, in order and out of it, shows
    /// each as a renderer of its own would.
    @Test func aRendererKeepsItsPlaceCorrectly() {
        let text = (0..<3).map { _ in Self.ruler(3000) }.joined(separator: "\r\n") + "\u{85}last"
        let source = SourceText(bytes: Array(text.utf8))
        let shared = DiagnosticRenderer(sources: ["f": source])
        var random = SplitMix64(seed: 7)
        for _ in 0..<200 {
            let location = SourceLocation(line: Int(random.next() % 4) + 1, column: Int(random.next() % 3005) + 1)
            let diagnostic = Diagnostic(.error, file: "f", at: location, "m")
            #expect(shared.render(diagnostic) == DiagnosticRenderer(sources: ["f": source]).render(diagnostic), "\(location)")
        }
    }
}
