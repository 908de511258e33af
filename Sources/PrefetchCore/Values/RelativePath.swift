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
        // Checked on the UTF-8 bytes, as the file system reads the path: split by Character,
        // a '/' followed by a combining mark ("../\u{301}x") or after a prepended one is no
        // '/', and its '..' would leave the feed's folder. Offsets are given in characters.
        if path.utf8.starts(with: ".prefetch".utf8) {
            return ValueError("a path cannot start with '.prefetch': prefetch keeps its own files under that name")
        }
        if isPlainASCII(path) { return nil }  // the usual case: no array made of it
        let bytes = Array(path.utf8)
        if bytes.isEmpty { return ValueError("a path cannot be empty") }
        if bytes[0] == 0x2F { return ValueError("a path must be relative to the feed's folder, not absolute") }
        var start = 0
        for segment in bytes.split(separator: 0x2F, omittingEmptySubsequences: false) {
            defer { start += segment.count + 1 }
            // Offsets only for an error: counting characters for every segment would be
            // quadratic in a deep path's length.
            switch Array(segment) {
            case []:
                return ValueError(start == bytes.count ? "a path cannot end with '/'" : "a path cannot contain an empty segment ('//')",
                                  at: path.characterOffset(ofUTF8: start))
            case [0x2E]: return ValueError("a path cannot contain '.' segments", at: path.characterOffset(ofUTF8: start))
            case [0x2E, 0x2E]: return ValueError("a path cannot contain '..': it would leave the feed's folder", at: path.characterOffset(ofUTF8: start))
            default: break
            }
            var index = start
            for scalar in String(decoding: segment, as: UTF8.self).unicodeScalars {
                if scalar.value < 0x20 || scalar.value == 0x7f || (0x80..<0xa0).contains(scalar.value) {
                    return ValueError("a path cannot contain control characters", at: path.characterOffset(ofUTF8: index))
                }
                index += UTF8.width(scalar)
            }
        }
        return nil
    }

    /// A path over 4,000 bytes, or with a component over 255, at the offending component
    /// (components split at every '/' byte, as the file system splits them).
    private static func lengthProblem(_ path: String) -> ValueError? {
        let count = path.utf8.count
        if count > 4000 { return ValueError("a path has at most 4000 bytes; this one has \(count)") }
        guard count > 255 else { return nil }
        var start = 0
        for segment in path.utf8.split(separator: 0x2F, omittingEmptySubsequences: false) {
            if segment.count > 255 {
                return ValueError("a path component has at most 255 bytes; this one has \(segment.count)", at: path.characterOffset(ofUTF8: start))
            }
            start += segment.count + 1
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
