/// One source line as a diagnostic quotes it, and the caret line under it (SPEC §7):
/// - at most 200 characters, cut around the column with `…` where it was cut;
/// - a URL's query value elided (`?…`), as everywhere prefetch shows a URL (SPEC §5): in
///   a word (up to a blank or a quote) that holds `://`, what follows a `?` is hidden;
/// - control characters shown as U+FFFD, so a file cannot drive the terminal (a message's
///   are escaped by `Diagnostic.headline`).
/// Columns count characters (Unicode scalars), as libyaml's do; the caret line keeps tabs.
/// Only a bounded stretch around the column is read, however long the line.
struct SourceExcerpt {
    /// The longest excerpt, in characters, `…` marks included.
    static let width = 200

    /// The line as shown.
    let line: String
    /// Blanks (tabs where the line has them) and `^` under the column.
    let caret: String

    /// The excerpt of the line `[lineStart, lineEnd)` whose column begins at byte `offset`
    /// (`lineEnd` for a column at or past its end, then `beyond` columns further).
    ///
    /// `elision` is what is known of the line's words up to some byte: followed from there
    /// to the stretch shown (from the line's start when it is behind), and kept for the
    /// next excerpt of the line, so a line's excerpts in order read it once in all.
    init(_ bytes: UnsafeBufferPointer<UInt8>, lineStart: Int, lineEnd: Int, at offset: Int, beyond: Int, elision: inout Elision) {
        // Up to twice the width on either side of the column: enough to fill the width after
        // elision has shortened one side (by queries of up to 200 characters in all).
        var start = offset
        var before = 0
        while start > lineStart, before < 2 * Self.width {
            start -= 1
            while start > lineStart, bytes[start] & 0xC0 == 0x80 { start -= 1 }
            before += 1
        }
        var end = offset
        var after = 0
        while end < lineEnd, after < 2 * Self.width {
            end += YAMLText.decode(bytes, at: end)?.1 ?? 1
            after += 1
        }
        end = min(end, lineEnd)

        if elision.position < lineStart || elision.position > start { elision = Elision(position: lineStart) }
        elision.elider.follow(bytes, from: elision.position, to: start)
        elision.position = start
        var elider = elision.elider

        // The stretch, elided: shown characters, and where the column's character lands.
        var shown: [Unicode.Scalar] = []
        var caret = -1
        var hiding = false
        var index = start
        while index < end {
            let isColumn = index == offset
            let decoded = YAMLText.decode(bytes, at: index)
            let scalar = decoded.flatMap { Unicode.Scalar($0.0) } ?? "\u{FFFD}"
            index += decoded?.1 ?? 1
            if elider.hides(scalar) {
                if !hiding { shown.append("…") }
                hiding = true
                if isColumn { caret = shown.count - 1 }
            } else {
                hiding = false
                if isColumn { caret = shown.count }
                shown.append(Self.printable(scalar))
            }
        }
        if caret < 0 { caret = shown.count }
        (shown, caret) = Self.cut(shown, caret: caret, moreBefore: start > lineStart, moreAfter: end < lineEnd)

        var text = String.UnicodeScalarView()
        text.append(contentsOf: shown)
        line = String(text)
        var pad = ""
        for (position, scalar) in shown.enumerated() where position < caret {
            pad.append(scalar == "\t" ? "\t" : " ")
        }
        pad += String(repeating: " ", count: max(0, caret - shown.count) + beyond)
        self.caret = pad + "^"
    }

    /// At most `width` characters of `shown` around `caret`, with `…` for what is left out
    /// on either side (`moreBefore`, `moreAfter`: the line goes on beyond `shown`), and
    /// where the caret is then.
    static func cut(_ shown: [Unicode.Scalar], caret: Int, moreBefore: Bool, moreAfter: Bool) -> ([Unicode.Scalar], Int) {
        let count = shown.count
        guard count > width || moreBefore || moreAfter else { return (shown, caret) }
        let first: Int, last: Int
        if !moreBefore, caret < width / 2 {
            (first, last) = (0, min(count, width - 1))  // only the end is cut
        } else if !moreAfter, count - caret < width / 2 {
            (first, last) = (max(0, count - (width - 1)), count)  // only the start is cut
        } else {
            first = max(0, min(caret - (width - 2) / 2, count - (width - 2)))
            last = min(count, first + width - 2)
        }
        let lead = first > 0 || moreBefore
        let trail = last < count || moreAfter
        let slice = (lead ? ["…"] : []) + shown[first..<last] + (trail ? ["…"] : [])
        return (slice, caret - first + (lead ? 1 : 0))
    }

    /// A control character (`Diagnostic.isControl`: an escape sequence to the terminal) as
    /// U+FFFD, one character for one, so the caret stays under its column.
    private static func printable(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        Diagnostic.isControl(scalar) ? "\u{FFFD}" : scalar
    }

    /// The words of a line followed up to `position` (a byte offset).
    struct Elision {
        var elider = Elider()
        var position: Int

        init(position: Int) {
            self.position = position
        }
    }

    /// Follows words character by character: a word that holds `://` and then `?` hides
    /// what follows the `?` to the word's end.
    struct Elider {
        private var recent: (Unicode.Scalar, Unicode.Scalar) = (" ", " ")
        private var sawScheme = false
        private var inQuery = false

        /// Reads `[from, to)` (what lies before the shown stretch) to learn the state there.
        mutating func follow(_ bytes: UnsafeBufferPointer<UInt8>, from: Int, to: Int) {
            var index = from
            while index < to {
                let decoded = YAMLText.decode(bytes, at: index)
                _ = hides(decoded.flatMap { Unicode.Scalar($0.0) } ?? "\u{FFFD}")
                index += decoded?.1 ?? 1
            }
        }

        /// Whether `scalar`, the next character, is hidden.
        mutating func hides(_ scalar: Unicode.Scalar) -> Bool {
            defer { recent = (recent.1, scalar) }
            if scalar == " " || scalar == "\t" || scalar == "\"" || scalar == "'" {
                sawScheme = false
                inQuery = false
                return false
            }
            if inQuery { return true }
            if scalar == "/", recent == (":", "/") { sawScheme = true }
            if scalar == "?", sawScheme { inQuery = true }
            return false
        }
    }
}
