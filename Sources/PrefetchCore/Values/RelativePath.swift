/// Checks a resource `path`: relative, inside the feed's folder, no tricks.
public enum RelativePath {
    /// Nil when `path` is safe to join under `CACHE/<feed>/`, else why not
    /// (with the character offset of the offending part).
    public static func problem(_ path: String) -> ValueError? {
        if path.isEmpty { return ValueError("a path cannot be empty") }
        if path.hasPrefix("/") { return ValueError("a path must be relative to the feed's folder, not absolute") }
        if path.utf8.count > 4000 { return ValueError("a path has at most 4000 bytes") }
        var offset = 0
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            defer { offset += segment.count + 1 }
            switch segment {
            case "": return ValueError(offset == path.count ? "a path cannot end with '/'" : "a path cannot contain an empty segment ('//')", at: offset)
            case ".": return ValueError("a path cannot contain '.' segments", at: offset)
            case "..": return ValueError("a path cannot contain '..': it would leave the feed's folder", at: offset)
            default: break
            }
            if segment.utf8.count > 255 {
                return ValueError("a path segment has at most 255 bytes", at: offset)
            }
            for (index, scalar) in segment.unicodeScalars.enumerated()
            where scalar.value < 0x20 || scalar.value == 0x7f || (0x80..<0xa0).contains(scalar.value) {
                return ValueError("a path cannot contain control characters", at: offset + index)
            }
        }
        return nil
    }
}
