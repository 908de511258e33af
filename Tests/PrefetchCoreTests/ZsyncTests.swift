import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §9's delta, its pure parts: the control file's strict reader (on files Debian's
/// `zsyncmake` 0.6.2 writes, and on hostile ones), the rolling checksum, libcrypto's MD4,
/// and the block matcher against a plain reference that tries every offset, on seeded
/// random old/new pairs (the seed in every message; `PREFETCH_TEST_SEED=N` replays one).
@Suite struct ZsyncTests {
    static let seed: UInt64 = ProcessInfo.processInfo.environment["PREFETCH_TEST_SEED"].flatMap { UInt64($0) } ?? 37

    // MARK: The rolling checksum and MD4

    /// zsync's definition written out: a = Σ d_i, b = Σ (size - i) · d_i, modulo 2^16.
    static func plainRsum(_ block: ArraySlice<UInt8>) -> (a: UInt16, b: UInt16) {
        var a = 0, b = 0
        for (i, byte) in block.enumerated() {
            a += Int(byte)
            b += (block.count - i) * Int(byte)
        }
        return (UInt16(a & 0xffff), UInt16(b & 0xffff))
    }

    @Test func rollingEqualsComputingEachBlockAnew() {
        var random = SplitMix64(seed: Self.seed)
        for shift in [8, 9, 11] {
            let size = 1 << shift
            let data = (0..<(size * 3)).map { _ in UInt8.random(in: 0...255, using: &random) }
            var rolling = RollingChecksum(data[0..<size])
            for offset in 0..<(data.count - size) {
                let plain = Self.plainRsum(data[offset..<(offset + size)])
                #expect(rolling == RollingChecksum(a: plain.a, b: plain.b), "seed \(Self.seed), size \(size), offset \(offset)")
                if rolling != RollingChecksum(a: plain.a, b: plain.b) { return }
                rolling.roll(out: data[offset], into: data[offset + size], shift: shift)
            }
        }
    }

    /// RFC 1320's test suite, through the legacy provider.
    @Test func md4IsRFC1320s() throws {
        let md4 = try #require(MD4(), "libcrypto's legacy provider has MD4")
        var out: [UInt8] = []
        for (text, hex) in [("", "31d6cfe0d16ae931b73c59d7e0c089c0"), ("abc", "a448017aaf21d8525fc10ae87aa6729d"),
                            ("message digest", "d9130a8164549fe818874806e1c7014b")] {
            Array(text.utf8).withUnsafeBytes { md4.digest($0, into: &out) }
            #expect(SHA256.hex(out) == hex, "\(text)")
        }
        // Zero padding counts as bytes: "abc" and 5 zeros is "abc\0\0\0\0\0".
        var padded: [UInt8] = []
        Array("abc".utf8).withUnsafeBytes { md4.digest($0, zeros: 5, into: &out) }
        (Array("abc".utf8) + [0, 0, 0, 0, 0]).withUnsafeBytes { md4.digest($0, into: &padded) }
        #expect(out == padded)
    }

    // MARK: The control file

    /// A control file for `data`, written here from the format (an independent writer).
    static func control(_ data: [UInt8], blockSize: Int, lengths: (Int, Int, Int)?, extra: String = "") -> [UInt8] {
        let (seq, rsumBytes, checksumBytes) = lengths ?? (1, 4, 16)
        var header = "zsync: 0.6.2\nFilename: f\nMTime: Sat, 05 Dec 2026 10:00:00 +0000\nBlocksize: \(blockSize)\nLength: \(data.count)\n"
        if lengths != nil { header += "Hash-Lengths: \(seq),\(rsumBytes),\(checksumBytes)\n" }
        header += "URL: f\nSHA-1: \(SHA1Reference.hex(data))\n" + extra + "\n"
        var bytes = Array(header.utf8)
        let md4 = MD4()!
        var digest: [UInt8] = []
        for start in stride(from: 0, to: data.count, by: blockSize) {
            var block = Array(data[start..<min(data.count, start + blockSize)])
            block += [UInt8](repeating: 0, count: blockSize - block.count)
            let (a, b) = plainRsum(block[...])
            let whole = [UInt8(a >> 8), UInt8(a & 0xff), UInt8(b >> 8), UInt8(b & 0xff)]
            bytes += whole.suffix(rsumBytes)
            block.withUnsafeBytes { md4.digest($0, into: &digest) }
            bytes += digest.prefix(checksumBytes)
        }
        return bytes
    }

    @Test func aWrittenControlFileReadsBack() throws {
        let data = FaultTests_bytes(10_000, seed: 3)
        let parsed = try ZsyncControl(parsing: Self.control(data, blockSize: 2048, lengths: (2, 3, 5)), maxSize: 1 << 30, size: 10_000)
        #expect(parsed.blockSize == 2048 && parsed.length == 10_000 && parsed.blockCount == 5 && parsed.sequenceMatches == 2)
        #expect(parsed.rsumBytes == 3 && parsed.checksumBytes == 5 && parsed.sha1 == SHA1Reference.hex(data))
        let defaults = try ZsyncControl(parsing: Self.control(data, blockSize: 1024, lengths: nil), maxSize: 1 << 30)
        #expect(defaults.sequenceMatches == 1 && defaults.rsumBytes == 4 && defaults.checksumBytes == 16)
    }

    /// Control files Debian's `zsyncmake` (0.6.2) writes: read, each block entry the rolling
    /// sum and MD4 written out above, and a seed that is the file itself gives every block.
    @Test(arguments: [(1, 0), (2_047, 0), (10_000, 2048), (300_000, 0), (1_000_001, 4096)])
    func controlFilesZsyncmakeWritesAreRead(length: Int, blockSize: Int) throws {
        let tool = "/usr/bin/zsyncmake"
        try #require(FileManager.default.isExecutableFile(atPath: tool), "no \(tool): scripts/test installs Debian's zsync")
        let folder = try TemporaryFolder()
        let data = FaultTests_bytes(length, seed: UInt64(length))
        let file = try folder.write("f.bin", Data(data))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = (blockSize > 0 ? ["-b", "\(blockSize)"] : []) + ["-u", "f.bin", "-o", folder.file("f.bin.zsync"), file]
        process.currentDirectoryURL = folder.url
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: folder.file("f.bin.zsync"))))
        let control = try ZsyncControl(parsing: bytes, maxSize: 1 << 40, size: UInt64(length))
        #expect(control.length == UInt64(length) && control.sha1 == SHA1Reference.hex(data))
        if blockSize > 0 { #expect(control.blockSize == blockSize) }
        // Each entry as the format says: the last rsum_bytes of a‖b, the first checksum_bytes of the MD4, zero-padded.
        let md4 = try #require(MD4())
        var digest: [UInt8] = []
        for index in 0..<control.blockCount {
            var block = Array(data[(index * control.blockSize)..<min(length, (index + 1) * control.blockSize)])
            block += [UInt8](repeating: 0, count: control.blockSize - block.count)
            let (a, b) = Self.plainRsum(block[...])
            #expect(control.rsum(index) == control.kept(RollingChecksum(a: a, b: b)), "block \(index) of \(length)")
            block.withUnsafeBytes { md4.digest($0, into: &digest) }
            #expect(Array(control.checksum(index)) == Array(digest.prefix(control.checksumBytes)), "block \(index) of \(length)")
        }
        var matcher = try #require(BlockMatcher(control))
        var offset = 0
        var assembled = [UInt8](repeating: 0, count: length)
        matcher.scan(fill: { buffer in
            let n = min(buffer.count, data.count - offset)
            data[offset..<(offset + n)].withUnsafeBytes { buffer.copyMemory(from: $0) }
            offset += n
            return n
        }, block: { block, bytes in assembled.replaceSubrange((block * control.blockSize)..<(block * control.blockSize + bytes.count), with: bytes) })
        #expect(matcher.foundCount == control.blockCount && assembled == data, "\(matcher.foundCount) of \(control.blockCount) blocks")
    }

    /// Hostile and unusable control files are refused with a phrase naming why.
    @Test func hostileControlFilesAreUnusable() throws {
        let data = FaultTests_bytes(5_000, seed: 4)
        let good = Self.control(data, blockSize: 1024, lengths: (1, 4, 16))
        let text = String(decoding: good, as: UTF8.self)
        let cases: [([UInt8], String)] = [
            ([], "not a control file"),
            (Array("GIF89a\0\0binary junk".utf8), "not a control file"),
            (Array("zsync: 0.6.2\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 70_000), "64 KiB"),
            (Array(text.replacingOccurrences(of: "Blocksize: 1024", with: "Blocksize: 3").utf8), "power of two"),
            (Array(text.replacingOccurrences(of: "Blocksize: 1024", with: "Blocksize: 2097152").utf8), "power of two"),
            (Array(text.replacingOccurrences(of: "Length: 5000", with: "Length: 9000").utf8), "block entries"),
            (Array(text.replacingOccurrences(of: "Length: 5000", with: "Length: 0").utf8), "above 0"),
            (good + [0], "block entries"),
            (Array(good.dropLast()), "block entries"),
            (Array(text.replacingOccurrences(of: "URL: f\n", with: "URL: f\nZ-Map2: 3\n").utf8), "Z-Map2"),
            (Array(text.replacingOccurrences(of: "URL: f\n", with: "URL: f\nRecompress: gzip -n\n").utf8), "Recompress"),
            (Array(text.replacingOccurrences(of: "URL: f\n", with: "URL: f\nMin-Version: 0.7.0\n").utf8), "newer than 0.6.2"),
            (Array(text.replacingOccurrences(of: "URL: f\n", with: "URL: f\nX-Thing: 1\n").utf8), "unknown header"),
            (Array(text.replacingOccurrences(of: "SHA-1: ", with: "SHA-1: zz").utf8), "40 hex"),
            (Array(text.replacingOccurrences(of: "Hash-Lengths: 1,4,16", with: "Hash-Lengths: 3,4,16").utf8), "Hash-Lengths"),
            (Array(text.replacingOccurrences(of: "Hash-Lengths: 1,4,16", with: "Hash-Lengths: 1,4,2").utf8), "Hash-Lengths"),
            (Array(text.replacingOccurrences(of: "Blocksize: 1024\n", with: "Blocksize: 1024\nBlocksize: 1024\n").utf8), "given twice"),
        ]
        for (bytes, phrase) in cases {
            #expect(throws: ZsyncControl.Unusable.self, "\(phrase)") { try ZsyncControl(parsing: bytes, maxSize: 1 << 30) }
            do { _ = try ZsyncControl(parsing: bytes, maxSize: 1 << 30) } catch {
                #expect(error.detail.contains(phrase), "\(error.detail) (wanted '\(phrase)')")
            }
        }
        #expect(throws: ZsyncControl.Unusable.self) { try ZsyncControl(parsing: good, maxSize: 4_999) }
        #expect(throws: ZsyncControl.Unusable.self) { try ZsyncControl(parsing: good, maxSize: 1 << 30, size: 5_001) }
        // A header whose lines are fine but that claims a billion blocks: refused by the size rule, not allocated.
        let huge = Array(text.replacingOccurrences(of: "Length: 5000", with: "Length: 1099511627776").utf8)
        #expect(throws: ZsyncControl.Unusable.self) { try ZsyncControl(parsing: huge, maxSize: UInt64.max) }
    }

    // MARK: The matcher against a plain reference

    /// Which blocks a reference that tries every offset of the seed (zero-padded) finds.
    static func referenceFound(_ control: ZsyncControl, seed: [UInt8]) -> Set<Int> {
        let size = control.blockSize, count = control.blockCount
        let padded = seed + [UInt8](repeating: 0, count: 2 * size)
        let md4 = MD4()!
        var digest: [UInt8] = []
        // Each offset's rolling sum, computed afresh from its block (no rolling).
        let sums = (0..<(seed.count + size)).map { offset in
            let (a, b) = plainRsum(padded[offset..<(offset + size)])
            return control.kept(RollingChecksum(a: a, b: b))
        }
        func matches(_ block: Int, at offset: Int) -> Bool {
            guard sums[offset] == control.rsum(block) else { return false }
            padded[offset..<(offset + size)].withUnsafeBytes { md4.digest($0, into: &digest) }
            return digest.prefix(control.checksumBytes) == control.checksum(block)
        }
        var found = Set<Int>()
        for offset in 0..<seed.count {
            for block in 0..<count {
                if control.sequenceMatches == 1 {
                    if matches(block, at: offset) { found.insert(block) }
                } else if block + 1 < count, matches(block, at: offset), matches(block + 1, at: offset + size) {
                    found.insert(block)
                    found.insert(block + 1)
                }
            }
        }
        return found
    }

    /// Seeded old/new pairs: edits, insertions, deletions, moved blocks, truncation, growth,
    /// a file shorter than one block, sizes not a multiple of the block size.
    @Test func theMatcherFindsWhatEveryOffsetWouldFind() throws {
        var random = SplitMix64(seed: Self.seed)
        for index in 0..<60 {
            let size = [256, 512][Int(random.next() % 2)]
            let newLength = Int(random.next() % UInt64(size * 12)) + 1
            let new = (0..<newLength).map { _ in UInt8(truncatingIfNeeded: random.next() % 4 == 0 ? 0 : random.next()) }
            var old = new
            switch index % 7 {
            case 0: for _ in 0..<3 where !old.isEmpty { old[Int(random.next() % UInt64(old.count))] ^= 0x5a }  // edits
            case 1: old.insert(contentsOf: (0..<Int(random.next() % 300)).map { UInt8(truncatingIfNeeded: $0 &* 7) }, at: Int(random.next() % UInt64(old.count + 1)))
            case 2: if old.count > 10 { old.removeSubrange(0..<Int(random.next() % UInt64(old.count / 2))) }  // deletion at the start
            case 3: if old.count > 2 * size { old = Array(old[size...] + old[..<size]) }  // a block moved
            case 4: old = Array(old.prefix(Int(random.next() % UInt64(old.count + 1))))  // truncated
            case 5: old += (0..<Int(random.next() % UInt64(size * 2))).map { _ in UInt8(truncatingIfNeeded: random.next()) }  // grown
            default: old = (0..<Int(random.next() % UInt64(size * 3))).map { _ in UInt8(truncatingIfNeeded: random.next()) }  // unrelated
            }
            let lengths = [(1, 4, 16), (2, 2, 3), (2, 3, 5), (1, 2, 8), (1, 3, 4)][Int(random.next() % 5)]
            let control = try ZsyncControl(parsing: Self.control(new, blockSize: size, lengths: lengths), maxSize: 1 << 30)
            var matcher = try #require(BlockMatcher(control))
            var offset = 0
            var delivered: [Int: [UInt8]] = [:]
            let chunk = Int(random.next() % 700) + 1  // reads of odd sizes
            matcher.scan(fill: { buffer in
                let n = min(buffer.count, chunk, old.count - offset)
                old[offset..<(offset + n)].withUnsafeBytes { buffer.copyMemory(from: $0) }
                offset += n
                return n
            }, block: { block, bytes in delivered[block] = Array(bytes) })
            let expected = Self.referenceFound(control, seed: old)
            let label = "seed \(Self.seed) (PREFETCH_TEST_SEED), pair \(index): block \(size), \(new.count) B new, \(old.count) B old, lengths \(lengths)"
            #expect(Set(delivered.keys) == expected, "\(label): found \(delivered.keys.sorted()), the reference \(expected.sorted())")
            for (block, bytes) in delivered {
                #expect(bytes == Array(new[(block * size)..<min(new.count, (block + 1) * size)]), "\(label): block \(block)'s bytes")
            }
            if Set(delivered.keys) != expected { return }
        }
    }
}

/// SHA-1 in hex, for the control files written here (Foundation has none on Linux: the `sha1sum` tool).
enum SHA1Reference {
    static func hex(_ data: [UInt8]) -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sha1-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try? Data(data).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha1sum")
        process.arguments = [file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: out.prefix(40), as: UTF8.self)
    }
}

