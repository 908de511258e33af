import Foundation
import Glibc
import TestSupport

/// A `prefetch` process measured by GNU time (`/usr/bin/time`, Debian's `time`): its peak
/// resident set (`ru_maxrss`) and its CPU time, which a loaded machine does not inflate as
/// it does wall time. Measured by a small parent on purpose: a child spawned straight from
/// the test process (vfork, or fork) starts with the test process's memory counted as its
/// own, and `ru_maxrss` keeps that high-water mark through `exec`.
struct MeasuredRun {
    /// The exit status, or nil when a signal ended it.
    let status: Int32?
    /// The signal that ended it (SIGSEGV for a stack overflow), if one did.
    let signal: Int32?
    let stdout: String
    let stderr: String
    /// Wall-clock seconds from spawn to exit.
    let seconds: Double
    /// User and system CPU seconds.
    let cpuSeconds: Double
    /// Peak resident set size in MiB.
    let peakMiB: Double
    /// True when it had to be killed at the timeout.
    let timedOut: Bool

    var summary: String {
        "exit \(status.map(String.init) ?? "-") signal \(signal.map(String.init) ?? "-"), \(String(format: "%.2f", cpuSeconds)) s CPU, "
            + "\(String(format: "%.2f", seconds)) s, peak \(String(format: "%.1f", peakMiB)) MiB\nstderr: \(stderr.prefix(2000))"
    }

    /// Under a sanitizer (`scripts/sanitize`) the peak resident set is the sanitizer's — shadow
    /// memory, quarantined frees, redzones — not prefetch's: memory bounds are checked in the
    /// plain suite (`scripts/test`), the rest everywhere.
    static var memoryIsTheSanitizers: Bool { BinaryRunner.sanitizer != nil }

    /// Runs `prefetch arguments…` in `directory` with the same minimal environment as
    /// `BinaryRunner`; killed (SIGKILL, the whole group) after `timeout` seconds.
    static func run(_ arguments: [String], in directory: URL, environment: [String: String] = [:], timeout: Double = 120) throws -> MeasuredRun {
        let scratch = try TemporaryFolder()
        let out = scratch.file("stdout"), err = scratch.file("stderr"), figures = scratch.file("figures")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
        process.arguments = ["-f", "%U %S %M %x", "-o", figures, BinaryRunner.executable.path] + arguments
        process.currentDirectoryURL = directory
        var env = ["PATH": "/usr/bin:/bin", "TZ": "UTC", "HOME": scratch.path]
        env.merge(BinaryRunner.inherited) { $1 }
        env.merge(environment) { $1 }
        process.environment = env
        try Data().write(to: URL(fileURLWithPath: out))
        try Data().write(to: URL(fileURLWithPath: err))
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        let errHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        defer {
            try? outHandle.close()
            try? errHandle.close()
        }
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        var timedOut = false
        while process.isRunning {
            if Date().timeIntervalSince(started) > timeout {
                timedOut = true
                // prefetch first (time's child, by its id), then time.
                let pid = process.processIdentifier
                let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
                for child in children.split(separator: " ").compactMap({ pid_t($0) }) { kill(child, SIGKILL) }
                kill(pid, SIGKILL)
                break
            }
            usleep(2_000)
        }
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        // The last line: "%U %S %M %x"; before it, "Command terminated by signal N" if so.
        let report = ((try? String(contentsOfFile: figures, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        let numbers = (report.last ?? "").split(separator: " ").compactMap { Double($0) }
        let signal = report.first { $0.hasPrefix("Command terminated by signal ") }.flatMap { Int32($0.split(separator: " ").last ?? "") }
        return MeasuredRun(status: signal == nil && numbers.count == 4 ? Int32(numbers[3]) : nil, signal: signal,
                           stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
                           stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "",
                           seconds: seconds, cpuSeconds: numbers.count == 4 ? numbers[0] + numbers[1] : .infinity,
                           peakMiB: numbers.count == 4 ? numbers[2] / 1024 : .infinity, timedOut: timedOut)
    }
}
