import Foundation
import Glibc

/// A real Apache httpd 2.4 (Debian's apache2) on 127.0.0.1 serving a temporary folder, with
/// a config of its own (no /etc/apache2): the server whose If-Range rules found FAULTS 7 and
/// 8 — a file published this second gets a weak ETag and a Last-Modified equal to the Date,
/// and a date in If-Range is honoured only once the file is 60 s old. Files whose name
/// starts with `no-etag` are served with `FileETag None` (Last-Modified only). It runs in
/// the foreground as this process's child and stops with it. It is spawned with no signal
/// blocked: Apache's parent, unlike nginx's, never unblocks SIGTERM itself, and the test
/// runner's threads block most signals (a `Process` child inherits that mask and could not
/// be stopped).
final class ApacheOrigin {
    static let binary = "/usr/sbin/apache2"
    static var available: Bool { FileManager.default.isExecutableFile(atPath: binary) }

    let root: URL
    let port: Int
    private let run: URL
    private var pid: pid_t = 0

    init(root: URL) throws {
        self.root = root
        run = root.deletingLastPathComponent().appendingPathComponent("apache-run-" + UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        chmod(run.path, 0o755)
        port = try LoopbackPort.free()
        let user = getuid() == 0 ? "User www-data\nGroup www-data\n" : ""  // as root it serves as www-data, as the package does
        let config = """
            ServerName 127.0.0.1
            Listen 127.0.0.1:\(port)
            LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
            LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
            DefaultRuntimeDir \(run.path)
            PidFile \(run.path)/httpd.pid
            ErrorLog \(run.path)/error.log
            \(user)DocumentRoot \(root.path)
            <Directory \(root.path)>
              Require all granted
            </Directory>
            <Files "no-etag*">
              FileETag None
            </Files>
            LogFormat "%>s %m %U range=[%{Range}i] if_range=[%{If-Range}i] bytes=%O" probe
            CustomLog \(run.path)/access.log probe

            """
        try config.write(to: run.appendingPathComponent("httpd.conf"), atomically: true, encoding: .utf8)
        pid = try Self.spawn([Self.binary, "-f", run.appendingPathComponent("httpd.conf").path, "-DFOREGROUND"])
        if LoopbackPort.waitUntilAccepting(port) { return }
        stop()
        throw NginxError(message: "apache2 did not start on port \(port): "
                         + ((try? String(contentsOf: run.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""))
    }

    deinit {
        stop()
    }

    /// SIGTERM (the parent stops its children and exits), SIGKILL after 10 s; reaped.
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

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }

    /// posix_spawn with an empty signal mask and default dispositions, standard streams on
    /// /dev/null and no other descriptor inherited.
    static func spawn(_ arguments: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // No other descriptor: a pipe another test reads must not stay open in Apache (glibc
        // 2.34's closefrom action; the Glibc module does not export it, so it is looked up).
        guard let closeFrom = Self.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw OriginError.system("posix_spawn_file_actions_addclosefrom_np", ENOSYS)
        }
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard result == 0 else { throw OriginError.system("posix_spawn \(arguments[0])", result) }
        return pid
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// One request as the access log has it.
    struct Logged {
        let status: Int
        let path: String
        let range: String?
        let ifRange: String?
        let bytes: Int
    }

    /// The access log (Apache writes a request's line once it is answered).
    func log() -> [Logged] {
        Self.parseLog((try? String(contentsOf: run.appendingPathComponent("access.log"), encoding: .utf8)) ?? "")
    }

    /// Lines `STATUS METHOD PATH range=[…] if_range=[…] bytes=N` (lighttpd's log is made the same).
    static func parseLog(_ text: String) -> [Logged] {
        text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 3)
            guard parts.count == 4, let status = Int(parts[0]) else { return nil }
            func field(_ name: String) -> String? {
                guard let start = line.range(of: name + "=[")?.upperBound, let end = line[start...].range(of: "]")?.lowerBound else { return nil }
                let value = line[start..<end].replacingOccurrences(of: "\\\"", with: "\"")
                return value == "-" ? nil : value
            }
            let bytes = line.range(of: "bytes=", options: .backwards).map { Int(line[$0.upperBound...]) ?? 0 } ?? 0
            return Logged(status: status, path: String(parts[2]), range: field("range"), ifRange: field("if_range"), bytes: bytes)
        }
    }
}
