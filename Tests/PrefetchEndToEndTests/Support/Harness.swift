import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// An HTTP origin on 127.0.0.1 that feeds can point at.
protocol TestServer: AnyObject {
    /// "http://127.0.0.1:PORT" followed by `path`.
    func url(_ path: String) -> String
}

extension TestOrigin: TestServer {}
extension NginxOrigin: TestServer {}
extension ApacheOrigin: TestServer {}
extension LighttpdOrigin: TestServer {}

/// The fault-injecting origin's harness (FAULTS scenarios), and real nginx's.
typealias FaultHarness = Harness<TestOrigin>
typealias NginxHarness = Harness<NginxOrigin>
typealias ApacheHarness = Harness<ApacheOrigin>
typealias LighttpdHarness = Harness<LighttpdOrigin>

/// One end-to-end case: a temporary folder with `feeds/` and `cache/`, an origin on
/// 127.0.0.1, and the real `prefetch` binary run in that folder — the one harness of the
/// end-to-end suites, whichever origin they use.
final class Harness<Origin: TestServer> {
    let dir: TemporaryFolder
    let origin: Origin
    var cache: URL { dir.url.appendingPathComponent("cache") }

    init(dir: TemporaryFolder, origin: Origin) {
        self.dir = dir
        self.origin = origin
    }

    /// Writes `feeds/<name>.yaml`; `ORIGIN` becomes `http://127.0.0.1:PORT`.
    func feed(_ yaml: String, name: String = "t") throws {
        try dir.write("feeds/\(name).yaml", yaml.replacingOccurrences(of: "ORIGIN", with: origin.url("")))
    }

    // MARK: Running prefetch

    /// `prefetch <arguments> --feeds feeds --cache cache --config <config>` in the folder;
    /// killed (and recorded as an issue) when it has not finished within `timeout` seconds,
    /// so a regression fails the test instead of hanging the suite.
    func run(_ arguments: [String] = ["run"], environment: [String: String] = [:], config: String = "/dev/null", timeout: Double = 60,
             sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> RunResult {
        try BinaryRunner.run(arguments + ["--feeds", "feeds", "--cache", "cache", "--config", config], in: dir.url, environment: environment,
                             timeout: timeout, sourceLocation: sourceLocation)
    }

    /// `prefetch run --json` with the clock moved by `offset` (e.g. "+2h").
    func runJSON(offset: String? = nil, config: String = "/dev/null", environment: [String: String] = [:], timeout: Double = 60,
                 sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> RunResult {
        var environment = environment
        if let offset { environment["PREFETCH_CLOCK_OFFSET"] = offset }
        return try run(["run", "--json"], environment: environment, config: config, timeout: timeout, sourceLocation: sourceLocation)
    }

    /// The resource lines of `prefetch plan --json` with the clock moved by `offset`.
    func plan(offset: String? = nil) throws -> [[String: Any]] {
        try run(["plan", "--json"], environment: offset.map { ["PREFETCH_CLOCK_OFFSET": $0] } ?? [:])
            .events.filter { $0["type"] as? String == "resource" }
    }

    /// The feed lines of `prefetch status --json`.
    func status(environment: [String: String] = [:]) throws -> [[String: Any]] {
        try run(["status", "--json"], environment: environment).events.filter { $0["type"] as? String == "feed" }
    }

    /// `prefetch daemon` in the background, stdout and stderr to the returned log file;
    /// `environment` is added to the test's own (`NOTIFY_SOCKET`, `WATCHDOG_USEC`, …).
    func startDaemon(config: String = "/dev/null", environment: [String: String] = [:]) throws -> (Process, URL) {
        let process = Process()
        process.executableURL = BinaryRunner.executable
        process.arguments = ["daemon", "--feeds", "feeds", "--cache", "cache", "--config", config]
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        process.currentDirectoryURL = dir.url
        let log = dir.url.appendingPathComponent("daemon.log")
        try Data().write(to: log)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return (process, log)
    }

    /// `prefetch run --json` in the background, its stdout to the returned pipe.
    func startRun(environment: [String: String] = [:]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = BinaryRunner.executable
        process.arguments = ["run", "--json", "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.currentDirectoryURL = dir.url
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }

    // MARK: The cache

    /// The bytes of `CACHE/path` ("t/a.bin"), if it is there.
    func cached(_ path: String) -> [UInt8]? {
        (try? Data(contentsOf: cache.appendingPathComponent(path))).map { [UInt8]($0) }
    }

    func digest(_ path: String) -> String? { cached(path).map(FaultTests.sha) }

    /// Whether `CACHE/path` exists (as anything, symlinks not followed).
    func exists(_ path: String) -> Bool { stat(path) != nil }

    func size(_ path: String) -> Int? { stat(path).map { Int($0.st_size) } }

    func stat(_ path: String) -> stat? {
        var info = Glibc.stat()
        return lstat(cache.appendingPathComponent(path).path, &info) == 0 ? info : nil
    }

    var partials: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: cache.appendingPathComponent(".prefetch/partial").path)) ?? []
    }

    func partialURL(_ path: String, feed: String = "t") -> URL {
        cache.appendingPathComponent(".prefetch/partial/" + CacheFolder.partialName(feed: feed, path: path))
    }

