import Foundation
import Testing
import TestSupport
import PrefetchCore

/// HTTP/1.1 keep-alive through the real binary: an answer that is not a file (an error page,
/// a redirect's page) does not cost its connection. Its body, when short, is read to its end
/// and thrown away (never written, FAULTS 14), so the connection carries the next request;
/// a long one is cut off with its connection; one that stalls ends by `stall_timeout`,
/// judged by its status (SPEC §7).
@Suite(.serialized) struct ConnectionReuseTests {
    static func body(_ index: Int) -> [UInt8] { FaultTests.bytes(300 + index, seed: 900 + UInt64(index)) }

    /// An nginx-like error page (about 150 bytes).
    static func page(_ status: Int) -> String {
        "<html>\r\n<head><title>\(status)</title></head>\r\n<body>\r\n<center><h1>\(status)</h1></center>\r\n"
            + "<hr><center>prefetch-test-origin</center>\r\n</body>\r\n</html>\r\n"
    }

    /// 60 resources fetched one at a time over keep-alive: every third answers 404 with a
    /// page, every fifth 500 with a page once (then 200), every seventh a 302 with a page to
    /// its file. One connection carries them all (two allowed: an idle one may be closed
    /// while the in-run retries wait). Before, each error page closed its connection: 36
    /// connections for these 60 resources.
    @Test func errorPagesDoNotCostAConnection() throws {
        let s = try FaultHarness()
        var yaml = "retry: { attempts: 3, backoff: 1s, max_backoff: 1s }\nlimits: { concurrency: 1 }\nresources:\n"
        var missing: Set<String> = []
        for index in 0..<60 {
            let name = "f\(index).bin"
            if index % 3 == 0 {
                s.origin.inject("/\(name)", Array(repeating: .status(404, body: Self.page(404)), count: 3))
                missing.insert(name)
            } else {
                s.origin.serve("/\(name)", OriginResource(Self.body(index), etag: "\"e\(index)\""))
                if index % 5 == 0 { s.origin.inject("/\(name)", [.status(500, body: Self.page(500))]) }
            }
            if index % 7 == 0, !missing.contains(name) {
                s.origin.inject("/r\(index).bin", Array(repeating: .redirect(s.origin.url("/\(name)")), count: 3))
                yaml += "  - url: ORIGIN/r\(index).bin\n    path: \(name)\n"
            } else {
                yaml += "  - url: ORIGIN/\(name)\n"
            }
        }
        try s.feed(yaml)
        let run = try s.runJSON(config: try s.dir.write("config.yaml", "per_host: 1\nconcurrency: 1\n"))
        #expect(run.status == 1, "permanent failures: \(run.diagnostics.prefix(2000))")
        for index in 0..<60 {
            let name = "f\(index).bin"
            if missing.contains(name) {
                #expect(run.failure(name) == "HTTP 404", "\(name): \(run.failure(name) ?? "no failure")")
                #expect(!s.exists("t/\(name)"))
            } else {
                #expect(run.placed(name), "\(name) not placed: \(run.diagnostics.prefix(2000))")
                #expect(s.digest("t/\(name)") == FaultTests.sha(Self.body(index)), "\(name) differs")
            }
        }
        let requests = s.origin.requests
        #expect(requests.count >= 60 + 12, "\(requests.count) requests")
        #expect(s.origin.connectionsAccepted <= 2,
                "\(s.origin.connectionsAccepted) connections for \(requests.count) requests: error pages closed them")
    }

    /// A page longer than the drain limit (64 KiB) is not read: the exchange stops with its
    /// connection, the failure is the status's, and the retry opens another connection.
    @Test func aLongErrorPageIsCutOffWithItsConnection() throws {
        let s = try FaultHarness()
        s.origin.serve("/a.bin", OriginResource(Self.body(1), etag: "\"a\""))
        s.origin.inject("/a.bin", [.status(500, body: String(repeating: "x", count: 1 << 20))])
        try s.feed("retry: { attempts: 3, backoff: 1s, max_backoff: 1s }\nlimits: { concurrency: 1 }\nresources:\n  - url: ORIGIN/a.bin\n")
        let run = try s.runJSON()
        #expect(run.status == 0, "\(run.diagnostics.prefix(2000))")
        #expect(run.retries("a.bin").first?["error"] as? String == "HTTP 500", "\(run.retries("a.bin"))")
        #expect(s.digest("t/a.bin") == FaultTests.sha(Self.body(1)))
        #expect(s.origin.connectionsAccepted == 2, "\(s.origin.connectionsAccepted) connections")
    }

    /// A page that announces more than it sends, on a connection kept open, stalls: the
    /// exchange ends after `stall_timeout` (2 s) with the status's failure (a 404 is
    /// permanent), not when the server gives up (30 s here), and the next resource goes on.
    @Test func aStalledErrorPageEndsByItsStatus() throws {
        let s = try FaultHarness()
        s.origin.inject("/gone.bin", [.status(404, body: "not found", headers: [("Content-Length", "5000")])])
        s.origin.serve("/b.bin", OriginResource(Self.body(2), etag: "\"b\""))
        try s.feed("limits: { concurrency: 1, stall_timeout: 2s }\nresources:\n  - url: ORIGIN/gone.bin\n  - url: ORIGIN/b.bin\n")
        let run = try s.runJSON()
        #expect(run.status == 1, "\(run.diagnostics.prefix(2000))")
        #expect(run.failure("gone.bin") == "HTTP 404", "\(run.failure("gone.bin") ?? "no failure")")
        #expect(s.digest("t/b.bin") == FaultTests.sha(Self.body(2)))
        #expect(run.seconds < 20, "the run took \(run.seconds) s: the stalled page was waited for")
    }
}
