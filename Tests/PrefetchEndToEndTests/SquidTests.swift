import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// A site cache in front of a fleet (docs/fleet.md, "A site cache (Squid)"): a real Squid with the
/// settings the manual recommends, the fault-injecting origin behind it (it counts every request
/// and the bytes it sent), and kiosks — the real binary, each with its own cache folder,
/// state and machine id — fetching one nightly feed through it, configured by the config
/// file's `proxy` key. Squid must be installed (`scripts/test` installs it): without it
/// these tests fail, they are not skipped.
@Suite(.serialized) struct SquidTests {
    /// The lobby feed's files: what the origin serves and how long a shared cache may keep each.
    struct File {
        let path: String
        let body: [UInt8]
        let etag: String?
        var dated = true
        let cacheControl: String
        var resource: OriginResource {
            OriginResource(body, etag: etag, lastModified: dated ? Site.httpDate(-2 * 86400) : nil, cacheControl: cacheControl)
        }
    }

    static let files = [
        File(path: "/loop/intro.bin", body: FaultTests.bytes(300_000, seed: 1300), etag: "\"intro-1\"", cacheControl: "max-age=86400"),
        // Over squid's default maximum_object_size (4 MB): cached only with the manual's setting.
        File(path: "/loop/film.bin", body: FaultTests.bytes(5 << 20, seed: 1301), etag: "\"film-1\"", cacheControl: "max-age=86400"),
        // Kept by squid, but asked about at every request: squid revalidates with the origin.
        File(path: "/menu.bin", body: FaultTests.bytes(200_000, seed: 1302), etag: "\"menu-1\"", cacheControl: "no-cache"),
        File(path: "/poster.png", body: FaultTests.bytes(100_000, seed: 1303), etag: nil, cacheControl: "max-age=0"),
        File(path: "/news.bin", body: FaultTests.bytes(150_000, seed: 1304), etag: "\"news-1\"", cacheControl: "max-age=0"),
        // An ETag alone: revalidated with If-None-Match only, which squid answers with its
        // whole entry (a 200) once it has revalidated it with the origin.
        File(path: "/clip.bin", body: FaultTests.bytes(120_000, seed: 1306), etag: "\"clip-1\"", dated: false, cacheControl: "max-age=0"),
    ]

    static func conditional(_ request: RecordedRequest) -> Bool {
        request.header("if-none-match") != nil || request.header("if-modified-since") != nil
    }

    /// Released every night at 03:00 UTC, each kiosk starting within 10 minutes of it.
    static let lobby = """
        schedule: "0 3 * * *"
        timezone: UTC
        jitter: 10m
        retry: { attempts: 5, backoff: 1s }
        resources:
        """ + files.map { "\n  - url: ORIGIN\($0.path)" }.joined() + "\n"

    /// The cache path of an origin path ("/loop/intro.bin" → "intro.bin").
    static func name(_ path: String) -> String { String(path.split(separator: "/").last!) }

    // MARK: - A fleet through one squid

    /// Twenty kiosks start at once, as a fleet does after a release: squid forwards one
    /// request per file (the origin holds each answer back half a second, so every kiosk asks
    /// while the first request is out: collapsed_forwarding) and answers the rest from its
    /// copy — the 5 MiB film too (maximum_object_size). Each body leaves the origin once: what
    /// squid may keep (max-age) is asked for once; what it must revalidate (no-cache,
    /// max-age=0) is asked about again only with conditional requests, answered 304. Every
    /// kiosk holds every file, byte for byte.
    @Test func twentyKiosksFetchEachFileFromTheOriginOnce() throws {
        let site = try Site(kiosks: 20)
        for file in Self.files {
            site.origin.serve(file.path, file.resource)
            site.origin.inject(file.path, [.delay(seconds: 0.5)])
        }
        try site.feed(Self.lobby)
        let started = Date()
        let runs = try site.night(0)
        for (kiosk, run) in runs.enumerated() {
            #expect(run.status == 0, "kiosk \(kiosk): \(run.diagnostics)")
            #expect(run.events.filter { $0["type"] as? String == "placed" }.count == Self.files.count, "kiosk \(kiosk): \(run.stdout)")
        }
        for file in Self.files {
            let requests = site.origin.requests(to: file.path)
            #expect(requests.filter { !Self.conditional($0) }.count == 1, "\(file.path): \(requests.map(\.headers))")
            #expect(requests.allSatisfy { $0.header("via")?.contains("squid") == true && $0.header("range") == nil })
            #expect(site.origin.bytesSent(to: file.path) < file.body.count + 20 * 1024, "\(file.path): more than one body left the origin")
            for kiosk in 0..<site.kiosks {
                #expect(site.file(kiosk, Self.name(file.path)) == file.body, "kiosk \(kiosk) \(file.path)")
            }
            #expect(site.squid.log(file.path).count == site.kiosks, "\(site.squid.log(file.path))")
        }
        #expect(site.origin.requests(to: "/loop/intro.bin").count == 1 && site.origin.requests(to: "/loop/film.bin").count == 1)
        #expect(Date().timeIntervalSince(started) < 30)
    }

