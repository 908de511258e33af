import Foundation
import Testing
@testable import PrefetchCore

/// `BackgroundSHA1`: a file's SHA-1 read on a thread of its own with `pread`, against FIPS
/// 180's published vectors, beside reads of the same descriptor; a cancel ends it early.
@Suite struct BackgroundSHA1Tests {
    static func file(_ bytes: [UInt8]) throws -> FileDescriptor {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sha1-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        defer { unlink(path) }
        return try FileDescriptor.open(path, flags: O_RDONLY).get()
    }

    @Test func publishedVectors() throws {
        // FIPS 180-2, appendix A: "abc", and a million 'a' (four reads of 256 KiB).
        let vectors: [([UInt8], String)] = [
            (Array("abc".utf8), "a9993e364706816aba3e25717850c26c9cd0d89d"),
            ([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000), "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
            ([], "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ]
        for (bytes, expected) in vectors {
            let file = try Self.file(bytes)
            let digest = BackgroundSHA1(file)
            // The descriptor's own position is not moved by the digest's reads.
            var head = [UInt8](repeating: 0, count: 2)
            let read = try head.withUnsafeMutableBytes { try file.read(into: $0).get() }
            #expect(read == min(2, bytes.count) && Array(head.prefix(read)) == Array(bytes.prefix(2)))
            #expect(digest.result() == expected, "\(bytes.count) bytes")
            #expect(digest.result() == expected, "asked twice")
        }
    }

    /// A sparse file of 1 TiB (its SHA-1 would take minutes): a cancel ends the read at its
    /// next 256 KiB, with no digest. An ignored cancel would wait for the whole read.
    @Test func aCancelEndsTheReadWithNoDigest() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sha1-\(UUID().uuidString)").path
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT).get()
        defer { unlink(path) }
        try file.truncate(to: 1 << 40).get()
        let digest = BackgroundSHA1(file)
        Thread.sleep(forTimeInterval: 0.05)  // reading by now
        digest.cancel()
        #expect(digest.result() == nil)
    }
}