    func partialSize(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: partialURL(path).path)[.size] as? Int) ?? nil
    }

    /// Plants what a previous run (or a crash) left: partial bytes and/or a recorded partial.
    /// `bootID`: the boot the record says wrote it (with the planted file's inode); nil for
    /// a record as state.db version 1 kept it (trusted to its fsynced offset only).
    /// `date`, `acceptRangesNone`: what else the response that began it said (§7's resumable rule).
    func plant(_ path: String, bytes: [UInt8]?, synced: UInt64?, validators: Validators = Validators(),
               total: UInt64? = nil, urlHash: String? = nil, bootID: String? = nil, inode: UInt64? = nil,
               date: String? = nil, acceptRangesNone: Bool = false) throws {
        try FileManager.default.createDirectory(at: cache.appendingPathComponent(".prefetch/partial"), withIntermediateDirectories: true)
        if let bytes { try Data(bytes).write(to: partialURL(path)) }
        if let synced {
            let store = try StateStore.openForWriting(cache.path + "/.prefetch/state.db")
            let hash = try urlHash ?? ResourceURL.parse(origin.url("/" + path)).identityHash
            var info = Glibc.stat()
            let planted = lstat(partialURL(path).path, &info) == 0 ? UInt64(info.st_ino) : nil
            try store.recordPartial(ResourceKey(feed: "t", path: path), PartialState(
                urlHash: hash, validators: validators, totalLength: total, syncedOffset: synced, updatedAt: 0,
                bootID: bootID, inode: bootID == nil ? nil : inode ?? planted, date: date, acceptRangesNone: acceptRangesNone))
        }
    }

    func state() -> StateSnapshot? { FaultTests.snapshot(cache) }

    func resourceState(_ path: String) -> ResourceState? { state()?.resources[ResourceKey(feed: "t", path: path)] }
}

extension Harness where Origin == TestOrigin {
    /// A fresh folder and a fault-injecting origin.
    convenience init() throws {
        self.init(dir: try TemporaryFolder(), origin: try TestOrigin())
    }

    /// FAULTS.md's invariant, plus FAULTS 15 for every request the origin saw.
    /// `allowed`: for each final path ("t/a.bin"), the contents it may hold (previous good, current).
    func checkInvariant(_ allowed: [String: [[UInt8]]], root: URL? = nil, origins: [TestOrigin] = [],
                        sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        FaultTests.checkCache(root ?? cache, allowed: allowed, sourceLocation: sourceLocation)
        for server in [origin] + origins {
            for request in server.requests where request.header("accept-encoding") != "identity" {
                Issue.record("request \(request.path) sent Accept-Encoding \(request.header("accept-encoding") ?? "(none)")",
                             sourceLocation: sourceLocation)
            }
        }
    }
}

extension Harness where Origin == NginxOrigin {
    /// A fresh folder whose `www/` holds `files`, served by a real nginx.
    convenience init(files: [String: [UInt8]], tls: (certificate: String, key: String)? = nil, clientCA: String? = nil) throws {
        let dir = try TemporaryFolder()
        chmod(dir.url.path, 0o755)  // nginx workers run as another user
        for (name, bytes) in files { try dir.write("www/" + name, Data(bytes)) }
        try FileManager.default.createDirectory(at: dir.url.appendingPathComponent("www"), withIntermediateDirectories: true)
        self.init(dir: dir, origin: try NginxOrigin(root: dir.url.appendingPathComponent("www"), tls: tls, clientCA: clientCA))
    }

    /// The folder nginx serves.
    var www: URL { dir.url.appendingPathComponent("www") }
}

extension Harness where Origin == ApacheOrigin {
    /// A fresh folder whose `www/` holds `files`, served by a real Apache httpd.
    convenience init(apacheFiles files: [String: [UInt8]]) throws {
        let dir = try TemporaryFolder()
        chmod(dir.url.path, 0o755)  // Apache's children run as another user
        try FileManager.default.createDirectory(at: dir.url.appendingPathComponent("www"), withIntermediateDirectories: true)
        for (name, bytes) in files { try dir.write("www/" + name, Data(bytes)) }
        self.init(dir: dir, origin: try ApacheOrigin(root: dir.url.appendingPathComponent("www")))
    }

    /// The folder Apache serves.
    var www: URL { dir.url.appendingPathComponent("www") }
}

extension Harness where Origin == LighttpdOrigin {
    /// A fresh folder whose `www/` holds `files`, served by a real lighttpd.
    convenience init(lighttpdFiles files: [String: [UInt8]]) throws {
        let dir = try TemporaryFolder()
        chmod(dir.url.path, 0o755)  // lighttpd serves as another user when run as root
        try FileManager.default.createDirectory(at: dir.url.appendingPathComponent("www"), withIntermediateDirectories: true)
        for (name, bytes) in files { try dir.write("www/" + name, Data(bytes)) }
        self.init(dir: dir, origin: try LighttpdOrigin(root: dir.url.appendingPathComponent("www")))
    }

    var www: URL { dir.url.appendingPathComponent("www") }
}
