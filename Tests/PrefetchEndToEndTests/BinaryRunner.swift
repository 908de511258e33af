import Foundation
import Glibc
import Testing
import TestSupport

/// What a finished `prefetch` process left: the one result type of the end-to-end tests.
struct RunResult {
    let status: Int32
    let stdout: String
    let stderr: String
    let seconds: Double

    /// `--json` event lines.
    var events: [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    func events(_ type: String, _ path: String) -> [[String: Any]] {
        events.filter { $0["type"] as? String == type && $0["path"] as? String == path }
    }

    func placed(_ path: String) -> Bool { !events("placed", path).isEmpty }

    /// In-run retries announced for `path` (`failed` with `final: false`).
    func retries(_ path: String) -> [[String: Any]] {
        events("failed", path).filter { $0["final"] as? Bool == false }
    }

    /// The error of the final failure of `path`, if it failed.
    func failure(_ path: String) -> String? {
        events("failed", path).last { $0["final"] as? Bool == true }?["error"] as? String
    }

    var diagnostics: String { "exit \(status)\nstdout:\n\(stdout)\nstderr:\n\(stderr)" }
}

/// Runs the built `prefetch` binary as a process, as users and outside tests do.
enum BinaryRunner {
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
    /// run that does not set its own on two transfer threads (`scripts/test` does so), and
    /// the sanitizers' options (`scripts/sanitize`), so a sanitized binary reports where the
    /// test runner does.
    static var inherited: [String: String] {
        ProcessInfo.processInfo.environment.filter { inheritedKeys.contains($0.key) }
    }

    static let inheritedKeys: Set = ["PREFETCH_TRANSFER_THREADS", "PREFETCH_SANITIZER", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"]

    /// Which sanitizer the binary was built with (`scripts/sanitize` says), or nil.
    static var sanitizer: String? { ProcessInfo.processInfo.environment["PREFETCH_SANITIZER"] }

    /// The environment for a prefetch traced by strace: LeakSanitizer cannot work under
    /// ptrace (it stops every thread with ptrace itself), so it is off there; AddressSanitizer
    /// still checks every access, and reports on stderr (a traced run may be another user,
    /// who cannot write to the reports folder).
    static func traced(_ environment: [String: String]) -> [String: String] {
        guard let options = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] else { return environment }
        let kept = options.split(separator: ":").filter { !$0.hasPrefix("log_path=") && !$0.hasPrefix("detect_leaks=") }
        return environment.merging(["ASAN_OPTIONS": (kept + ["detect_leaks=0"]).joined(separator: ":")]) { $1 }
    }

    /// Runs `prefetch arguments…` in `directory`, with `environment` added to a minimal one.
    /// Output goes to files, so a chatty child can never block on a full pipe. A process
    /// still running after `timeout` seconds is killed (SIGKILL) and recorded as an issue.
    /// `executable` runs something else instead (e.g. `script`, to give prefetch a terminal).
    static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:],
                    executable: URL = executable, timeout: Double = 60,
                    sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> RunResult {
        try start(arguments, in: directory, environment: environment, executable: executable)
            .finish(timeout: timeout, sourceLocation: sourceLocation)
    }

    /// Starts what `run` runs and returns at once: several processes can then run side by
    /// side (a fleet of kiosks), each finished with `finish`.
    static func start(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:],
                      executable: URL = executable) throws -> Running {
        let scratch = try TemporaryFolder()
        let outURL = scratch.url.appendingPathComponent("stdout")
        let errURL = scratch.url.appendingPathComponent("stderr")
        try Data().write(to: outURL)
        try Data().write(to: errURL)
        let outHandle = try FileHandle(forWritingTo: outURL)
        let errHandle = try FileHandle(forWritingTo: errURL)

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
        let running = Running(process: process, arguments: arguments, scratch: scratch, outHandle: outHandle, errHandle: errHandle)
        try process.run()
        return running
    }

    /// A process `start` started.
    final class Running {
        let process: Process
        let arguments: [String]
        private let scratch: TemporaryFolder
        private let outHandle: FileHandle, errHandle: FileHandle
        private let started = Date()

        fileprivate init(process: Process, arguments: [String], scratch: TemporaryFolder, outHandle: FileHandle, errHandle: FileHandle) {
            self.process = process
            self.arguments = arguments
            self.scratch = scratch
            self.outHandle = outHandle
            self.errHandle = errHandle
        }

        deinit {
            try? outHandle.close()
            try? errHandle.close()
        }

        /// Waits for the process (killing it after `timeout` seconds from its start, as an
        /// issue) and returns what it left.
        func finish(timeout: Double = 60, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> RunResult {
            while process.isRunning && Date().timeIntervalSince(started) < timeout { usleep(20_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                Issue.record("prefetch \(arguments.first ?? "") did not finish within \(Int(timeout)) s; killed", sourceLocation: sourceLocation)
            }
            process.waitUntilExit()
            return RunResult(status: process.terminationStatus,
                             stdout: try String(contentsOf: scratch.url.appendingPathComponent("stdout"), encoding: .utf8),
                             stderr: try String(contentsOf: scratch.url.appendingPathComponent("stderr"), encoding: .utf8),
                             seconds: Date().timeIntervalSince(started))
        }
    }
}
