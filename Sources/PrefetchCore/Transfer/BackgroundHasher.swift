import Foundation

/// SHA-256 on a serial queue of its own, so hashing a large body overlaps receiving and
/// writing it. Each chunk is copied into one of a few reused buffers (no allocation, no
/// fresh pages per chunk); when all are in flight, `update` waits for the hasher, which
/// bounds the memory a fast network can pile up in front of a slow CPU. `finish` waits
/// for the queue.
final class BackgroundHasher: @unchecked Sendable {
    private let queue = DispatchQueue(label: "prefetch.sha256")
    private let hasher = SHA256()  // touched only on `queue`
    private static let bufferSize = 512 * 1024
    private static let maxBuffers = 48  // at most 24 MiB waiting to be hashed
    private let condition = NSCondition()
    private var free: [UnsafeMutableRawPointer] = []
    private var allocated = 0

    /// A buffer handed to the queue: owned by the block until it gives the buffer back.
    private struct Chunk: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
        let count: Int
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let count = min(Self.bufferSize, bytes.count - offset)
            let chunk = Chunk(pointer: takeBuffer(), count: count)
            chunk.pointer.copyMemory(from: base + offset, byteCount: count)
            queue.async { [self] in
                hasher.update(UnsafeRawBufferPointer(start: chunk.pointer, count: chunk.count))
                giveBack(chunk.pointer)
            }
            offset += count
        }
    }

    func finish() -> [UInt8] {
        queue.sync { hasher.finish() }
    }

    private func takeBuffer() -> UnsafeMutableRawPointer {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let buffer = free.popLast() { return buffer }
            if allocated < Self.maxBuffers {
                allocated += 1
                return UnsafeMutableRawPointer.allocate(byteCount: Self.bufferSize, alignment: 64)
            }
            condition.wait()
        }
    }

    private func giveBack(_ buffer: UnsafeMutableRawPointer) {
        condition.lock()
        free.append(buffer)
        condition.signal()
        condition.unlock()
    }

    deinit {
        // Every queued block holds `self`, so all buffers are back by now.
        for buffer in free { buffer.deallocate() }
    }
}
