import Foundation
import Testing

/// Runs the built `prefetch` binary as a process, as users and outside tests do.
enum BinaryRunner {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// The `prefetch` executable beside the test bundle (`.build/<config>/prefetch`).
    static let executable: URL = {
        var folder = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("prefetch")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            folder.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../.build/debug/prefetch").standardized
    }()

    /// What every prefetch run takes from the test process's environment:
    /// `PREFETCH_TRANSFER_THREADS`, so `PREFETCH_TRANSFER_THREADS=2 swift test` puts every
    /// run that does not set its own on two transfer threads (`scripts/test` does so).
    static var inherited: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key == "PREFETCH_TRANSFER_THREADS" }
    }

    /// Runs `prefetch arguments…` in `directory`, with `environment` added to a minimal one.
    /// Output goes to files, so a chatty child can never block on a full pipe.
    /// `executable` runs something else instead (e.g. `script`, to give prefetch a terminal).
    static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:],
                    executable: URL = executable) throws -> Result {
        let scratch = try TemporaryFolder()
        let outURL = scratch.url.appendingPathComponent("stdout")
        let errURL = scratch.url.appendingPathComponent("stderr")
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)
        defer { try? outHandle.close(); try? errHandle.close() }

        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        var env = ["PATH": "/usr/bin:/bin", "TZ": "UTC", "HOME": scratch.url.path]
        env.merge(inherited) { $1 }
        env.merge(environment) { $1 }
        process.environment = env
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return Result(status: process.terminationStatus,
                      stdout: try String(contentsOf: outURL, encoding: .utf8),
                      stderr: try String(contentsOf: errURL, encoding: .utf8))
    }
}

/// A fresh temporary folder, removed when the value is released.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("prefetch-test-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// Writes `text` to `name` (folders created as needed) and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// Every path below the folder, relative to it, sorted.
    func listing() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: url.path)
        return (enumerator?.allObjects as? [String] ?? []).sorted()
    }
}
