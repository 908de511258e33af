import Foundation

/// A large body on its way into the partial: gathered into 512 KiB buffers, each written
/// when full; with `hashing`, each written buffer is then hashed in order on a lane of its
/// own of the run's hashing threads (`HashingThreads`), so hashing overlaps receiving.
///
/// libcurl hands the body over 16 KiB at a time; gathering it turns 32 writes (and 32
/// hand-offs to the hashing queue) into one of each. Buffers come from a shared pool and go
/// back once hashed; when every buffer is in flight, the next full one waits, which bounds
/// the memory a fast network can pile up in front of a slow CPU. Without hashing one buffer
/// is reused. Bytes still in the current buffer are not in the file yet (`pending`):
/// `flush` writes them, before any fsync that records the partial's length and before
/// verification.
final class BodyWriter: @unchecked Sendable {
    /// Whether written buffers are hashed (a `sha256` to check).
    let hashing: Bool
    /// Made on first use: a body written without hashing needs neither.
    private lazy var lane = HashingThreads.Lane()
    private lazy var hasher = SHA256()  // touched only by the lane's blocks, then by `finish` once they ran
    /// A zsync resource's SHA-1 (SPEC §9), fed beside the SHA-256 (nil: none wanted).
    private let sha1: SHA1?

    // The buffer being filled, and where its first byte goes in the file (engine's thread).
    private var current: UnsafeMutableRawPointer?
    private var filled = 0
    private var position: UInt64 = 0
    private var file: FileDescriptor?

    /// A buffer handed to the queue: owned by the block until it gives the buffer back.
    private struct Chunk: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let count: Int
    }

    /// The run's buffers, and its hashing threads.
    private let pool: BufferPool

    /// `body-write` (crash tests).
    private let faults: FaultPoints

    init(pool: BufferPool, hashing: Bool = true, sha1: Bool = false, faults: FaultPoints = .none) {
        self.pool = pool
        self.sha1 = sha1 && hashing ? SHA1() : nil
        self.faults = faults
        self.hashing = hashing
        pool.join()
    }

    deinit {
        // Every queued block holds `self`, so all its buffers are back by now.
        if let current { pool.giveBack(current) }
        pool.leave()
    }

    /// Bytes received but not written to the file yet.
    var pending: Int { filled }

    /// Hashes bytes already in the partial (resuming): nothing is written.
    func hashOnly(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let count = min(BufferPool.bufferSize, bytes.count - done)
            let pointer = pool.take()
            pointer.copyMemory(from: base + done, byteCount: count)
            dispatch(Chunk(pointer: pointer, count: count))
            done += count
        }
    }

    /// Takes body bytes that belong at `offset` of `file`. A full buffer is written, then
    /// queued for hashing; the error of a failed write is returned, and then none of these
    /// bytes count as taken: those still in the buffer are dropped from `pending` (earlier
    /// buffers of them may be in the file, beyond what the caller counts, which only ever
    /// trusts less than the file holds).
    func append(_ bytes: UnsafeRawBufferPointer, to file: FileDescriptor, at offset: UInt64) -> Errno? {
        guard let base = bytes.baseAddress else { return nil }
        var done = 0
        while done < bytes.count {
            if current == nil {
                current = pool.take(beyondLimit: filled == 0 && self.file == nil)
                filled = 0
                position = offset + UInt64(done)
                self.file = file
            }
            let count = min(BufferPool.bufferSize - filled, bytes.count - done)
            (current! + filled).copyMemory(from: base + done, byteCount: count)
            filled += count
            done += count
            if filled == BufferPool.bufferSize, let error = flush() {
                filled -= count
                return error
            }
        }
        return nil
    }

    /// Writes what the current buffer holds and queues it for hashing.
    func flush() -> Errno? {
        guard let buffer = current, filled > 0, let file else { return nil }
        if let injected = faults.reach(.bodyWrite) { return injected }
        if case .failure(let error) = file.write(UnsafeRawBufferPointer(start: buffer, count: filled), at: position) {
            return error
        }
        if hashing {
            dispatch(Chunk(pointer: buffer, count: filled))
            current = nil  // the queue gives it back once hashed
        }
        position += UInt64(filled)
        filled = 0
        return nil
    }

    private func dispatch(_ chunk: Chunk) {
        pool.hashing.async(lane) { [self, pool] in
            hasher.update(UnsafeRawBufferPointer(start: chunk.pointer, count: chunk.count))
            sha1?.update(UnsafeRawBufferPointer(start: chunk.pointer, count: chunk.count))
            pool.giveBack(chunk.pointer)
        }
    }

    /// The digest of everything hashed: call after the last `flush`.
    func finish() -> [UInt8] {
        pool.hashing.drain(lane)
        return hasher.finish()
    }

    /// The SHA-1 of everything hashed, when one was wanted: call after `finish`.
    func finishSHA1() -> String? {
        sha1?.finishHex()
    }
}

/// The buffers bodies are gathered and hashed in, shared by every `BodyWriter` of a run (the
/// engine owns one, so no process-global state): at most
/// `maxBuffers` × `bufferSize` (8 MiB) in flight however many transfers run, plus one per
/// transfer that starts receiving when none is free (a new transfer never waits for
/// buffers that only other transfers' progress would free). They are reused while any
/// writer exists and freed when the last one goes (a daemon keeps none between passes).
final class BufferPool: @unchecked Sendable {
    static let bufferSize = 512 * 1024
    /// Where every writer's hashing runs.
    let hashing = HashingThreads()

    /// Waits until no writer has hashing queued, or `seconds` pass; whether none has. A
    /// transfer that fails drops its writer without waiting for the digest, and the blocks
    /// already queued still run: the engine waits for them before it returns, so none is
    /// still inside libcrypto when the process exits and OpenSSL's exit handler frees its
    /// tables (that crashed a run with SIGSEGV).
    @discardableResult
    func waitForHashing(seconds: Double = .infinity) -> Bool {
        hashing.waitForAll(seconds: seconds)
    }
    private static let maxBuffers = 16
    private let condition = NSCondition()
    private var free: [UnsafeMutableRawPointer] = []
    private var allocated = 0
    private var users = 0

    func join() {
        condition.lock()
        users += 1
        condition.unlock()
    }

    func leave() {
        condition.lock()
        users -= 1
        if users == 0, free.count == allocated {
            for buffer in free { buffer.deallocate() }
            free = []
            allocated = 0
        }
        condition.unlock()
    }

    func take(beyondLimit: Bool = false) -> UnsafeMutableRawPointer {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let buffer = free.popLast() { return buffer }
            if allocated < Self.maxBuffers || beyondLimit {
                allocated += 1
                return UnsafeMutableRawPointer.allocate(byteCount: Self.bufferSize, alignment: 64)
            }
            condition.wait()
        }
    }

    func giveBack(_ buffer: UnsafeMutableRawPointer) {
        condition.lock()
        if allocated > Self.maxBuffers {
            buffer.deallocate()
            allocated -= 1
        } else {
            free.append(buffer)
            condition.signal()
        }
        condition.unlock()
    }
}
