import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §9's deltas against real servers that answer ranges their own way — nginx and Apache
/// (multi-range), lighttpd — with control files the real `zsyncmake` makes, and the file
/// placed compared byte for byte with what the real `zsync` client builds from the same seed.
@Suite(.serialized) struct DeltaServerTests {
    static let feed = "resources:\n  - url: ORIGIN/img.bin\n    zsync: auto\n"

    /// Publishes `data` as `img.bin` in `www` (and its control file, when `control`), dated two
    /// minutes ago so that every server's validators of it are strong (Apache's ETag of a file
    /// modified this second is weak: FAULTS 7).
    /// Each file is written beside its name and renamed over it, as a publisher does.
    static func publish(_ data: [UInt8], in www: URL, control: Bool) throws {
        try Data(data).write(to: www.appendingPathComponent("img.bin"), options: .atomic)
        if control {
            try Data(try Zsyncmake.control(data, name: "img.bin")).write(to: www.appendingPathComponent("img.bin.zsync"), options: .atomic)
        }
        for name in ["img.bin", "img.bin.zsync"] {
            let url = www.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: url.path) else { continue }
            chmod(url.path, 0o644)
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-120)], ofItemAtPath: url.path)
        }
    }

    /// The old version placed whole, then the new one published: the run that follows is a
    /// delta (`changed`: the feed gives the new `sha256`). Returns that run.
    static func delta<Origin>(_ s: Harness<Origin>, www: URL, old: [UInt8], new: [UInt8]) throws -> RunResult {
        try publish(old, in: www, control: false)
        try s.feed(feed + "    sha256: \(FaultTests.sha(old))\n")
        let first = try s.run()
        #expect(first.status == 0, "\(first.diagnostics)")
        try publish(new, in: www, control: true)
        try s.feed(feed + "    sha256: \(FaultTests.sha(new))\n")
        return try s.runJSON()
    }

    static func placed(_ run: RunResult) -> [String: Any]? { run.events.first { $0["type"] as? String == "placed" } }

    @Test func nginxAnswersMultiRangeRequests() throws {
        let (old, new) = DeltaTests.pair(11)
        let s = try NginxHarness(files: [:])
        let run = try Self.delta(s, www: s.www, old: old, new: new)
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new)
        let placed = try #require(Self.placed(run))
        #expect(placed["delta"] as? Bool == true && (placed["fetched"] as? Int ?? .max) < new.count / 5, "\(placed)")
        let ranged = s.origin.log().filter { $0.contains("GET /img.bin ") && $0.contains("range=[bytes=") }
        #expect(ranged.contains { $0.hasPrefix("206 ") && $0.contains(",") }, "a multi-range 206: \(s.origin.log())")
    }

    @Test func apacheAnswersMultiRangeRequests() throws {
        let (old, new) = DeltaTests.pair(12)
        let s = try ApacheHarness(apacheFiles: [:])
        let run = try Self.delta(s, www: s.www, old: old, new: new)
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new)
        let placed = try #require(Self.placed(run))
        #expect(placed["delta"] as? Bool == true && (placed["fetched"] as? Int ?? .max) < new.count / 5, "\(placed)")
        let ranged = s.origin.log().filter { $0.path == "/img.bin" && $0.range != nil }
        #expect(ranged.contains { $0.status == 206 && ($0.range ?? "").contains(",") }, "\(ranged)")
    }

    @Test func lighttpdAnswersRangesItsOwnWay() throws {
        let (old, new) = DeltaTests.pair(13)
        let s = try LighttpdHarness(lighttpdFiles: [:])
        let run = try Self.delta(s, www: s.www, old: old, new: new)
        #expect(run.status == 0, "\(run.diagnostics)")
        #expect(s.cached("t/img.bin") == new)
        let placed = try #require(Self.placed(run))
        // However lighttpd answers (every range, only some, or the whole file), the right file is placed;
        // a delta when it sends ranges.
        let ranged = s.origin.log(requests: 3).filter { $0.path == "/img.bin" && $0.range != nil }
        #expect(!ranged.isEmpty, "\(s.origin.log()) \(run.stdout)")
        if ranged.allSatisfy({ $0.status == 206 }) {
            #expect(placed["delta"] as? Bool == true, "\(placed) \(ranged)")
        } else {
            #expect(Self.event(run, "delta") != nil, "a whole fetch says why: \(run.stdout)")
        }
    }

    static func event(_ run: RunResult, _ type: String) -> [String: Any]? { run.events.first { $0["type"] as? String == type } }

    /// The real `zsync` client, given the same seed and control file, builds the same bytes.
    @Test func theFileIsWhatTheZsyncClientBuilds() throws {
        let (old, new) = DeltaTests.pair(14)
        let s = try NginxHarness(files: [:])
        let run = try Self.delta(s, www: s.www, old: old, new: new)
        #expect(run.status == 0, "\(run.diagnostics)")
        let client = try TemporaryFolder()
        let seed = try client.write("seed.bin", Data(old))
        try Zsyncmake.run(Zsyncmake.client, ["-q", "-i", seed, "-o", client.file("out.bin"), s.origin.url("/img.bin.zsync")], in: client.url)
        let built = Array(try Data(contentsOf: URL(fileURLWithPath: client.file("out.bin"))))
        #expect(built == new, "the zsync client's file is the new version")
        #expect(s.cached("t/img.bin") == built, "byte for byte what the zsync client builds")
    }
}
