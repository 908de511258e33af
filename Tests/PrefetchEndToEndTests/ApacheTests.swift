import Foundation
import Glibc
import Testing
import TestSupport
@testable import PrefetchCore

/// FAULTS 7 and 8 against a real Apache httpd 2.4, where the If-Range bug was found: for a
/// file published this second Apache sends a weak ETag and a Last-Modified equal to the
/// Date, and answers a date in If-Range with 200 (the whole file) until the file is 60 s
/// old. A run killed mid-transfer (`kill -9`) leaves partials; the next run resumes only
/// those with a strong validator (If-Range) or a sha256 (Range alone), and restarts the
/// others without a wasted request.
@Suite(.serialized, .enabled(if: ApacheOrigin.available, "Debian's apache2 is not installed (scripts/test installs it)"))
struct ApacheTests {
    static let size = 3_000_000

    @Test func resumesAgainstApacheSendOnlyStrongValidators() throws {
        let names = ["fresh.bin", "fresh-sha.bin", "old.bin", "no-etag-fresh.bin", "no-etag-old.bin"]
        var files: [String: [UInt8]] = [:]
        for (index, name) in names.enumerated() { files[name] = FaultTests.bytes(Self.size, seed: UInt64(700 + index)) }
        let s = try ApacheHarness(apacheFiles: files)
        // "Published this second" for the whole test, however slow the machine: an mtime a
        // little ahead, which Apache serves as the request's own second (a Last-Modified equal
        // to the Date, a weak ETag). The old ones were published an hour ago.
        let now = time(nil)
        for name in names {
            let age: time_t = name.contains("old") ? -3600 : 120
            var times = [timespec(tv_sec: now + age, tv_nsec: 0), timespec(tv_sec: now + age, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, s.www.appendingPathComponent(name).path, &times, 0) == 0)
        }
        try s.feed("limits: { concurrency: 8, max_rate: 2MiB/s }\nresources:\n" + names.map { name in
            "  - url: ORIGIN/\(name)\n" + (name.contains("sha") ? "    sha256: \(FaultTests.sha(files[name]!))\n" : "")
        }.joined())
        let boot = ["PREFETCH_BOOT_ID": "boot-1"]
        let (first, _) = try s.startRun(environment: boot)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !names.allSatisfy({ (s.partialSize($0) ?? 0) >= 600_000 }) { usleep(20_000) }
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        let onDisk = Dictionary(uniqueKeysWithValues: names.map { ($0, s.partialSize($0) ?? 0) })
        for name in names { #expect(onDisk[name]! >= 600_000 && s.resourceState(name)?.partial != nil, "\(name): \(onDisk[name]!) bytes") }
        let answered = s.origin.log().filter { $0.status == 200 }
        #expect(answered.isEmpty || answered.allSatisfy { $0.bytes > Self.size }, "a first transfer ended before the kill")
        let weak = s.resourceState("fresh.bin")?.partial?.validators.etag ?? ""
        #expect(weak.hasPrefix("W/"), "Apache's ETag for a file of this second: \(weak)")

        let second = try s.runJSON(environment: boot)
        #expect(second.status == 0, "\(second.diagnostics)")
        let log = s.origin.log()
        for name in names {
            #expect(s.digest("t/" + name) == FaultTests.sha(files[name]!), "\(name)")
            let resume = try #require(log.last { $0.path == "/" + name }, "\(name)")
            let from = "bytes=\(onDisk[name]!)-"
            switch name {
            case "fresh.bin", "no-etag-fresh.bin":
                // No usable validator and no sha256: restarted from zero, no Range, no date.
                #expect(resume.range == nil && resume.ifRange == nil && resume.status == 200, "\(name): \(resume)")
            case "fresh-sha.bin":
                // FAULTS 8: Range without If-Range; Apache sends the rest.
                #expect(resume.range == from && resume.ifRange == nil && resume.status == 206, "\(name): \(resume)")
                #expect(resume.bytes < Self.size - onDisk[name]! + 1000, "\(name): \(resume.bytes) bytes for the rest")
            case "old.bin":
                #expect(resume.range == from && resume.ifRange?.hasPrefix("\"") == true && resume.status == 206, "\(name): \(resume)")
            default:  // no-etag-old.bin: a Last-Modified an hour before the Date is strong
                #expect(resume.range == from && resume.ifRange == HTTPDateText.of(now - 3600) && resume.status == 206, "\(name): \(resume)")
            }
        }
    }
}

/// An IMF-fixdate, as Apache writes Last-Modified.
enum HTTPDateText {
    static func of(_ seconds: time_t) -> String {
        var value = seconds
        var parts = tm()
        gmtime_r(&value, &parts)
        var buffer = [Int8](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
