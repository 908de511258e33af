import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// The cache's file operations below the engine: placing, listing, fsync off the loop.
@Suite struct CacheFolderTests {
    static func feed(_ yaml: String) throws -> Feed {
        try #require(FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "f.yaml").feed)
    }

    static func partial(_ cache: CacheFolder, _ name: String, _ text: String) throws {
        let file = try cache.createPartial(name).get()
        _ = text.utf8CString.dropLast().withUnsafeBytes { file.write($0) }
    }

    /// Folders are opened once per run; one removed behind prefetch's back is opened (and
    /// created) again rather than renaming into a deleted folder.
    @Test func placementReopensAFolderRemovedMeanwhile() throws {
        let folder = try TemporaryFolder()
        let cache = try CacheFolder.open(folder.path + "/cache").get()
        var folders: [String: FileDescriptor] = [:]
        try Self.partial(cache, "a.part", "one")
        _ = try cache.place(partial: "a.part", feed: "f", path: "sub/a.bin", folders: &folders).get()
        #expect(folders.keys.sorted() == ["+f/sub"], "kept once, under a placement's own key")
        try FileManager.default.removeItem(atPath: folder.path + "/cache/f/sub")
        try Self.partial(cache, "b.part", "two")
        _ = try cache.place(partial: "b.part", feed: "f", path: "sub/b.bin", folders: &folders).get()
        #expect(try String(contentsOfFile: folder.path + "/cache/f/sub/b.bin", encoding: .utf8) == "two")
    }

    @Test func placingOverAFolderIsRefused() throws {
        let folder = try TemporaryFolder()
        let cache = try CacheFolder.open(folder.path + "/cache").get()
        try FileManager.default.createDirectory(atPath: folder.path + "/cache/f/a.bin/x", withIntermediateDirectories: true)
        try Self.partial(cache, "a.part", "one")
        var folders: [String: FileDescriptor] = [:]
        guard case .failure(let error) = cache.place(partial: "a.part", feed: "f", path: "a.bin", folders: &folders) else {
            Issue.record("a file replaced a folder")
            return
        }
        #expect(error.description == "'f/a.bin' is a folder")
    }

    /// The listing reads folders (no stat per file) and trusts regular files only: not a
    /// symlink, not a folder, and nothing reached through a symlinked folder.
    @Test func theListingSeesRegularFilesOnly() throws {
        let folder = try TemporaryFolder()
        let root = folder.path
        for sub in ["f/deep/er", "f/dir.bin", "outside"] {
            try FileManager.default.createDirectory(atPath: root + "/" + sub, withIntermediateDirectories: true)
        }
        try folder.write("f/top.bin", "t")
        try folder.write("f/deep/er/leaf.bin", "l")
        try folder.write("outside/via.bin", "v")
        try FileManager.default.createSymbolicLink(atPath: root + "/f/link.bin", withDestinationPath: root + "/f/top.bin")
        try FileManager.default.createSymbolicLink(atPath: root + "/f/hop", withDestinationPath: root + "/outside")
        let feed = try Self.feed("""
            name: f
            resources:
              - { url: "https://e.com/top.bin" }
              - { url: "https://e.com/x", path: deep/er/leaf.bin }
              - { url: "https://e.com/link.bin" }
              - { url: "https://e.com/dir.bin" }
              - { url: "https://e.com/y", path: hop/via.bin }
              - { url: "https://e.com/missing.bin" }
            """)
        let present = CacheListing.present([feed], in: CacheFolder.openExisting(root))
        #expect(present == CachedFiles([ResourceKey(feed: "f", path: "top.bin"), ResourceKey(feed: "f", path: "deep/er/leaf.bin")], in: [feed]))
        #expect(feed.resources.indices.filter { present.contains(feed: "f", position: $0) }.map { feed.resources[$0].path } == ["top.bin", "deep/er/leaf.bin"])
        #expect(CacheListing.present([feed], in: CacheFolder.openExisting(root + "/nowhere")).isEmpty)
    }

