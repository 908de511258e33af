/// Small text helpers the parsers share.
extension String {
    /// The string without leading and trailing characters made only of scalars in `set`
    /// (compared by scalar, so `"\r\n"` is trimmed by a set holding `\r` and `\n`).
    func trimmingCharacters(in set: String) -> String {
        let scalars = Set(set.unicodeScalars)
        func trimmable(_ c: Character) -> Bool { c.unicodeScalars.allSatisfy(scalars.contains) }
        var view = Substring(self)
        while let first = view.first, trimmable(first) { view = view.dropFirst() }
        while let last = view.last, trimmable(last) { view = view.dropLast() }
        return String(view)
    }

    /// The index of the character that holds UTF-8 byte `byte` (`count` past the end):
    /// error offsets count characters, checks that must see every '/' count bytes.
    func characterOffset(ofUTF8 byte: Int) -> Int {
        var end = 0
        for (index, character) in enumerated() {
            end += character.utf8.count
            if end > byte { return index }
        }
        return count
    }
}