    /// The next night every copy is revalidated, and no body leaves the origin twice: what
    /// squid may still keep (max-age) it answers with a 304 itself, and the origin sees no
    /// request; what it must revalidate (no-cache, max-age=0) reaches the origin only as
    /// conditional requests (If-None-Match / If-Modified-Since), answered 304. A file that
    /// changed at the origin, and that squid may keep (max-age), leaves the origin once for
    /// the whole fleet: for the first kiosk (the one whose jitter is shortest: it runs alone
    /// first), after which squid has the new version for the other nineteen, which start at
    /// once. A 304 changes nothing on a kiosk: same bytes, same inode — nor does the 200 squid
    /// sends for a copy known by its ETag alone: it carries that ETag, so it is the copy, and
    /// its body is not read.
    @Test func theNextNightOnlyConditionalRequestsReachTheOrigin() throws {
        let site = try Site(kiosks: 20)
        for file in Self.files { site.origin.serve(file.path, file.resource) }
        try site.feed(Self.lobby)
        #expect(try site.night(0).allSatisfy { $0.status == 0 })
        let inodes = (0..<site.kiosks).map { kiosk in Self.files.map { site.inode(kiosk, Self.name($0.path)) } }
        let before = site.origin.requests.count
        let sentBefore = Dictionary(uniqueKeysWithValues: Self.files.map { ($0.path, site.origin.bytesSent(to: $0.path)) })
        let news2 = FaultTests.bytes(150_000, seed: 1305)
        site.origin.serve("/news.bin", OriginResource(news2, etag: "\"news-2\"", lastModified: Site.httpDate(-3600), cacheControl: "max-age=3600"))

        let runs = try [site.run(0, night: 1)] + site.night(1, kiosks: 1..<site.kiosks)
        for (kiosk, run) in runs.enumerated() {
            #expect(run.status == 0, "kiosk \(kiosk): \(run.diagnostics)")
            let fresh = Set(run.events.filter { $0["type"] as? String == "fresh" }.compactMap { $0["path"] as? String })
            #expect(fresh == ["intro.bin", "film.bin", "menu.bin", "poster.png", "clip.bin"], "kiosk \(kiosk): \(run.stdout)")
            #expect(run.placed("news.bin") && site.file(kiosk, "news.bin") == news2, "kiosk \(kiosk): \(run.stdout)")
            for (index, file) in Self.files.enumerated() where file.path != "/news.bin" {
                #expect(site.file(kiosk, Self.name(file.path)) == file.body)
                #expect(site.inode(kiosk, Self.name(file.path)) == inodes[kiosk][index], "kiosk \(kiosk): \(file.path) was replaced")
            }
        }
        let tonight = site.origin.requests.dropFirst(before)
        #expect(!tonight.isEmpty && tonight.allSatisfy(Self.conditional),
                "unconditional: \(tonight.filter { !Self.conditional($0) }.map(\.path))")
        #expect(site.origin.requests(to: "/loop/intro.bin").count == 1 && site.origin.requests(to: "/loop/film.bin").count == 1,
                "squid asked the origin about copies it may still keep")
        for file in Self.files where file.path != "/news.bin" {
            let heads = site.origin.bytesSent(to: file.path) - sentBefore[file.path]!
            #expect(heads < 20 * 1024, "\(file.path): \(heads) bytes left the origin tonight")
        }
        let newsSent = site.origin.bytesSent(to: "/news.bin") - sentBefore["/news.bin"]!
        #expect(newsSent >= news2.count && newsSent < news2.count + 20 * 1024,
                "news.bin v2: \(newsSent) bytes for a \(news2.count)-byte body; squid: \(site.squid.log("/news.bin").suffix(site.kiosks).map(\.result))")
    }

    /// FAULTS 1 through the site cache: the origin cuts the body; the kiosk resumes within the
    /// run with `Range` and `If-Range` (its strong ETag), which squid answers from the whole
    /// object it fetched for its cache (`range_offset_limit none`); the next kiosks are served
    /// from that copy, and the origin sees nothing more.
    @Test func aResumeThroughSquidKeepsIfRange() throws {
        let site = try Site(kiosks: 3)
        let body = FaultTests.bytes(2 << 20, seed: 1310)
        site.origin.serve("/big.bin", OriginResource(body, etag: "\"big-1\"", lastModified: Site.httpDate(-86400), cacheControl: "max-age=86400"))
        site.origin.inject("/big.bin", [.cutAfter(800_000)])
        try site.feed("retry: { attempts: 5, backoff: 1s }\nresources:\n  - url: ORIGIN/big.bin\n")
        let first = try site.run(0)
        #expect(first.status == 0, "\(first.diagnostics)")
        let resumedAt = try #require(first.events("placed", "big.bin").first?["resumed_at"] as? Int, "\(first.stdout)")
        #expect(resumedAt > 0 && resumedAt <= 800_000, "resumed at \(resumedAt)")
        #expect(site.file(0, "big.bin") == body)
        let asked = site.squid.log("/big.bin")
        #expect(asked.count == 2, "\(asked)")
        #expect(asked.first?.range == nil)
        #expect(asked.last?.range == "bytes=\(resumedAt)-" && asked.last?.ifRange == "\"big-1\"" && asked.last?.status == 206, "\(asked)")
        // Squid fetches whole objects to cache them: the origin saw two plain GETs.
        let origin = site.origin.requests(to: "/big.bin")
        #expect(origin.count == 2 && origin.allSatisfy { $0.header("range") == nil }, "\(origin.map(\.headers))")
        for kiosk in 1..<site.kiosks {
            let run = try site.run(kiosk)
            #expect(run.status == 0 && site.file(kiosk, "big.bin") == body, "\(run.diagnostics)")
        }
        #expect(site.origin.requests(to: "/big.bin").count == 2)
    }

    /// A kiosk cut off from squid in the middle of a file (stopped here; a dropped link alike)
    /// keeps its partial, and squid finishes the fetch for its cache anyway
    /// (`quick_abort_min -1 KB`): the kiosk's resume — `Range` with `If-Range` — is answered
    /// from squid's copy with a 206, and the body left the origin once.
    @Test func aKioskCutOffResumesFromSquidsCopy() throws {
        let site = try Site(kiosks: 1)
        let body = FaultTests.bytes(1_200_000, seed: 1311)
        site.origin.serve("/big.bin", OriginResource(body, etag: "\"big-1\"", lastModified: Site.httpDate(-86400), cacheControl: "max-age=86400"))
        site.origin.inject("/big.bin", [.trickle(bytesPerSecond: 1_000_000)])
        try site.feed("resources:\n  - url: ORIGIN/big.bin\n")
        let running = try site.start(0)
        let partial = site.cache(0).appendingPathComponent(".prefetch/partial/" + CacheFolder.partialName(feed: "lobby", path: "big.bin"))
        #expect(Site.waitFor(seconds: 10) { ((try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0) >= 200_000 },
                "the kiosk's partial did not grow")
        kill(running.process.processIdentifier, SIGTERM)
        let stopped = try running.finish()
        #expect(stopped.status == 0 && !stopped.events("paused", "big.bin").isEmpty, "\(stopped.diagnostics)")
        #expect(Site.waitFor(seconds: 10) { site.origin.bytesSent(to: "/big.bin") >= body.count && site.squid.hasStored(atLeast: body.count) },
                "squid gave up the fetch")
        let resumed = try site.run(0)
        #expect(resumed.status == 0, "\(resumed.diagnostics)")
        let resumedAt = try #require(resumed.events("placed", "big.bin").first?["resumed_at"] as? Int, "\(resumed.stdout)")
        #expect(resumedAt >= 200_000)
        #expect(site.file(0, "big.bin") == body)
        let last = try #require(site.squid.log("/big.bin").last)
        #expect(last.range == "bytes=\(resumedAt)-" && last.ifRange == "\"big-1\"" && last.status == 206 && last.result.contains("HIT"), "\(last)")
        #expect(site.origin.requests(to: "/big.bin").count == 1)
        #expect(site.origin.bytesSent(to: "/big.bin") < body.count + 1024)
    }

    // MARK: - proxy and no_proxy

    /// `no_proxy` in the config sends a host direct: the origin sees that request without
    /// squid's `Via`, and squid's log has no line for it; another host of the same feed goes
    /// through squid (a name only squid can resolve, so nothing else could have fetched it).
    @Test func noProxyInTheConfigGoesDirect() throws {
        let site = try Site(kiosks: 1, hosts: ["127.0.0.1 origin.fleet.test"], config: "no_proxy: 127.0.0.1\n")
        site.origin.serve("/direct.bin", OriginResource(FaultTests.bytes(10_000, seed: 1320), etag: "\"d\""))
        site.origin.serve("/proxied.bin", OriginResource(FaultTests.bytes(10_000, seed: 1321), etag: "\"p\""))
        try site.feed("resources:\n  - url: ORIGIN/direct.bin\n  - url: http://origin.fleet.test:\(site.origin.port)/proxied.bin\n")
        let run = try site.run(0)
        #expect(run.status == 0 && run.placed("direct.bin") && run.placed("proxied.bin"), "\(run.diagnostics)")
        let direct = try #require(site.origin.requests(to: "/direct.bin").first)
        #expect(direct.header("via") == nil && site.squid.log("/direct.bin").isEmpty)
        let proxied = try #require(site.origin.requests(to: "/proxied.bin").first)
        #expect(proxied.header("via")?.contains("squid") == true && proxied.header("host") == "origin.fleet.test:\(site.origin.port)")
        #expect(site.squid.log("/proxied.bin").count == 1)
    }

    /// Without `proxy` in the config, curl's `http_proxy` applies as before; with it, the
    /// config wins over the environment (here a dead proxy); the config's `no_proxy` replaces
    /// the environment's, also without a `proxy` key — and with none, the environment's
    /// applies to the config's proxy too.
    @Test(arguments: [
        ("", ["http_proxy": "SQUID"], true),
        ("proxy: SQUID\n", ["http_proxy": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "all_proxy": "http://127.0.0.1:9"], true),
        ("no_proxy: 127.0.0.1\n", ["http_proxy": "SQUID"], false),
        ("no_proxy: 127.0.0.1\n", ["http_proxy": "SQUID", "no_proxy": "localhost"], false),
        ("proxy: SQUID\n", ["no_proxy": "127.0.0.1"], false),
        ("proxy: SQUID\nno_proxy: localhost\n", ["no_proxy": "*"], true),
    ])
    func theConfigAndTheEnvironment(config: String, environment: [String: String], throughSquid: Bool) throws {
        let squid = try SquidProxy()
        let site = try Site(kiosks: 1, squid: squid, config: config.replacingOccurrences(of: "SQUID", with: squid.url), proxyKey: false)
        site.origin.serve("/a.bin", OriginResource(FaultTests.bytes(10_000, seed: 1322), etag: "\"a\""))
        try site.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let run = try site.run(0, environment: environment.mapValues { $0.replacingOccurrences(of: "SQUID", with: squid.url) })
        #expect(run.status == 0 && run.placed("a.bin"), "\(run.diagnostics)")
        let request = try #require(site.origin.requests(to: "/a.bin").first)
        #expect((request.header("via")?.contains("squid") == true) == throughSquid, "\(request.headers)")
        #expect(squid.log("/a.bin").count == (throughSquid ? 1 : 0))
    }

    /// `per_host` counts per origin through a proxy too: two origins behind squid (one
    /// server under two names), `per_host: 2`, run 2 + 2 requests at once. (libcurl keys its
    /// connections to an HTTP proxy by the proxy, so its own per-host cap held every origin
    /// behind squid to 2 together.)
    @Test func perHostCountsEachOriginBehindTheProxy() throws {
        let site = try Site(kiosks: 1, hosts: ["127.0.0.1 origin.fleet.test"], config: "per_host: 2\n")
        var yaml = "limits: { concurrency: 16 }\nresources:\n"
        for index in 0..<8 {
            site.origin.serve("/f\(index).bin", OriginResource(FaultTests.bytes(5_000, seed: 1330 + UInt64(index)), etag: "\"f\(index)\""))
            site.origin.inject("/f\(index).bin", [.delay(seconds: 0.5)])
            let host = index < 4 ? "127.0.0.1" : "origin.fleet.test"
            yaml += "  - url: http://\(host):\(site.origin.port)/f\(index).bin\n"
        }
        try site.feed(yaml)
        let run = try site.run(0)
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(site.origin.peakActiveRequests == 4, "\(site.origin.peakActiveRequests) requests at once to two origins of per_host 2")
    }

    /// An https:// resource goes through squid in a CONNECT tunnel: the kiosk verifies the
    /// origin's certificate end to end, and squid cannot keep a copy — each kiosk's request
    /// reaches the origin.
    @Test func anHTTPSResourceIsTunnelledNotCached() throws {
        let keys = try Site.certificate()
        let body = FaultTests.bytes(50_000, seed: 1323)
        let harness = try NginxHarness(files: ["t.bin": body], tls: (keys.url.path + "/cert.pem", keys.url.path + "/key.pem"))
        let squid = try SquidProxy()
        try harness.dir.write("config.yaml", "proxy: \(squid.url)\nca_file: \(keys.url.path)/cert.pem\n")
        try harness.feed("resources:\n  - url: ORIGIN/t.bin\n")
        for kiosk in 0..<2 {
            let run = try BinaryRunner.run(["run", "--json", "--feeds", "feeds", "--cache", "kiosk\(kiosk)", "--config", "config.yaml"],
                                           in: harness.dir.url)
            #expect(run.status == 0, "\(run.diagnostics)")
            #expect((try? [UInt8](Data(contentsOf: harness.dir.url.appendingPathComponent("kiosk\(kiosk)/t/t.bin")))) == body)
            // The origin's own head is read, not the proxy's `200 Connection established`: its ETag is recorded.
            let state = FaultTests.snapshot(harness.dir.url.appendingPathComponent("kiosk\(kiosk)"))?.resources[ResourceKey(feed: "t", path: "t.bin")]
            #expect(state?.validators.etag?.hasPrefix("\"") == true, "\(String(describing: state?.validators))")
        }
        #expect(harness.origin.log().filter { $0.contains(" /t.bin ") }.count == 2, "\(harness.origin.log())")
        let tunnels = squid.log().filter { $0.method == "CONNECT" }
        #expect(tunnels.count == 2 && tunnels.allSatisfy { $0.url == "127.0.0.1:\(harness.origin.port)" }, "\(squid.log())")
    }

    /// An https:// proxy is verified like an origin, against `ca_file` when the config has one:
    /// with it the kiosk fetches through squid; without it the proxy's certificate is unknown
    /// and the resource fails, saying so.
    @Test func anHTTPSProxyIsVerifiedWithCaFile() throws {
        let keys = try Site.certificate()
        let squid = try SquidProxy(tls: (keys.url.path + "/cert.pem", keys.url.path + "/key.pem"))
        let site = try Site(kiosks: 2, squid: squid, config: "ca_file: \(keys.url.path)/cert.pem\n")
        site.origin.serve("/a.bin", OriginResource(FaultTests.bytes(10_000, seed: 1324), etag: "\"a\""))
        try site.feed("resources:\n  - url: ORIGIN/a.bin\n")
        let trusted = try site.run(0)
        #expect(trusted.status == 0 && trusted.placed("a.bin"), "\(trusted.diagnostics)")
        #expect(site.origin.requests(to: "/a.bin").first?.header("via")?.contains("squid") == true)
        try site.dir.write("config.yaml", "proxy: \(squid.url)\n")
        let unknown = try site.run(1)
        #expect(unknown.status == 1, "\(unknown.diagnostics)")
        #expect(unknown.failure("a.bin")?.contains("certificate") == true, "\(unknown.stdout)")
        #expect(site.origin.requests(to: "/a.bin").count == 1)
    }
}

