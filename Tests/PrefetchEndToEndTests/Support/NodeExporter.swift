import Foundation
import Testing

/// Debian's real `prometheus-node-exporter` on 127.0.0.1, with only its textfile collector,
/// reading a metrics folder: the consumer prefetch's metrics file is for (SPEC §6).
final class NodeExporter {
    static let binary = "/usr/bin/prometheus-node-exporter"
    let port: Int
    private let process = Process()

    init(folder: URL) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw NginxError(message: "prometheus-node-exporter is not installed (scripts/setup prometheus-node-exporter)")
        }
        port = try LoopbackPort.free()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults", "--collector.textfile",
                             "--collector.textfile.directory=\(folder.path)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        if LoopbackPort.waitUntilAccepting(port, process: process) { return }
        process.terminate()
        throw NginxError(message: "node_exporter did not start on port \(port)")
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    /// `/metrics` as scraped, by curl.
    func scrape() throws -> String {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-sf", "http://127.0.0.1:\(port)/metrics"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        guard curl.terminationStatus == 0 else { throw NginxError(message: "curl exited \(curl.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }

    /// The value of the sample `name{labels}` (labels as written, in order), nil when absent.
    static func value(_ text: String, _ sample: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(sample + " ") {
            return Double(line.dropFirst(sample.count + 1))
        }
        return nil
    }
}
