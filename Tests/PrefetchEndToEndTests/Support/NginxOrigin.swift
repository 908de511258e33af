import Foundation
import Testing

/// A real nginx on 127.0.0.1 serving a temporary folder, for the ordinary Range / ETag /
/// 304 behaviour of a well-known server. It runs in the foreground as this process's own
/// child (a daemon would inherit the test's descriptors and outlive it).
final class NginxOrigin {
    let root: URL
    let port: Int
    let scheme: String
    private let run: URL
    private let process = Process()
    private static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../scripts/demo-origin").standardized

    /// With `tls` (PEM certificate and key paths), HTTPS only, offering HTTP/2 by ALPN; with
    /// `clientCA` too, every request must present a client certificate that CA signed.
    init(root: URL, tls: (certificate: String, key: String)? = nil, clientCA: String? = nil) throws {
        self.root = root
        scheme = tls == nil ? "http" : "https"
        run = root.deletingLastPathComponent().appendingPathComponent("nginx-run-" + UUID().uuidString.prefix(8))
        port = try LoopbackPort.free()
        try Self.shell([Self.script.path, "config", root.path, "\(port)", run.path] + (tls.map { [$0.certificate, $0.key] } ?? [])
                       + (clientCA.map { [$0] } ?? []))
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", run.appendingPathComponent("nginx.conf").path, "-e", run.appendingPathComponent("error.log").path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        if LoopbackPort.waitUntilAccepting(port, process: process) { return }
        process.terminate()
        throw NginxError(message: "nginx did not start on port \(port)")
    }

    deinit {
        process.terminate()  // SIGTERM: nginx's master stops its worker and exits
        process.waitUntilExit()
    }

    func url(_ path: String) -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }

    /// The access log: `STATUS METHOD URI range=[…] if_range=[…] inm=[…] ims=[…] ae=[…] proto=… bytes=N` per request.
    func log() -> [String] {
        (try? String(contentsOf: run.appendingPathComponent("access.log"), encoding: .utf8))?
            .split(separator: "\n").map { $0.replacingOccurrences(of: "\\x22", with: "\"") } ?? []  // nginx escapes quotes
    }

    static func shell(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NginxError(message: "\(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}

struct NginxError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
