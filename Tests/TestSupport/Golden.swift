import Foundation

/// Golden files: output compared with a file kept beside the tests. With
/// `PREFETCH_RECORD_GOLDEN=1` the file is rewritten from the output instead (then review
/// the diff). The one golden helper of both test targets.
public enum Golden {
    /// Whether `text` is the content of `file` (after recording it, when asked to).
    public static func matches(_ text: String, _ file: URL) throws -> Bool {
        if ProcessInfo.processInfo.environment["PREFETCH_RECORD_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        return text == (try String(contentsOf: file, encoding: .utf8))
    }
}
