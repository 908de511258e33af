/// Feeds libyaml a manifest from an open file in chunks, so a large manifest is never held
/// whole (a million resources are hundreds of MB of YAML). Each chunk ends after a line feed
/// (no UTF-8 sequence or CR LF is ever split) and is checked with `YAMLText`'s byte rules
/// before libyaml sees it; no more than `limit` bytes are read.
///
/// Built for the clean case only: any bad byte, a read error, a file longer than `limit`, a
/// line longer than the buffer, makes it `failed` and ends libyaml's input.
/// `FeedDecoder.decodeClean` then returns nil, and its caller reads the file whole and
/// decodes it through the tree (`FeedDecoder.decode`), which finds and reports the problem
/// at its line and column.
final class YAMLFileInput {
    /// The bytes read at once, and the longest line a chunk can hold.
    static let capacity = 1 << 18

    private let file: FileDescriptor
    private let limit: Int
    private let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: YAMLFileInput.capacity)
    /// `buffer[start..<checked]`: checked, not yet handed to libyaml; `buffer[checked..<filled]`:
    /// read, waiting for the line feed that ends its chunk.
    private var start = 0, checked = 0, filled = 0
    private var total = 0
    private var atEnd = false
    /// True once the input stopped short: the parse that read it proves nothing.
    private(set) var failed = false

    init(_ file: FileDescriptor, limit: Int) {
        self.file = file
        self.limit = limit
    }

    deinit {
        buffer.deallocate()
    }

    /// Copies up to `size` checked bytes into `out`: their count, 0 at the end of the file,
    /// nil when the input failed.
    func read(into out: UnsafeMutablePointer<UInt8>, size: Int) -> Int? {
        if start == checked, !refill() { return failed ? nil : 0 }
        let count = min(size, checked - start)
        out.update(from: buffer + start, count: count)
        start += count
        return count
    }

    /// Reads until a chunk is checked; false at the end of the file or on failure.
    private func refill() -> Bool {
        guard !failed else { return false }
        // What waits for its line feed moves to the front.
        let waiting = filled - checked
        if waiting > 0, checked > 0 { (buffer).update(from: buffer + checked, count: waiting) }
        start = 0
        checked = 0
        filled = waiting
        while true {
            if atEnd {
                guard filled > 0 else { return false }
                return check(upTo: filled)
            }
            guard filled < Self.capacity else { return fail() }  // a line longer than the buffer
            guard case .success(let count) = file.read(into: UnsafeMutableRawBufferPointer(start: buffer + filled, count: Self.capacity - filled)) else {
                return fail()
            }
            if count == 0 {
                atEnd = true
                continue
            }
            let before = filled
            filled += count
            total += count
            if total > limit { return fail() }
            var end = filled
            while end > before, buffer[end - 1] != 0x0A { end -= 1 }
            if end > before { return check(upTo: end) }
        }
    }

    private func check(upTo end: Int) -> Bool {
        if !YAMLText.isClean(UnsafeBufferPointer(start: buffer, count: end)) { return fail() }
        checked = end
        return true
    }

    private func fail() -> Bool {
        failed = true
        return false
    }
}