func FaultTests_bytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var random = SplitMix64(seed: seed)
    return (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
}

/// The `multipart/byteranges` reader (SPEC §9 step 3): what RFC 9110 lets a server send —
/// parts in any order, coalesced or overlapping — read in any chunking, and what it does not
/// refused with a phrase.
@Suite struct ByteRangesReaderTests {
    static func body(_ parts: [(first: Int, last: Int)], of file: [UInt8], boundary: String = "3d6b6a416f9b5", crlf: Bool = true,
                     extra: String = "") -> [UInt8] {
        let end = crlf ? "\r\n" : "\n"
        var out = Array("preamble, ignored\(end)".utf8)
        for part in parts {
            out += Array("--\(boundary)\(end)Content-Type: application/octet-stream\(end)Content-Range: bytes \(part.first)-\(part.last)/\(file.count)\(end)\(extra)\(end)".utf8)
            out += file[part.first...part.last]
            out += Array(end.utf8)
        }
        out += Array("--\(boundary)--\(end)epilogue".utf8)
        return out
    }

    /// The file's bytes the events give, by offset, and the parts announced.
    static func read(_ body: [UInt8], chunk: Int, boundary: String = "3d6b6a416f9b5") throws(ByteRangesReader.Malformed) -> (parts: [ClosedRange<UInt64>], data: [UInt64: UInt8], ended: Bool) {
        var reader = ByteRangesReader(boundary: boundary)
        var parts: [ClosedRange<UInt64>] = [], data: [UInt64: UInt8] = [:], ended = false
        for start in stride(from: 0, to: body.count, by: chunk) {
            for event in try reader.read(body[start..<min(body.count, start + chunk)]) {
                switch event {
                case .part(let first, let last, _): parts.append(first...last)
                case .data(let offset, let bytes): for (i, byte) in bytes.enumerated() { data[offset + UInt64(i)] = byte }
                case .end: ended = true
                }
            }
        }
        try reader.finish()
        return (parts, data, ended)
    }

