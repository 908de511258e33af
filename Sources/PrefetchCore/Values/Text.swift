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
}