    /// Every fsync handed to the syncer comes back once, under its id, from worker threads.
    @Test func theSyncerReturnsEveryResult() throws {
        let folder = try TemporaryFolder()
        let wakeups = WakeupCounter()
        let syncer = Syncer(maxWorkers: 3, onFinished: { wakeups.add() })
        var files: [FileDescriptor] = []
        for i in 0..<40 {
            try folder.write("f\(i)", "data \(i)")
            files.append(try FileDescriptor.open(folder.path + "/f\(i)", flags: O_RDWR).get())
            syncer.submit(id: i, file: files[i])
        }
        var results: [Int: Result<Void, Errno>] = [:]
        let deadline = Date().addingTimeInterval(20)
        while results.count < 40, Date() < deadline {
            syncer.waitForAny(seconds: 0.5)
            for done in syncer.takeFinished() {
                #expect(results[done.id] == nil, "id \(done.id) came back twice")
                results[done.id] = done.result
            }
        }
        #expect(results.keys.sorted() == Array(0..<40))
        #expect(results.values.filter { !$0.isSuccess }.isEmpty)
        #expect(syncer.outstanding == 0)
        while wakeups.count < 40, Date() < deadline { usleep(1000) }  // each wake-up follows its result
        #expect(wakeups.count == 40)
        syncer.shutDown()
    }

