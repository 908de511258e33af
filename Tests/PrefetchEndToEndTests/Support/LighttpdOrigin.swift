import Foundation
import Glibc

/// A real lighttpd 1.4 (Debian's) on 127.0.0.1 serving a temporary folder, with a config of
/// its own: a third way of answering ranges (SPEC §9's deltas meet nginx's, Apache's and its
/// own). Its stat cache is off: a file replaced is served as it is now. It runs in the foreground (`-D`) as this process's child, spawned as Apache is (no
/// signal blocked, no descriptor inherited), and stops with it.
final class LighttpdOrigin {
    static let binary = "/usr/sbin/lighttpd"

    let root: URL
    let port: Int
    private let run: URL
    private var pid: pid_t = 0

    init(root: URL) throws {
        self.root = root
        run = root.deletingLastPathComponent().appendingPathComponent("lighttpd-run-" + UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        chmod(run.path, 0o777)
        port = try LoopbackPort.free()
        let user = getuid() == 0 ? "server.username = \"www-data\"\nserver.groupname = \"www-data\"\n" : ""
        let config = """
            server.document-root = "\(root.path)"
            server.bind = "127.0.0.1"
            server.port = \(port)
            server.errorlog = "\(run.path)/error.log"
            \(user)server.modules = ("mod_accesslog")
            accesslog.filename = "\(run.path)/access.log"
            accesslog.format = "%>s %m %U range=[%{Range}i] if_range=[%{If-Range}i] bytes=%O"
            mimetype.assign = ("" => "application/octet-stream")
            server.stat-cache-engine = "disable"

            """
        try config.write(to: run.appendingPathComponent("lighttpd.conf"), atomically: true, encoding: .utf8)
        pid = try ApacheOrigin.spawn([Self.binary, "-D", "-f", run.appendingPathComponent("lighttpd.conf").path])
        if LoopbackPort.waitUntilAccepting(port) { return }
        stop()
        throw NginxError(message: "lighttpd did not start on port \(port): "
                         + ((try? String(contentsOf: run.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""))
    }

    deinit {
        stop()
    }

    private func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(10)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline { kill(pid, SIGKILL); waitpid(pid, &status, 0); break }
            usleep(20_000)
        }
        pid = 0
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The access log: `STATUS METHOD URI range=[…] if_range=[…] bytes=N` per request.
    /// lighttpd writes it out about once a second: this waits until `requests` lines are there
    /// (at most 5 s).
    func log(requests: Int = 1) -> [ApacheOrigin.Logged] {
        let deadline = Date().addingTimeInterval(5)
        while true {
            let lines = ApacheOrigin.parseLog((try? String(contentsOf: run.appendingPathComponent("access.log"), encoding: .utf8)) ?? "")
            if lines.count >= requests || Date() > deadline { return lines }
            usleep(100_000)
        }
    }
}
