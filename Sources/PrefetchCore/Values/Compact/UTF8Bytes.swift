/// A text's UTF-8 bytes read in one pass over its own storage: for output written as bytes
/// (the reader index, the plan), where walking a `String.UTF8View` byte by byte costs a call
/// and a retain for each.
extension Array where Element == UInt8 {
    /// Appends `text`'s UTF-8 bytes in one copy.
    mutating func append(utf8 text: String) {
        var text = text  // the same storage; `withUTF8` is mutating
        text.withUTF8 { append(contentsOf: $0) }
    }
}

extension String {
    /// Whether every UTF-8 byte of the text satisfies `predicate`.
    func allUTF8Bytes(_ predicate: (UInt8) -> Bool) -> Bool {
        var text = self
        return text.withUTF8 { $0.allSatisfy(predicate) }
    }
}
