import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §7 "Encoded bodies", through the real binary: an origin that labels `.tar.gz` files
/// `Content-Encoding: gzip` (Apache's `AddEncoding`, S3 objects with that metadata) failed
/// every release with no way to accept it. The fault-injecting origin serves real gzip
/// streams (made by gzip(1)); a real nginx compresses on the fly.
@Suite struct EncodingTests {
    static func sha(_ bytes: [UInt8]) -> String { FaultTests.sha(bytes) }

    /// `bytes` through `gzip -n -9` (or another compressor's command line).
    static func compressed(_ bytes: [UInt8], with command: String = "gzip -c -n -9") throws -> [UInt8] {
        let folder = try TemporaryFolder()
        try Data(bytes).write(to: folder.url.appendingPathComponent("in"))
        try NginxOrigin.shell(["-c", "\(command) < '\(folder.path)/in' > '\(folder.path)/out'"])
        return [UInt8](try Data(contentsOf: folder.url.appendingPathComponent("out")))
    }

    /// `count` zero bytes through `gzip -n -9`: a decompression bomb (gzip's ratio on zeros
    /// is about 1,030 to 1).
    static func bomb(decodingTo count: Int) throws -> [UInt8] {
        let folder = try TemporaryFolder()
        try NginxOrigin.shell(["-c", "head -c \(count) /dev/zero | gzip -c -n -9 > '\(folder.path)/out'"])
        return [UInt8](try Data(contentsOf: folder.url.appendingPathComponent("out")))
    }

    /// What a release tarball holds: some incompressible bytes and a lot of text.
    static func tarball(seed: UInt64, text: Int = 200_000) -> [UInt8] {
        var bytes = FaultTests.bytes(50_000, seed: seed)
        var line = 0
        while bytes.count < 50_000 + text {
            bytes += Array("usr/share/doc/app/file-\(line).txt\t\(line * 7919 % 10007)\tok\n".utf8)
            line += 1
        }
        return bytes
    }

    static let tar = tarball(seed: 1900)
    static let gz = try! compressed(tar)

    /// The fault-injecting origin serving `/r.tar.gz` as such servers do.
    static func labelled(_ s: FaultHarness, path: String = "/r.tar.gz", etag: String? = "\"tgz-1\"") {
        s.origin.serve(path, OriginResource(gz, etag: etag, contentEncoding: "gzip"))
    }

    static func metric(_ file: String, _ sample: String) -> Double? {
        (try? String(contentsOfFile: file, encoding: .utf8)).flatMap { NodeExporter.value($0, sample) }
    }

