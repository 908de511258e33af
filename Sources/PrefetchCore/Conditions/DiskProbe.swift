/// Free space on the filesystem that holds (or will hold) the cache folder. `statvfs` can
/// hang (a cache on an unreachable network filesystem): `ConditionProbes` bounds it.
public enum DiskProbe {
    /// Bytes available to an unprivileged writer, from `statvfs` of `path` or its nearest
    /// existing ancestor (plan never creates the cache folder).
    public static func read(at path: String) -> Probed<UInt64> {
        guard let free = freeBytes(at: path) else { return .unknown(reason: "statvfs of \(path) and its parents failed") }
        return .known(free, source: "statvfs")
    }

    public static func freeBytes(at path: String) -> UInt64? {
        var candidate = path.isEmpty ? "." : path
        while true {
            if case .success(let free) = FileSystem.freeBytes(at: candidate) { return free }
            guard candidate != "/" && candidate != "." else { return nil }
            let trimmed = candidate.hasSuffix("/") ? String(candidate.dropLast()) : candidate
            if let slash = trimmed.lastIndex(of: "/") {
                candidate = slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
            } else {
                candidate = "."
            }
        }
    }
}
