import Foundation

/// A fresh temporary folder for one test, removed when the value is released: the one
/// temporary-folder helper of both test targets.
public final class TemporaryFolder: @unchecked Sendable {
    public let url: URL
    public var path: String { url.path }

    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("prefetch-test-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// Writes `text` to `name` (folders created as needed) and returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        try write(name, Data(text.utf8))
    }

    /// Writes `bytes` to `name` (folders created as needed) and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: Data) throws -> String {
        let file = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: file)
        return file.path
    }

    /// A path inside the folder (nothing created).
    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Every path below the folder, relative to it, sorted.
    public func listing() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: url.path)
        return (enumerator?.allObjects as? [String] ?? []).sorted()
    }
}