/// A site: one squid, one origin behind it, one feeds folder and config shared by its
/// kiosks, and per kiosk a cache folder (`kiosks/kNN`, with its own state.db) and a machine
/// id (`kiosk-NN`).
final class Site {
    let dir: TemporaryFolder
    let origin: TestOrigin
    let squid: SquidProxy
    let kiosks: Int
    /// The clock offset of night 0: the site was made at 03:30 UTC, after that night's 03:00
    /// release and every kiosk's jitter (< 10 minutes). One offset per night, so the kiosks'
    /// clocks run on from there (a later run never sees an earlier time).
    private let firstNight: Int

    /// `config` is added to `proxy: <squid>` (or is the whole config without `proxyKey`).
    init(kiosks: Int, squid: SquidProxy? = nil, hosts: [String] = [], config: String = "", proxyKey: Bool = true) throws {
        dir = try TemporaryFolder()
        origin = try TestOrigin()
        self.squid = try squid ?? SquidProxy(hosts: hosts)
        self.kiosks = kiosks
        let now = Date().timeIntervalSince1970
        let midnight = (now / 86400).rounded(.down) * 86400
        firstNight = Int((midnight + 3.5 * 3600 + (now - midnight > 3.5 * 3600 ? 86400 : 0) - now).rounded(.up))
        try dir.write("config.yaml", (proxyKey ? "proxy: \(self.squid.url)\n" : "") + config)
    }

