/// Checks a resource `path`: relative, inside the feed's folder, no tricks.
public enum RelativePath {
    /// Nil when `path` is safe to join under `CACHE/<feed>/`, else why not
    /// (with the character offset of the offending part).
    ///
    /// The length limits (SPEC §7: 4,000 bytes in all, 255 per component) come first: a
    /// limit error replaces the path's other errors.
    public static func problem(_ path: String) -> ValueError? {
        if let problem = lengthProblem(path) { return problem }
        // SPEC §6: names beginning `.prefetch` are prefetch's own (the reader index, generations).
        if path.hasPrefix(".prefetch") { return ValueError("a path cannot start with '.prefetch': prefetch keeps its own files under that name") }
        if isPlainASCII(path) { return nil }
        if path.isEmpty { return ValueError("a path cannot be empty") }
        if path.hasPrefix("/") { return ValueError("a path must be relative to the feed's folder, not absolute") }
        var offset = 0
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            defer { offset += segment.count + 1 }
            switch segment {
            case "": return ValueError(offset == path.count ? "a path cannot end with '/'" : "a path cannot contain an empty segment ('//')", at: offset)
            case ".": return ValueError("a path cannot contain '.' segments", at: offset)
            case "..": return ValueError("a path cannot contain '..': it would leave the feed's folder", at: offset)
            default: break
            }
            for (index, scalar) in segment.unicodeScalars.enumerated()
            where scalar.value < 0x20 || scalar.value == 0x7f || (0x80..<0xa0).contains(scalar.value) {
                return ValueError("a path cannot contain control characters", at: offset + index)
            }
        }
        return nil
    }

    /// A path over 4,000 bytes, or with a component over 255, at the offending component.
    private static func lengthProblem(_ path: String) -> ValueError? {
        let count = path.utf8.count
        if count > 4000 { return ValueError("a path has at most 4000 bytes; this one has \(count)") }
        guard count > 255 else { return nil }
        var offset = 0  // in characters, as ValueError counts
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            let bytes = segment.utf8.count
            if bytes > 255 { return ValueError("a path component has at most 255 bytes; this one has \(bytes)", at: offset) }
            offset += segment.count + 1
        }
        return nil
    }

    /// The common case, checked on bytes: printable ASCII, relative, no empty, '.' or '..'
    /// segment, no segment over 255 bytes. Anything else goes through the full check,
    /// which says what is wrong and where.
    private static func isPlainASCII(_ path: String) -> Bool {
        path.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.isEmpty, bytes.count <= 4000, bytes[0] != 0x2F else { return false }
            var segmentStart = 0
            for index in 0...bytes.count {
                let byte: UInt8 = index < bytes.count ? bytes[index] : 0x2F
                if byte == 0x2F {  // '/' or the end
                    let length = index - segmentStart
                    if length == 0 || length > 255 { return false }
                    if bytes[segmentStart] == 0x2E && (length == 1 || (length == 2 && bytes[segmentStart + 1] == 0x2E)) { return false }
                    segmentStart = index + 1
                } else if byte < 0x20 || byte >= 0x7F {
                    return false
                }
            }
            return true
        } ?? false
    }
}

extension String {
    /// Where the last '/' is, found on the UTF-8 bytes as the file system sees a path: no
    /// grapheme breaking (which `lastIndex(of: "/")` does, character by character, on every
    /// path of a 2,000-file feed, several times a run).
    var lastSlash: Index? {
        utf8.lastIndex(of: UInt8(ascii: "/"))
    }

    /// Everything after the '/' at `slash`, byte for byte (a character index would step
    /// over a combining mark that follows the slash).
    func suffix(afterSlash slash: Index) -> String {
        String(decoding: utf8[utf8.index(after: slash)...], as: UTF8.self)
    }
}

extension Substring {
    /// Where the last '/' is, on the UTF-8 bytes (see `String.lastSlash`).
    var lastSlash: Index? {
        utf8.lastIndex(of: UInt8(ascii: "/"))
    }
}
