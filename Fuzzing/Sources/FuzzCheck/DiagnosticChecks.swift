import PrefetchCore

/// The lines of `bytes` as YAML counts them (libyaml's marks): LF, CR LF, a lone CR, and
/// NEL, LS, PS break a line. Each line's length in characters, for checking columns.
public func yamlLineLengths(_ bytes: [UInt8]) -> [Int] {
    var lengths: [Int] = []
    var current = 0
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == 0x0A || byte == 0x0D {
            if byte == 0x0D, index + 1 < bytes.count, bytes[index + 1] == 0x0A { index += 1 }
            lengths.append(current)
            current = 0
            index += 1
            continue
        }
        if byte == 0xC2, index + 1 < bytes.count, bytes[index + 1] == 0x85 {  // NEL
            lengths.append(current); current = 0; index += 2; continue
        }
        if byte == 0xE2, index + 2 < bytes.count, bytes[index + 1] == 0x80, bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9 {  // LS, PS
            lengths.append(current); current = 0; index += 3; continue
        }
        if byte & 0xC0 != 0x80 { current += 1 }  // count characters by their first byte
        index += 1
    }
    lengths.append(current)
    return lengths
}

/// What every diagnostic of a loader must be: in the file it reads, with a message, at a
/// place inside the input (a line that exists, a column on it or just past its end); and
/// rendered as `validate` prints it — the headline, then, when quoted, the source line
/// and a caret line that ends in `^`.
public func checkDiagnostics(_ diagnostics: [Diagnostic], file: String, bytes: [UInt8]) {
    let lengths = yamlLineLengths(bytes)
    let renderer = DiagnosticRenderer(sources: [file: SourceText(bytes: bytes)])
    for diagnostic in diagnostics {
        require(diagnostic.file == file, "diagnostic names \(diagnostic.file), not \(file): \(diagnostic.headline)")
        require(!diagnostic.message.isEmpty, "diagnostic without a message: \(diagnostic.headline)")
        if let at = diagnostic.location {
            require(at.line >= 1 && at.line <= lengths.count,
                    "diagnostic at line \(at.line) of an input of \(lengths.count) lines: \(diagnostic.headline)")
            if at.line >= 1 && at.line <= lengths.count {
                require(at.column >= 1 && at.column <= lengths[at.line - 1] + 1,
                        "diagnostic at column \(at.column) of a line of \(lengths[at.line - 1]) characters: \(diagnostic.headline)")
            }
        }
        require(!diagnostic.headline.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" },
                "a headline with a line break or control character: \(diagnostic.headline.debugDescription)")
        let text = renderer.render(diagnostic)
        require(!text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t" && $0 != "\n") || $0.value == 0x7F },
                "a rendered diagnostic with a control character: \(text.debugDescription)")
        require(text.hasPrefix(diagnostic.headline + "\n"), "rendered diagnostic does not start with its headline: \(text.debugDescription)")
        require(text.hasSuffix("\n"), "rendered diagnostic does not end with a line break: \(text.debugDescription)")
        // Split on LF bytes: in a String "\r\n" is one Character, not a "\n".
        let lines = Array(text.utf8).split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()
        if lines.count > 1 {
            require(lines.count == 3 && lines[2].last == UInt8(ascii: "^"), "rendered diagnostic quotes its line without a caret: \(text.debugDescription)")
        }
    }
}
