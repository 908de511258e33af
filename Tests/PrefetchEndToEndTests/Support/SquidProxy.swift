import Foundation
import Glibc

/// A real Squid (Debian's `squid`) on 127.0.0.1: the site cache a fleet of kiosks shares.
/// It has its own squid.conf, disk cache, logs and pid file in a temporary folder, and runs
/// in the foreground (`squid -N`) as this process's child: never the packaged service. Its
/// configuration is the site settings docs/fleet.md ("A site cache (Squid)") recommends
/// (`SquidProxy.siteSettings`) plus what a private instance needs.
final class SquidProxy {
    /// The manual's site settings (docs/fleet.md, "A site cache (Squid)"), read from it so the two never
    /// differ: its squid.conf lines, comments dropped, but for what belongs to a test — the
    /// `http_access` line for the site's kiosks (here they are all on localhost) and the
    /// cache_dir's place, size and folder levels (4 × 4 folders are made in milliseconds,
    /// 16 × 256 take half a second).
    static func siteSettings() throws -> [String] {
        let lines = try MarkdownDocument("docs/fleet.md").lines
        guard let marker = lines.firstIndex(where: { $0.contains("and give Debian's `squid` these lines") }),
              let open = lines[marker...].firstIndex(where: { $0.hasPrefix("```") }),
              let close = lines[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") }) else {
            throw SquidError(message: "docs/fleet.md has no squid.conf block after \"and give Debian's `squid` these lines\"")
        }
        let settings = lines[(open + 1)..<close]
            .map { $0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0].trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("http_access") }
            .map { $0.hasPrefix("cache_dir ") ? "cache_dir ufs CACHE_DIR 512 4 4" : $0 }
        guard settings.contains(where: { $0.hasPrefix("cache_dir ") }), settings.count >= 5 else {
            throw SquidError(message: "docs/fleet.md's squid.conf block lost its settings: \(settings)")
        }
        return settings
    }

    static let executable = "/usr/sbin/squid"

    let folder: URL
    let port: Int
    /// `http`, or `https` for a TLS proxy.
    let scheme: String
    private let process = Process()
    private var started = false

    /// `settings` replace the manual's (`siteSettings`); `hosts` are lines of squid's own hosts
    /// file (`127.0.0.1 origin.fleet.test`), for names only squid can resolve; `tls` (PEM
    /// certificate and key) makes it an HTTPS proxy.
    init(settings: [String]? = nil, hosts: [String] = [], tls: (certificate: String, key: String)? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw SquidError(message: "squid is not installed (\(Self.executable)): run scripts/setup squid, which scripts/test does")
        }
        folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("prefetch-squid-" + UUID().uuidString.prefix(8))
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        port = try LoopbackPort.free()
        scheme = tls == nil ? "http" : "https"
        let f = folder.path
        // Started as root, squid drops to cache_effective_user, which must own its folder.
        let user = geteuid() == 0 ? getpwnam("proxy")?.pointee : nil
        let listen = tls.map { "https_port 127.0.0.1:\(port) tls-cert=\($0.certificate) tls-key=\($0.key)" } ?? "http_port 127.0.0.1:\(port)"
        let conf = [
            listen,
            "visible_hostname prefetch-test-squid",
            "pid_filename \(f)/squid.pid",
            user == nil ? "" : "cache_effective_user proxy",
            "cache_mem 32 MB",
            "coredump_dir \(f)",
            "cache_log \(f)/cache.log",
            "cache_store_log none",
            // One line per request: what squid did, the status it sent, and the headers resume and
            // revalidation depend on, as the kiosk sent them.
            "logformat prefetch %Ss/%>Hs %rm %ru range=[%{Range}>h] if_range=[%{If-Range}>h] inm=[%{If-None-Match}>h] ims=[%{If-Modified-Since}>h]",
            "access_log stdio:\(f)/access.log prefetch",
            "hosts_file \(f)/hosts",
            "pinger_enable off",
            "shutdown_lifetime 0 seconds",
            "http_access allow localhost",
            "http_access deny all",
        ] + (try settings ?? Self.siteSettings()).map { $0.replacingOccurrences(of: "CACHE_DIR", with: "\(f)/cache") }
        try (conf.filter { !$0.isEmpty }.joined(separator: "\n") + "\n").write(to: folder.appendingPathComponent("squid.conf"), atomically: true, encoding: .utf8)
        try (["127.0.0.1 localhost"] + hosts).joined(separator: "\n").appending("\n")
            .write(to: folder.appendingPathComponent("hosts"), atomically: true, encoding: .utf8)
        if let user {
            for path in [f, f + "/squid.conf", f + "/hosts"] { chown(path, user.pw_uid, user.pw_gid) }
        }
        let confPath = folder.appendingPathComponent("squid.conf").path
        if conf.contains(where: { $0.hasPrefix("cache_dir") }) {
            let status = try Self.squid(["-N", "-z", "-f", confPath])  // creates the cache_dir's folders
            guard status == 0 else { throw SquidError(message: "squid -z exited \(status): \(cacheLog())") }
        }
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["-N", "-f", confPath]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        started = true
        for _ in 0..<200 {
            if cacheLog().contains("Accepting HTTP") || cacheLog().contains("Accepting HTTPS") { return }
            if !process.isRunning { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        stop()
        throw SquidError(message: "squid did not start on port \(port): \(cacheLog())")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// SIGKILL: a child of the test process inherits its blocked SIGTERM, and nothing of this
    /// squid is kept. Its helper (unlinkd) ends when squid's end closes its pipe.
    private func stop() {
        guard started else { return }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// `http://127.0.0.1:PORT` (`https://` for a TLS proxy): what `proxy` or `http_proxy` names.
    var url: String { "\(scheme)://127.0.0.1:\(port)" }

    /// One request as squid's access log has it.
    struct Entry: CustomStringConvertible {
        /// What squid did (`TCP_MISS`, `TCP_HIT`, `TCP_MEM_HIT`, `TCP_INM_HIT`,
        /// `TCP_REFRESH_UNMODIFIED`, …) and the status it sent the kiosk.
        let result: String
        let status: Int
        let method: String
        let url: String
        /// The kiosk's request headers; nil when it sent none.
        let range: String?, ifRange: String?, ifNoneMatch: String?, ifModifiedSince: String?
        var description: String {
            "\(result)/\(status) \(method) \(url) range=\(range ?? "-") if_range=\(ifRange ?? "-") inm=\(ifNoneMatch ?? "-")"
        }
    }

    /// The requests squid finished, in order (squid writes a line when a request ends).
    func log() -> [Entry] {
        let text = (try? String(contentsOf: folder.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 3).map(String.init)
            guard fields.count == 4, let slash = fields[0].lastIndex(of: "/"),
                  let status = Int(fields[0][fields[0].index(after: slash)...]) else { return nil }
            let headers = " " + fields[3]
            func header(_ name: String) -> String? {
                guard let start = headers.range(of: " \(name)=[")?.upperBound,
                      let end = headers[start...].range(of: "]")?.lowerBound else { return nil }
                let value = String(headers[start..<end])
                return value == "-" ? nil : value
            }
            return Entry(result: String(fields[0][..<slash]), status: status, method: fields[1], url: fields[2],
                         range: header("range"), ifRange: header("if_range"), ifNoneMatch: header("inm"), ifModifiedSince: header("ims"))
        }
    }

    /// The entries for URLs ending in `suffix` ("/a.bin").
    func log(_ suffix: String) -> [Entry] { log().filter { $0.url.hasSuffix(suffix) } }

    /// Whether squid's disk cache holds an object file of at least `bytes` bytes (the body,
    /// after squid's own metadata and the response head): an object it has finished storing.
    func hasStored(atLeast bytes: Int) -> Bool {
        let cache = folder.appendingPathComponent("cache")
        guard let files = FileManager.default.enumerator(at: cache, includingPropertiesForKeys: [.fileSizeKey]) else { return false }
        return files.contains { item in
            guard let url = item as? URL, url.lastPathComponent != "swap.state" else { return false }
            return ((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0) >= bytes
        }
    }

    func cacheLog() -> String {
        (try? String(contentsOf: folder.appendingPathComponent("cache.log"), encoding: .utf8)) ?? ""
    }

    private static func squid(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

struct SquidError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