    /// docs/manifests.md's `.tar.gz` example is a valid manifest, with the effect it says.
    @Test func theManualsExampleIsValid() throws {
        let yaml = try #require(try MarkdownDocument("docs/manifests.md").block(after: "### `keep`")).text
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "releases.yaml")
        #expect(diagnostics.isEmpty, "\(diagnostics.map(\.headline))")
        #expect(try #require(feed).resources.map(\.encoding) == [.keep, .refuse])
        let dir = try TemporaryFolder()
        try dir.write("feeds/releases.yaml", yaml)
        let result = try BinaryRunner.run(["validate", "--feeds", "feeds", "--config", "/dev/null"], in: dir.url)
        #expect(result.status == 0, "\(result.diagnostics)")
    }

    /// The default refuses it with an error naming the encoding and the key: one attempt,
    /// not retried in the run (as a sha256 mismatch), nothing placed.
    @Test func aTarGzLabelledGzipIsRefusedByDefaultNamingTheKey() throws {
        let s = try FaultHarness()
        Self.labelled(s)
        try s.feed("retry: { attempts: 5, backoff: 1s }\nresources:\n  - url: ORIGIN/r.tar.gz\n")
        let result = try s.runJSON()
        #expect(result.status == 1, "\(result.diagnostics)")
        let failed = result.events("failed", "r.tar.gz")
        #expect(failed.count == 1 && failed.first?["final"] as? Bool == true, "\(result.diagnostics)")
        #expect(failed.first?["error"] as? String == "the server sent Content-Encoding: gzip although identity was asked; not placed "
                + "(set encoding: keep to store it as sent, or decode)", "\(result.diagnostics)")
        #expect(s.origin.requests(to: "/r.tar.gz").count == 1, "not retried in the run")
        #expect(!s.exists("t/r.tar.gz") && s.partials.isEmpty)
        s.checkInvariant(["t/r.tar.gz": []])  // identity was asked
    }

    /// `keep` stores the bytes exactly as sent, still asking for identity; `size` and
    /// `sha256` are of those bytes.
    @Test func keepStoresTheBytesAsSent() throws {
        let s = try FaultHarness()
        Self.labelled(s)
        try s.feed("encoding: keep\nresources:\n  - { url: ORIGIN/r.tar.gz, size: \(Self.gz.count), sha256: \(Self.sha(Self.gz)) }\n")
        let result = try s.runJSON()
        #expect(result.status == 0 && result.placed("r.tar.gz"), "\(result.diagnostics)")
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.gz), "byte-identical to what the origin sent")
        #expect(s.resourceState("r.tar.gz")?.copyEncoding == .keep)
        s.checkInvariant(["t/r.tar.gz": [Self.gz]])  // identity was asked
        // A sha256 of the decoded bytes is a mismatch under keep.
        let other = try FaultHarness()
        Self.labelled(other)
        try other.feed("encoding: keep\nresources:\n  - { url: ORIGIN/r.tar.gz, sha256: \(Self.sha(Self.tar)) }\n")
        let mismatch = try other.runJSON()
        #expect(mismatch.status == 1 && (mismatch.events("failed", "r.tar.gz").first?["error"] as? String)?.hasPrefix("sha256 mismatch") == true,
                "\(mismatch.diagnostics)")
    }

    /// `decode` offers what libcurl decodes and stores the decoded bytes: `size` and
    /// `sha256` are of them; the bytes on the wire are what `transferred`, the run's body
    /// bytes and `prefetch_body_bytes_total` count. Also for a chunked body, where libcurl
    /// counts the last read after handing its decoded bytes over.
    @Test(arguments: [false, true])
    func decodeStoresTheDecodedBytes(chunked: Bool) throws {
        let s = try FaultHarness()
        Self.labelled(s)
        if chunked { s.origin.inject("/r.tar.gz", [.chunkedNoLength]) }
        let metrics = s.dir.url.appendingPathComponent("metrics.prom").path
        try s.feed("resources:\n  - { url: ORIGIN/r.tar.gz, encoding: decode, size: \(Self.tar.count), sha256: \(Self.sha(Self.tar)) }\n")
        let result = try s.run(["run", "--json", "--metrics-file", metrics])
        #expect(result.status == 0 && result.placed("r.tar.gz"), "\(result.diagnostics)")
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.tar), "the decoded bytes")
        let request = try #require(s.origin.requests(to: "/r.tar.gz").first)
        #expect(request.header("accept-encoding") == "gzip, deflate, br, zstd")
        let placed = try #require(result.events("placed", "r.tar.gz").first)
        #expect(placed["bytes"] as? Int == Self.tar.count)
        #expect(placed["transferred"] as? Int == Self.gz.count, "bytes on the wire: \(placed)")
        #expect(Self.metric(metrics, "prefetch_body_bytes_total{feed=\"t\"}") == Double(Self.gz.count))
        #expect(s.resourceState("r.tar.gz")?.copyEncoding == .decode)
    }

    /// A real nginx compressing on the fly (`gzip on`): `decode` gets a gzip body whose
    /// decoded bytes match `size` and `sha256`; nginx's log shows what it sent, which is what
    /// prefetch counts; `refuse` and `keep` asked for identity and got the file as it is.
    @Test func nginxCompressesForDecodeAndSendsIdentityOtherwise() throws {
        let csv = Self.tarball(seed: 1901, text: 400_000)
        let setup = try NginxHarness(files: ["gzip/refuse.csv": csv, "gzip/keep.csv": csv, "gzip/decode.csv": csv, "gzip-chunked/decode.csv": csv])
        // No sha256: four entries of one SHA-256 would make one transfer (SPEC §9), and each
        // request's encoding is what is checked here.
        let entry = "size: \(csv.count)"
        try setup.feed("""
            refresh: 0s
            resources:
              - { url: ORIGIN/gzip/refuse.csv, \(entry) }
              - { url: ORIGIN/gzip/keep.csv, encoding: keep, \(entry) }
              - { url: ORIGIN/gzip/decode.csv, path: decode.csv, encoding: decode, \(entry) }
              - { url: ORIGIN/gzip-chunked/decode.csv, path: chunked.csv, encoding: decode, \(entry) }

            """)
        let metrics = setup.dir.url.appendingPathComponent("metrics.prom").path
        let result = try setup.run(["run", "--json", "--metrics-file", metrics])
        #expect(result.status == 0, "\(result.diagnostics)")
        for path in ["refuse.csv", "keep.csv", "decode.csv", "chunked.csv"] {
            #expect(setup.digest("t/" + path) == Self.sha(csv), "\(path)")
        }
        let log = setup.origin.log()
        func line(_ uri: String) -> String { log.first { $0.contains(" \(uri) ") } ?? "" }
        func bytes(_ line: String) -> Int { Int(line.split(separator: "=").last ?? "") ?? -1 }
        #expect(line("/gzip/refuse.csv").contains("ae=[identity]") && bytes(line("/gzip/refuse.csv")) == csv.count, "\(log)")
        #expect(line("/gzip/keep.csv").contains("ae=[identity]") && bytes(line("/gzip/keep.csv")) == csv.count, "\(log)")
        let decoded = line("/gzip/decode.csv")
        #expect(decoded.contains("ae=[gzip, deflate, br, zstd]"), "\(log)")
        let wire = bytes(decoded)
        #expect(wire > 0 && wire < csv.count / 2, "nginx compressed it: \(decoded)")
        // Four bodies: two as they are, one gzip body without chunked framing (nginx's
        // bytes are its body as sent), one chunked (nginx's bytes include the framing).
        let chunked = bytes(line("/gzip-chunked/decode.csv"))
        let total = try #require(Self.metric(metrics, "prefetch_body_bytes_total{feed=\"t\"}"))
        let exact = Double(2 * csv.count + wire)
        #expect(total > exact && total <= exact + Double(chunked) && Double(chunked) < Double(csv.count) / 2, "\(total) \(log)")
        let placed = result.events("placed", "decode.csv").first
        #expect(placed?["transferred"] as? Int == wire && placed?["bytes"] as? Int == csv.count, "\(String(describing: placed))")
        // Revalidated: nginx's gzip ETag is weak, and If-None-Match compares weakly: 304s.
        let again = try setup.runJSON()
        #expect(again.status == 0, "\(again.diagnostics)")
        for path in ["refuse.csv", "keep.csv", "decode.csv", "chunked.csv"] {
            #expect(!again.events("fresh", path).isEmpty, "\(path): \(again.diagnostics)")
        }
        #expect(setup.origin.log().suffix(4).allSatisfy { $0.hasPrefix("304 ") }, "\(setup.origin.log())")
    }

    /// A decompression bomb (130 KiB of gzip that would decode to 128 MiB) is cut off as it
    /// arrives: prefetch runs under RLIMIT_FSIZE a little above the cap, so writing more of
    /// it to any file would kill it (SIGXFSZ). The wire bytes read stay far below the
    /// stream's length: decoding stopped at the cap, not after the download.
    @Test func aDecompressionBombIsCutOffAtTheCap() throws {
        let s = try FaultHarness()
        let bomb = try Self.bomb(decodingTo: 128 << 20)
        #expect(bomb.count < 160 << 10, "KiB of gzip: \(bomb.count)")
        s.origin.serve("/bomb.tar.gz", OriginResource(bomb, etag: "\"b\"", contentEncoding: "gzip"))
        try s.feed("resources:\n  - { url: ORIGIN/bomb.tar.gz, encoding: decode, max_size: 1MiB }\n")
        let metrics = s.dir.url.appendingPathComponent("metrics.prom").path
        let limitKiB = 1024 + 256
        let result = try BinaryRunner.run(["-c", "ulimit -f \(limitKiB); exec \"$0\" \"$@\"", BinaryRunner.executable.path, "run", "--json",
                                           "--metrics-file", metrics, "--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"],
                                          in: s.dir.url, executable: URL(fileURLWithPath: "/bin/bash"))
        #expect(result.status == 1, "failed, not killed by SIGXFSZ: \(result.diagnostics)")
        let failed = result.events("failed", "bomb.tar.gz").first
        #expect(failed?["error"] as? String == "the decoded body is longer than max_size 1MiB; cut off and discarded", "\(result.diagnostics)")
        #expect(failed?["final"] as? Bool == true, "a mismatch is not retried in the run")
        #expect(!s.exists("t/bomb.tar.gz") && s.partials.isEmpty)
        let wire = try #require(Self.metric(metrics, "prefetch_body_bytes_total{feed=\"t\"}"))
        #expect(wire > 0 && wire < Double(bomb.count) / 2, "read \(wire) of \(bomb.count) bytes of gzip")
    }

    /// `keep`: a cut transfer resumes (strong ETag) and the 206 must carry the partial's
    /// encoding; one that carries another is refused and the file restarts from zero.
    @Test func keepResumesOnlyWithTheSameEncoding() throws {
        let s = try FaultHarness()
        Self.labelled(s)
        s.origin.inject("/r.tar.gz", [.cutAfter(60_000)])
        try s.feed("encoding: keep\nretry: { attempts: 5, backoff: 1s }\nresources:\n  - { url: ORIGIN/r.tar.gz, sha256: \(Self.sha(Self.gz)) }\n")
        let result = try s.runJSON()
        #expect(result.status == 0 && result.placed("r.tar.gz"), "\(result.diagnostics)")
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.gz))
        let requests = s.origin.requests(to: "/r.tar.gz")
        #expect(requests.count == 2 && requests[1].header("range") == "bytes=60000-" && requests[1].header("if-range") == "\"tgz-1\"",
                "\(requests.map(\.headers))")
        #expect(requests.allSatisfy { $0.header("accept-encoding") == "identity" })
        #expect(result.events("placed", "r.tar.gz").first?["resumed_at"] as? Int == 60_000)

        // The resume answered with another encoding: refused, restarted from zero.
        let other = try FaultHarness()
        Self.labelled(other)
        other.origin.inject("/r.tar.gz", [.cutAfter(60_000), .contentEncoding("br")])
        try other.feed("encoding: keep\nretry: { attempts: 5, backoff: 1s }\nresources:\n  - url: ORIGIN/r.tar.gz\n")
        let again = try other.runJSON()
        #expect(again.status == 0 && again.placed("r.tar.gz"), "\(again.diagnostics)")
        #expect(other.digest("t/r.tar.gz") == Self.sha(Self.gz))
        let retried = again.retries("r.tar.gz").compactMap { $0["error"] as? String }
        #expect(retried.contains("the server answered the resume with Content-Encoding: br, not the partial's gzip; restarting from zero"),
                "\(again.diagnostics)")
        let asked = other.origin.requests(to: "/r.tar.gz")
        #expect(asked.count == 3 && asked[1].header("range") == "bytes=60000-" && asked[2].header("range") == nil, "\(asked.map(\.headers))")
    }

    /// `decode`: an interrupted transfer is never resumed (decoded bytes have no ranges to
    /// continue): the retry asks for the whole body again, and nothing is kept after a
    /// failure.
    @Test func decodeRestartsACutTransfer() throws {
        let s = try FaultHarness()
        Self.labelled(s)
        s.origin.inject("/r.tar.gz", [.cutAfter(20_000)])
        try s.feed("retry: { attempts: 5, backoff: 1s }\nresources:\n  - { url: ORIGIN/r.tar.gz, encoding: decode, sha256: \(Self.sha(Self.tar)) }\n")
        let result = try s.runJSON()
        #expect(result.status == 0 && result.placed("r.tar.gz"), "\(result.diagnostics)")
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.tar))
        let requests = s.origin.requests(to: "/r.tar.gz")
        #expect(requests.count == 2 && requests.allSatisfy { $0.header("range") == nil && $0.header("if-range") == nil },
                "\(requests.map(\.headers))")
        #expect(result.events("placed", "r.tar.gz").first?["resumed_at"] as? Int == 0)
    }

    /// SPEC §5: a changed `encoding` makes the copy `changed`: due at once whatever
    /// `refresh` says, fetched whole without conditional headers; the old copy stays until
    /// the new one is verified.
    @Test func aChangedEncodingMakesTheCopyChanged() throws {
        let s = try FaultHarness()
        Self.labelled(s)
        try s.feed("refresh: 24h\nencoding: keep\nresources:\n  - url: ORIGIN/r.tar.gz\n")
        #expect(try s.runJSON().status == 0)
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.gz))
        #expect(try s.plan().first?["state"] as? String == "fresh")
        try s.feed("refresh: 24h\nencoding: keep\nresources:\n  - { url: ORIGIN/r.tar.gz, encoding: decode }\n")
        let plan = try s.plan()
        #expect(plan.first?["state"] as? String == "due" && plan.first?["reason"] as? String == "changed", "\(plan)")
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.gz), "the old copy stays until the new one is verified")
        let result = try s.runJSON()
        #expect(result.status == 0 && result.placed("r.tar.gz"), "\(result.diagnostics)")
        let request = try #require(s.origin.requests(to: "/r.tar.gz").last)
        #expect(request.header("if-none-match") == nil && request.header("if-modified-since") == nil)
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.tar))
        #expect(try s.plan().first?["state"] as? String == "fresh")
        // Back to the default: changed again, refused (the copy stays), and said so.
        try s.feed("refresh: 24h\nresources:\n  - url: ORIGIN/r.tar.gz\n")
        #expect(try s.plan().first?["reason"] as? String == "changed")
        let refused = try s.runJSON()
        #expect(refused.status == 1 && (refused.events("failed", "r.tar.gz").first?["error"] as? String)?.contains("encoding: keep") == true)
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.tar))
    }

    /// "The rule that keeps a 200 carrying the copy's own strong ETag as a 304 comes first":
    /// a site cache answering a revalidation with its whole entry, labelled gzip, keeps the
    /// copy (its body unread) instead of failing the resource under `refuse`.
    @Test func aResentCopyLabelledGzipIsStillTheCopy() throws {
        let s = try FaultHarness()
        let body = FaultTests.bytes(5000, seed: 1902)
        s.origin.serve("/a.bin", OriginResource(body, etag: "\"a1\""))
        try s.feed("refresh: 0s\nresources:\n  - url: ORIGIN/a.bin\n")
        #expect(try s.runJSON().status == 0)
        s.origin.inject("/a.bin", [.status(200, body: String(repeating: "x", count: 300), headers: [("ETag", "\"a1\""), ("Content-Encoding", "gzip")])])
        let result = try s.runJSON()
        #expect(result.status == 0 && !result.events("fresh", "a.bin").isEmpty, "\(result.diagnostics)")
        #expect(s.digest("t/a.bin") == Self.sha(body))
        #expect(s.origin.requests(to: "/a.bin").last?.header("if-none-match") == "\"a1\"")
    }

    /// The metered budget counts the bytes on the wire: a decoded file larger than the
    /// budget whose gzip fits is fetched whole on a metered link, and the day's recorded
    /// bytes and `prefetch_body_bytes_total` are the gzip's.
    @Test func theMeteredBudgetCountsTheBytesOnTheWire() throws {
        let s = try FaultHarness()
        Self.labelled(s)
        #expect(Self.gz.count < 150 << 10 && Self.tar.count > 200 << 10, "gz \(Self.gz.count), tar \(Self.tar.count)")
        try s.feed("conditions: { metered_budget: 150KiB/day }\nresources:\n"
                   + "  - { url: ORIGIN/r.tar.gz, encoding: decode, size: \(Self.tar.count) }\n")
        let plan = try s.run(["plan", "--json", "--assume", "network=metered"])
        #expect(plan.events.first { $0["type"] as? String == "resource" }?["state"] as? String == "due", "\(plan.diagnostics)")
        let metrics = s.dir.url.appendingPathComponent("metrics.prom").path
        let result = try s.run(["run", "--json", "--assume", "network=metered", "--metrics-file", metrics])
        #expect(result.status == 0 && result.placed("r.tar.gz"), "\(result.diagnostics)")
        #expect(s.digest("t/r.tar.gz") == Self.sha(Self.tar))
        let used = s.state()?.meteredBytes.filter { $0.key.feed == "t" }.values.reduce(0, +)
        #expect(used == UInt64(Self.gz.count), "recorded \(String(describing: used)) metered bytes")
        #expect(Self.metric(metrics, "prefetch_body_bytes_total{feed=\"t\"}") == Double(Self.gz.count))
    }
}