    @Test func partsInAnyOrderCoalescedOrOverlappingInAnyChunking() throws {
        var random = SplitMix64(seed: ZsyncTests.seed)
        let file = FaultTests_bytes(5_000, seed: 9)
        for index in 0..<200 {
            let count = Int(random.next() % 6) + 1
            let parts = (0..<count).map { _ -> (first: Int, last: Int) in
                let first = Int(random.next() % 5_000)
                return (first, min(4_999, first + Int(random.next() % 700)))
            }
            let body = Self.body(parts, of: file, crlf: random.next() % 4 != 0)
            let chunk = [1, 2, 7, 64, 1_000, body.count][Int(random.next() % 6)]
            let (announced, data, ended) = try Self.read(body, chunk: chunk)
            let label = "seed \(ZsyncTests.seed) (PREFETCH_TEST_SEED), body \(index), chunk \(chunk)"
            #expect(ended && announced == parts.map { UInt64($0.first)...UInt64($0.last) }, "\(label)")
            for (offset, byte) in data where file[Int(offset)] != byte { Issue.record("\(label): byte \(offset)"); return }
            #expect(data.count == Set(parts.flatMap { $0.first...$0.last }).count, "\(label)")
        }
    }

    @Test func whatRFC9110DoesNotAllowIsRefused() throws {
        let file = (0..<1_000).map { UInt8(ascii: "a") + UInt8($0 % 26) }  // text, so that the cases below are edits of the body's own bytes
        let good = String(decoding: Self.body([(0, 99), (500, 599)], of: file), as: UTF8.self)
        let cases: [([UInt8], String)] = [
            (Array(good.replacingOccurrences(of: "Content-Range: bytes 0-99/1000\r\n", with: "").utf8), "without Content-Range"),
            (Array(good.replacingOccurrences(of: "bytes 0-99/1000", with: "bytes 99-0/1000").utf8), "not 'bytes FIRST-LAST/LENGTH'"),
            (Array(good.replacingOccurrences(of: "bytes 0-99/1000", with: "bytes 0-99/*").utf8), "not 'bytes FIRST-LAST/LENGTH'"),
            (Array(good.replacingOccurrences(of: "bytes 0-99/1000", with: "bytes 0-98/1000").utf8), "longer than its Content-Range"),
            (Array(good.replacingOccurrences(of: "Content-Range: bytes 0-99/1000\r\n", with: "Content-Range: bytes 0-99/1000\r\nContent-Range: bytes 0-99/1000\r\n").utf8), "two Content-Range"),
            (Array(good.utf8.prefix(300)), "before its closing boundary"),
            (Array(good.replacingOccurrences(of: "Content-Type: application/octet-stream\r\n", with: "X: " + String(repeating: "a", count: 9_000) + "\r\n").utf8), "8 KiB"),
            (Array("--3d6b6a416f9b5--\r\n".utf8), "no part"),
        ]
        for (body, phrase) in cases {
            #expect(throws: ByteRangesReader.Malformed.self, "\(phrase)") { _ = try Self.read(body, chunk: 13) }
            do { _ = try Self.read(body, chunk: 13) } catch { #expect(error.detail.contains(phrase), "\(error.detail) (wanted '\(phrase)')") }
        }
    }

    @Test func theBoundaryComesFromTheContentType() {
        #expect(ByteRangesReader.boundary(contentType: "multipart/byteranges; boundary=3d6b6a416f9b5") == "3d6b6a416f9b5")
        #expect(ByteRangesReader.boundary(contentType: "Multipart/ByteRanges;boundary=\"a b:c\"") == "a b:c")
        #expect(ByteRangesReader.boundary(contentType: "multipart/mixed; boundary=x") == nil)
        #expect(ByteRangesReader.boundary(contentType: "multipart/byteranges") == nil)
        #expect(ByteRangesReader.boundary(contentType: "multipart/byteranges; boundary=" + String(repeating: "x", count: 71)) == nil)
    }
}