    /// A writer dropped with hashing still queued (a body that failed its checks):
    /// `waitForHashing` returns only once that hashing has run, so the engine can wait for
    /// it before the process exits.
    @Test func hashingLeftByADroppedWriterIsWaitedFor() throws {
        let folder = try TemporaryFolder()
        let path = folder.file("dropped.part")
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_TRUNC).get()
        let pool = BufferPool()
        pool.hashing.suspend()  // the hashing cannot run until the test lets it
        do {
            let writer = BodyWriter(pool: pool, hashing: true)
            let bytes = [UInt8](repeating: 7, count: BufferPool.bufferSize)
            #expect(bytes.withUnsafeBytes { writer.append($0, to: file, at: 0) } == nil)  // a full buffer: written, queued
        }  // dropped without `finish`
        #expect(!pool.waitForHashing(seconds: 0.05), "returned with hashing still queued")
        pool.hashing.resume()
        #expect(pool.waitForHashing(seconds: 30))
    }

    /// A write that fails (a full disk) takes none of the chunk that filled the buffer: the
    /// transfer counted none of it, so `pending` must not hold it either (it did, and the
    /// engine's `offset - pending` trapped when the very first buffer could not be written).
    /// Chunk sizes are drawn from a printed seed (`PREFETCH_WRITER_SEED`).
    @Test func aFailedWriteTakesNoneOfItsChunk() throws {
        let seed = ProcessInfo.processInfo.environment["PREFETCH_WRITER_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        print("aFailedWriteTakesNoneOfItsChunk: PREFETCH_WRITER_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        let folder = try TemporaryFolder()
        let path = folder.file("failed-write.part")
        _ = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_TRUNC).get()
        for _ in 0..<50 {
            let readOnly = try FileDescriptor.open(path, flags: O_RDONLY).get()  // every write fails (EBADF)
            let writer = BodyWriter(pool: BufferPool(), hashing: Bool.random(using: &random))
            var counted = 0
            while true {
                let chunk = [UInt8](repeating: 1, count: Int.random(in: 1...100_000, using: &random))
                if chunk.withUnsafeBytes({ writer.append($0, to: readOnly, at: UInt64(counted)) }) != nil { break }
                counted += chunk.count
            }
            // The first full buffer's write failed: what the buffer holds is exactly what was counted.
            #expect(writer.pending == counted, "seed \(seed): \(writer.pending) bytes pending, \(counted) counted")
        }
    }

    /// A resumed body: the bytes already in the partial are hashed only; the rest is
    /// gathered into 512 KiB buffers, each written at its place, then hashed. However the
    /// chunks are cut, the file gets every byte once and the digest matches a one-shot one;
    /// `pending` holds only what waits for the next full buffer, and `flush` writes it.
    @Test func backgroundHashingWritesAndHashesEveryByteOnce() throws {
        let bytes = (0..<9_000_001).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 11) }
        let folder = try TemporaryFolder()
        let path = folder.file("hasher.part")
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_TRUNC).get()
        let resumeAt = 1_000_003
        _ = bytes[0..<resumeAt].withUnsafeBytes { file.write($0) }  // already on disk
        let hasher = BodyWriter(pool: BufferPool())
        bytes[0..<resumeAt].withUnsafeBytes { hasher.hashOnly($0) }
        let sizes = [1, 16_384, 524_288, 524_289, 3_000_000, 7, 16_384, 1_048_576]
        var offset = resumeAt, turn = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + sizes[turn % sizes.count])
            let error = bytes[offset..<end].withUnsafeBytes { hasher.append($0, to: file, at: UInt64(offset)) }
            #expect(error == nil)
            offset = end
            turn += 1
            #expect(hasher.pending < BufferPool.bufferSize)
        }
        #expect(hasher.pending == (bytes.count - resumeAt) % BufferPool.bufferSize)
        #expect(hasher.flush() == nil)
        #expect(hasher.pending == 0)
        #expect(SHA256.hex(hasher.finish()) == SHA256.hex(SHA256.digest(bytes)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes))
    }

    /// FIPS 180-2's test vectors, in lowercase hex as manifests and state.db hold them.
    @Test func sha256MatchesKnownVectors() {
        #expect(SHA256.hex(SHA256.digest(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(SHA256.digest([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex([0x00, 0x09, 0x0a, 0x0f, 0xf0, 0xff]) == "00090a0ff0ff")
        // The one-shot path reuses one context: a second digest must not carry the first.
        for _ in 0..<2 {
            #expect(Array("abc".utf8).withUnsafeBytes { SHA256.hexDigest($0) } == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        }
        #expect(CacheFolder.partialName(feed: "f", path: "p") == SHA256.hex(SHA256.digest(Array("f\0p".utf8))) + ".part")
    }

    /// Without a `sha256` a large body is gathered the same way, in one reused buffer:
    /// every byte lands once, at its place, and nothing is left pending after `flush`.
    @Test func unhashedBodiesAreGatheredIntoFewWrites() throws {
        let bytes = (0..<2_500_000).map { UInt8(truncatingIfNeeded: ($0 &* 40_503) >> 7) }
        let folder = try TemporaryFolder()
        let path = folder.file("gather.part")
        let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_TRUNC).get()
        let body = BodyWriter(pool: BufferPool(), hashing: false)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + 16_384)
            #expect(bytes[offset..<end].withUnsafeBytes { body.append($0, to: file, at: UInt64(offset)) } == nil)
            offset = end
        }
        #expect(body.pending == bytes.count % BufferPool.bufferSize)
        #expect(body.flush() == nil && body.pending == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes))
    }

    /// The pipelined hasher against the one-shot digest, over random bodies cut at random:
    /// a resumed prefix hashed only (`hashOnly`, itself in random pieces), chunks of 1 byte
    /// to 1.5 MiB as libcurl might hand them over, and `flush` at random moments (the
    /// periodic fsync and a pause write a part-filled buffer). Several writers share one
    /// pool, so their lanes interleave on the hashing threads. Every body's file must hold
    /// its bytes once, at their places, and its digest must be SHA-256 of the whole body.
    /// Cases come from a printed seed (`PREFETCH_HASHER_SEED` replays one).
    @Test func thePipelinedDigestMatchesTheOneShotOverRandomChunkings() throws {
        let seed = ProcessInfo.processInfo.environment["PREFETCH_HASHER_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        print("thePipelinedDigestMatchesTheOneShotOverRandomChunkings: PREFETCH_HASHER_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        let folder = try TemporaryFolder()
        let pool = BufferPool()
        for round in 0..<6 {
            // Lengths around the buffer size's multiples, where off-by-ones live, and others.
            let lengths = (0..<3).map { _ in
                Bool.random(using: &random)
                    ? Int.random(in: 0...3, using: &random) * BufferPool.bufferSize + Int.random(in: -2...2, using: &random)
                    : Int.random(in: 0...3_000_000, using: &random)
            }.map { max(0, $0) }
            var bodies: [(bytes: [UInt8], file: FileDescriptor, path: String, writer: BodyWriter, done: Int)] = []
            for (index, length) in lengths.enumerated() {
                var words = SplitMix64(seed: random.next())
                let bytes = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in  // 8 bytes a draw (debug builds)
                    var at = 0
                    while at < length {
                        var word = words.next()
                        for _ in 0..<min(8, length - at) {
                            buffer[at] = UInt8(truncatingIfNeeded: word)
                            word >>= 8
                            at += 1
                        }
                    }
                    count = length
                }
                let path = folder.file("r\(round)-\(index).part")
                let file = try FileDescriptor.open(path, flags: O_RDWR | O_CREAT | O_TRUNC).get()
                let writer = BodyWriter(pool: pool)
                // A resumed prefix: already in the file, hashed only.
                let resumeAt = Bool.random(using: &random) ? Int.random(in: 0...length, using: &random) : 0
                _ = bytes[0..<resumeAt].withUnsafeBytes { file.write($0) }
                var hashed = 0
                while hashed < resumeAt {
                    let end = min(resumeAt, hashed + Int.random(in: 1...1_500_000, using: &random))
                    bytes[hashed..<end].withUnsafeBytes { writer.hashOnly($0) }
                    hashed = end
                }
                bodies.append((bytes, file, path, writer, resumeAt))
            }
            // The bodies arrive interleaved, a chunk at a time, as a shard's transfers do.
            while let index = bodies.indices.filter({ bodies[$0].done < bodies[$0].bytes.count }).randomElement(using: &random) {
                let body = bodies[index]
                let end = min(body.bytes.count, body.done + Int.random(in: 1...1_500_000, using: &random))
                let error = body.bytes[body.done..<end].withUnsafeBytes { body.writer.append($0, to: body.file, at: UInt64(body.done)) }
                #expect(error == nil, "seed \(seed)")
                bodies[index].done = end
                #expect(body.writer.pending < BufferPool.bufferSize, "seed \(seed)")
                if Int.random(in: 0..<8, using: &random) == 0 {
                    #expect(body.writer.flush() == nil, "seed \(seed)")
                    #expect(body.writer.pending == 0, "seed \(seed)")
                }
            }
            for body in bodies {
                #expect(body.writer.flush() == nil, "seed \(seed)")
                #expect(SHA256.hex(body.writer.finish()) == SHA256.hex(SHA256.digest(body.bytes)),
                        "seed \(seed), round \(round): the digest of \(body.bytes.count) bytes differs")
                #expect(try Data(contentsOf: URL(fileURLWithPath: body.path)) == Data(body.bytes),
                        "seed \(seed), round \(round): the file of \(body.bytes.count) bytes differs")
            }
        }
        #expect(pool.waitForHashing(seconds: 30))
    }

    /// `max_rate`'s bucket: starts with a quarter second's worth, refills at the rate up to
    /// that, lets one chunk through into debt, then holds until the debt is paid.
    @Test func theRateBucketPacesAFeed() {
        let limiter = RateLimiter(bytesPerSecond: 1000, now: 100)
        let only = NSObject()
        #expect(limiter.burst == 250 && !limiter.exhausted)
        #expect(limiter.take(600, for: only))   // tokens left: a chunk may overdraw
        #expect(limiter.exhausted)
        #expect(!limiter.take(1, for: only))    // in debt: pause
        #expect(abs(limiter.secondsUntilAvailable() - 0.351) < 0.001)
        limiter.refill(now: 100.3)             // 300 bytes' worth: still 50 short
        #expect(limiter.exhausted)
        limiter.refill(now: 100.4)
        #expect(!limiter.exhausted && limiter.take(10, for: only))
        limiter.refill(now: 200)               // a long pause refills up to the burst only
        #expect(limiter.pool == 250)
        #expect(RateLimiter.bufferSize(for: 1024) == 16 * 1024)
        #expect(RateLimiter.bufferSize(for: 1 << 20) == 128 * 1024)
        #expect(RateLimiter.bufferSize(for: 1 << 30) == 512 * 1024)
    }

    /// Fairness: transfers that all want more than their share get equal parts, whichever
    /// takes first and however large its chunks; one that wants less than its share leaves
    /// the rest to the others (the feed still moves at its cap); the cap holds in all.
    /// Simulated in 10 ms ticks, each transfer taking whole chunks while it can.
    @Test func theRateIsSharedFairlyAndStillUsedWhole() {
        struct Member { let id = NSObject(); let chunk: Int; let wants: Double; var got = 0 }
        func simulate(_ members: inout [Member], seconds: Double, rate: UInt64) -> Double {
            let limiter = RateLimiter(bytesPerSecond: rate, now: 0)
            for member in members { limiter.join(member.id) }
            var now = 0.0
            var wanted = [Double](repeating: 0, count: members.count)
            while now < seconds {
                now += 0.01
                limiter.refill(now: now)
                for index in members.indices {  // the first member always goes first: the old bucket's unfairness
                    wanted[index] += members[index].wants * 0.01
                    while wanted[index] >= Double(members[index].chunk), limiter.take(members[index].chunk, for: members[index].id) {
                        members[index].got += members[index].chunk
                        wanted[index] -= Double(members[index].chunk)
                    }
                }
            }
            return Double(members.reduce(0) { $0 + $1.got }) / seconds
        }
        // Four hungry transfers, the first with big chunks: each gets a quarter of 4 MiB/s.
        var hungry = [Member(chunk: 256 << 10, wants: 1e9), Member(chunk: 16 << 10, wants: 1e9),
                      Member(chunk: 16 << 10, wants: 1e9), Member(chunk: 16 << 10, wants: 1e9)]
        // Over 60 s the cap may be exceeded only by the first burst and each one's last chunk.
        let seconds = 60.0
        let total = simulate(&hungry, seconds: seconds, rate: 4 << 20)
        let slack = (Double(1 << 20) + Double(hungry.reduce(0) { $0 + $1.chunk })) / seconds
        #expect(total <= Double(4 << 20) + slack, "the cap: \(total)")
        for member in hungry {
            let rate = Double(member.got) / seconds
            #expect(abs(rate - Double(1 << 20)) < Double(1 << 20) * 0.05, "a share: \(rate) B/s of 1 MiB/s")
        }
        // One of two wants only 0.5 MiB/s: the other gets the rest, 3.5 MiB/s.
        let cap = Double(4 << 20), little = Double(512 << 10)
        var uneven = [Member(chunk: 16 << 10, wants: little), Member(chunk: 64 << 10, wants: 1e9)]
        let used = simulate(&uneven, seconds: seconds, rate: 4 << 20)
        #expect(used > cap * 0.95 && used <= cap + slack, "work-conserving: \(used)")
        let slow = Double(uneven[0].got) / seconds
        #expect(abs(slow - little) < little * 0.1, "the slow one got \(slow)")
    }

    /// `metered_budget` within a run: known sizes are reserved at start; a size that would
    /// not fit waits while others hold reservations, and is refused once none do; a
    /// transfer of unknown size stops when the budget is used, leaving others' reservations.
    @Test func theMeteredAllowanceAdmitsAndStops() {
        let allowance = MeteredAllowance(budget: 1000, usedToday: 100)
        #expect(allowance.admit(500) == .start)
        allowance.reserve(500)
        #expect(allowance.admit(500) == .wait)        // 100 + 500 + 500 > 1000, but the 500 may end smaller
        #expect(allowance.admit(nil) == .start)       // 100 + 500 < 1000
        #expect(allowance.take(300, reservations: true))   // unknown size: 400 used, 500 reserved
        #expect(allowance.take(200, reservations: true))   // 400 + 500 < 1000: through, though it crosses: 600 used
        #expect(!allowance.take(1, reservations: true))    // 600 + 500 >= 1000: stop
        #expect(allowance.take(400, reservations: false))  // the reserved transfer goes on: 1000 used
        allowance.release(500)
        #expect(allowance.admit(1) == .refuse && allowance.admit(nil) == .refuse)
        #expect(!allowance.take(1, reservations: false))
        #expect(MeteredAllowance(budget: 1000, usedToday: 0).admit(1001) == .refuse)
    }

    @Test(arguments: [(0.0, "0.0"), (0.04, "0.0"), (0.05, "0.1"), (1.25, "1.3"), (12.96, "13.0"), (-2.5, "-2.5"), (3_600.0, "3600.0")])
    func oneDecimal(_ value: Double, _ text: String) {
        #expect(DecimalText.oneDecimal(value) == text)
    }
}

/// Counts calls from any thread.
final class WakeupCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add() { lock.lock(); value += 1; lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return value }
}