    /// Writes `feeds/lobby.yaml`; `ORIGIN` becomes the origin's URL.
    func feed(_ yaml: String) throws {
        try dir.write("feeds/lobby.yaml", yaml.replacingOccurrences(of: "ORIGIN", with: origin.url("")))
    }

    func cache(_ kiosk: Int) -> URL { dir.url.appendingPathComponent(String(format: "kiosks/k%02d", kiosk)) }

    /// Starts kiosk `kiosk`'s `prefetch run --json` with the clock in night `night` (from
    /// 03:30 UTC on).
    func start(_ kiosk: Int, night: Int = 0, environment: [String: String] = [:]) throws -> BinaryRunner.Running {
        let env = ["PREFETCH_MACHINE_ID": String(format: "kiosk-%02d", kiosk), "PREFETCH_CLOCK_OFFSET": "+\(firstNight + night * 86400)s"]
        return try BinaryRunner.start(["run", "--json", "--feeds", "feeds", "--cache", String(format: "kiosks/k%02d", kiosk),
                                       "--config", "config.yaml"], in: dir.url, environment: env.merging(environment) { $1 })
    }

    func run(_ kiosk: Int, night: Int = 0, environment: [String: String] = [:],
             sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> RunResult {
        try start(kiosk, night: night, environment: environment).finish(sourceLocation: sourceLocation)
    }

    /// The runs of night `night` of `kiosks` (all of them by default), all started at once.
    func night(_ night: Int, kiosks: Range<Int>? = nil, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> [RunResult] {
        let running = try (kiosks ?? 0..<self.kiosks).map { try start($0, night: night) }
        return try running.map { try $0.finish(sourceLocation: sourceLocation) }
    }

    /// The bytes of kiosk `kiosk`'s `lobby/<path>`.
    func file(_ kiosk: Int, _ path: String) -> [UInt8]? {
        (try? Data(contentsOf: cache(kiosk).appendingPathComponent("lobby/" + path))).map { [UInt8]($0) }
    }

    func inode(_ kiosk: Int, _ path: String) -> UInt64? {
        var info = stat()
        return lstat(cache(kiosk).appendingPathComponent("lobby/" + path).path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    /// An HTTP-date `seconds` from now.
    static func httpDate(_ seconds: TimeInterval) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date().addingTimeInterval(seconds))
    }

    static func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return condition()
    }

    /// A folder readable by squid's user with `cert.pem` and `key.pem`, a self-signed
    /// certificate for 127.0.0.1.
    static func certificate() throws -> TemporaryFolder {
        let keys = try TemporaryFolder()
        chmod(keys.url.path, 0o755)
        let status = try FaultTests.tool("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                                              "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "2",
                                                              "-subj", "/CN=prefetch-squid", "-addext", "subjectAltName=IP:127.0.0.1"], in: keys.url)
        guard status == 0 else { throw SquidError(message: "openssl req exited \(status)") }
        chmod(keys.url.path + "/key.pem", 0o644)  // read by squid and nginx as their own users
        return keys
    }
}
