/// One answer to a delta's ranged request (SPEC §9 step 3), read as its bytes arrive: a
/// `206` of one part (`Content-Range`) or of many (`multipart/byteranges`, read strictly by
/// `ByteRangesReader`), each part starting and ending inside the ranges asked for, with the
/// file's complete length and the delta's strong validator; a `200` is the whole file. The
/// bytes go to `keep` (the caller writes those that fall in missing blocks; the rest are counted, not used). Pure:
/// the caller hands in the head and the body's pieces, and writes where it is told.
struct RangedAnswer {
    /// What the answer amounts to so far.
    enum Verdict: Equatable {
        case reading
        /// A 200: the whole file. Read (`readsWhole`), its body is the whole fetch, from its
        /// first byte; else the exchange is ended and the delta falls back.
        case whole
        /// A 206 that breaks the rules (`stale`: of another version), in words.
        case invalid(String)
        case stale(String)
        /// Another status: judged by the delta machine.
        case status(Int)
    }

    private let asked: [Range<UInt64>]
    private let length: UInt64
    /// The strong validator the delta's 206s carry (nil until the first one).
    private(set) var validator: String?
    private(set) var verdict = Verdict.reading
    /// The byte intervals of the file this answer brought.
    private(set) var received = ByteIntervals()
    private var multipart: ByteRangesReader?
    /// A single part's next offset and its end.
    private var single: (next: UInt64, end: UInt64)?
    private var ended = false
    private var headSeen = false
    /// A 200's body is read as the whole file (`readsWhole` at `take(head:)`): the bytes so
    /// far, and the length its head announced.
    private(set) var wholeBytes: UInt64 = 0
    private var wholeLength: UInt64?
    var readingWhole: Bool { verdict == .whole && wholeReading }
    private var wholeReading = false

    /// `asked`: the ranges requested; `validator`: the one earlier 206s of this delta carried.
    init(asked: [Range<UInt64>], length: UInt64, validator: String?) {
        self.asked = asked
        self.length = length
        self.validator = validator
    }

    /// The strong validator of a 206, as SPEC §7's If-Range rule has it (`ResumeRule`): its
    /// ETag when strong; with no ETag at all, its Last-Modified when that is a strong date.
    static func validator(of head: ResponseRules.Head) -> String? {
        ResumeRule.strongValidator(head.facts)
    }

    /// Takes the final head; false when the body is not to be read (the verdict says why).
    /// `readsWhole`: a 200's plain body (no content coding) is read as the whole file.
    mutating func take(head: ResponseRules.Head, readsWhole: Bool = false) -> Bool {
        headSeen = true
        switch head.status {
        case 206: break
        case 200:
            verdict = .whole
            let coded = head.contentEncoding.map { $0.lowercased() != "identity" } ?? false
            guard readsWhole, head.invalid == nil, !coded else { return false }
            wholeReading = true
            wholeLength = head.contentLength
            return true
        default:
            verdict = .status(head.status)
            return false
        }
        if let problem = head.invalid { return refuse(.invalid(problem)) }
        if let coding = head.contentEncoding, coding.lowercased() != "identity" { return refuse(.invalid("Content-Encoding: \(coding)")) }
        // Every 206 carries the same strong validator (SPEC §9): one without ties its bytes to no version.
        guard let carried = Self.validator(of: head) else { return refuse(.stale("a 206 without a strong ETag or Last-Modified")) }
        if let validator, carried != validator {
            return refuse(.stale("its validator \(carried) is not the earlier answers' \(validator)"))
        }
        validator = carried
        if let type = head.contentType, let boundary = ByteRangesReader.boundary(contentType: type) {
            multipart = ByteRangesReader(boundary: boundary)
            return true
        }
        if let type = head.contentType, type.lowercased().hasPrefix("multipart/") { return refuse(.invalid("Content-Type: \(type)")) }
        guard let range = ResponseRules.contentRange(head.contentRange) else {
            return refuse(.invalid("Content-Range \(head.contentRange ?? "(none)") is not a valid range"))
        }
        guard part(first: range.start, last: range.end, complete: range.total) else { return false }
        single = (range.start, range.end + 1)
        return true
    }

    /// Takes the next piece of the body; `keep(offset, bytes)` is told each piece of the file it
    /// brings (false: the answer is to be ended). False when the answer is to be ended (the verdict says why).
    mutating func take(body bytes: UnsafeRawBufferPointer, keep store: (UInt64, UnsafeRawBufferPointer) -> Bool) -> Bool {
        if readingWhole {
            let at = wholeBytes
            wholeBytes += UInt64(bytes.count)
            if let wholeLength, wholeBytes > wholeLength { return false }
            return keep(at, bytes, store)
        }
        guard verdict == .reading else { return false }
        if var reader = multipart {
            let events: [ByteRangesReader.Event]
            do { events = try reader.read(bytes) } catch { return refuse(.invalid(error.detail)) }
            multipart = reader
            for event in events {
                switch event {
                case .part(let first, let last, let complete):
                    guard part(first: first, last: last, complete: complete) else { return false }
                case .data(let offset, let data):
                    guard data.withUnsafeBytes({ keep(offset, $0, store) }) else { return false }
                case .end:
                    ended = true
                }
            }
            return true
        }
        guard let (next, end) = single else { return false }
        guard UInt64(bytes.count) <= end - next else { return refuse(.invalid("more bytes than its Content-Range says")) }
        single = (next + UInt64(bytes.count), end)
        if next + UInt64(bytes.count) == end { ended = true }
        return keep(next, bytes, store)
    }

    /// Whether a 200's body was read whole: as long as its head said, when it said.
    var wholeBodyComplete: Bool { readingWhole && wholeLength.map { $0 == wholeBytes } != false }

    /// The verdict once the exchange ended without a failure: a 206 must have been read whole.
    mutating func finish() -> Verdict {
        if verdict == .reading, !ended { verdict = .invalid(multipart == nil ? "the part ended early" : "the body ended inside a part") }
        return verdict
    }

    private mutating func part(first: UInt64, last: UInt64, complete: UInt64?) -> Bool {
        guard complete == length else {
            return refuse(.stale("its complete length \(complete.map(String.init) ?? "*") is not the control file's \(length)"))
        }
        let asked = self.asked
        guard asked.contains(where: { $0.contains(first) }), asked.contains(where: { $0.contains(last) }) else { return refuse(.invalid("a part \(first)-\(last) outside the ranges asked for")) }
        return true
    }

    private mutating func keep(_ offset: UInt64, _ bytes: UnsafeRawBufferPointer, _ store: (UInt64, UnsafeRawBufferPointer) -> Bool) -> Bool {
        guard !bytes.isEmpty else { return true }
        received.insert(offset..<(offset + UInt64(bytes.count)))
        return store(offset, bytes)
    }

    private mutating func refuse(_ verdict: Verdict) -> Bool {
        self.verdict = verdict
        return false
    }
}
