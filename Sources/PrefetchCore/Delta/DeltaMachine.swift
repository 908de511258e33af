/// One resource's delta (SPEC §9 "Deltas (zsync)") as a pure state machine beside the
/// transfer machine: what the control file, the scan, the ranged answers and the final check
/// said goes in; what to do next comes out. The driver (`DeltaTransfer`) does the I/O.
///
/// Whose trouble: the delta's own (a control file missing, refused, unusable, stale or
/// unreachable at another origin; a ranged answer invalid, stale, a 416, a 200, or bringing
/// nothing; a mismatch at the end; little to reuse) ends in `.wholeFetch`, which costs no
/// attempt; the resource's (a connection failure, a 5xx or 429 from the resource URL's own
/// origin) in `.fail`, judged as any failure, with no whole fetch in that pass.
struct DeltaMachine: Equatable {
    /// What the delta knows before it asks anything.
    struct Start: Equatable {
        /// The cached copy is current and due for revalidation: the control file stands in
        /// for it, asked conditionally when `conditional`.
        var revalidates: Bool
        var conditional: Bool
        /// The cached copy's SHA-1 (nil: no copy).
        var copySHA1: String?
        /// A delta partial is kept with its control file (SPEC §9 "Resume"): the control file
        /// is asked again conditionally on its validators, and a 304 keeps it.
        var resumes = false
        /// The delta moved here from another of the resource's URLs (SPEC §8), where its
        /// control file had this SHA-1: it goes on here only with a control file of the same
        /// (SPEC §9 step 3), else the resource is fetched whole from here.
        var movedWith: String? = nil
    }

    enum Phase: Equatable { case control, scanning, ranges, checking, ended }

    /// How the control file was answered.
    enum ControlAnswer: Equatable {
        case notModified
        /// A control file read: its `SHA-1`.
        case file(sha1: String)
        /// A body that is no usable control file (the reader's words).
        case unusable(String)
        /// Another status (`ownOrigin`: the control file is on the resource URL's origin).
        case status(Int, ownOrigin: Bool)
        /// No answer: a connection, TLS or timeout failure, in words.
        case failed(String, ownOrigin: Bool)
    }

    /// How a ranged request was answered.
    enum RangesAnswer: Equatable {
        /// Blocks arrived: `missing` bytes are still missing.
        case brought(missing: UInt64)
        /// A 206 that brought none of the missing bytes.
        case nothing
        /// A 200 whose body could not be used (encoded, or over the metered budget).
        case whole
        /// A 200 whose body was read into the partial from its first byte: it is the whole fetch.
        case wholeBody
        /// A 206 whose parts or framing break the rules (SPEC §9 step 3), in words.
        case invalid(String)
        /// A 206 of another version (ETag, complete length), in words.
        case stale(String)
        case status(Int)
        case failed(String)
    }

    enum Event: Equatable {
        case control(ControlAnswer)
        /// The seeds were scanned: `missing` bytes of `length` are still missing. `copyMatches`:
        /// the copy's SHA-1, unknown before and read beside the scan, is the control file's.
        case scanned(missing: UInt64, length: UInt64, copyMatches: Bool = false)
        case ranges(RangesAnswer)
        /// The assembled file checked: nil when its SHA-1 (and `sha256`, `size`) match, else why not.
        case checked(mismatch: String?)
    }

    enum Action: Equatable {
        case askControl(conditional: Bool)
        case scan
        case askRanges
        case check
        /// A 200 answered a range request (the delta's trouble, `ranges ignored`): its body,
        /// read from its first byte, is the whole fetch, judged as any.
        case checkWhole
        /// The copy is current (a 304, or the control file's SHA-1 is the copy's).
        case fresh
        case place
        /// The delta's trouble: the resource is fetched whole in this pass (SPEC §9).
        case wholeFetch(DeltaRefusal)
        /// The resource's trouble, judged as any failure; no whole fetch in this pass.
        case fail(String, status: Int?)
    }

    private(set) var phase = Phase.control
    /// Whether the file being checked is a 200's whole body (judged as a whole fetch).
    private(set) var whole = false
    let start: Start

    init(_ start: Start) {
        self.start = start
    }

    /// The first action.
    var first: Action { .askControl(conditional: start.resumes || (start.revalidates && start.conditional)) }

    mutating func handle(_ event: Event) -> Action {
        let action = next(event)
        switch action {
        case .scan: phase = .scanning
        case .askRanges: phase = .ranges
        case .check: phase = .checking
        case .checkWhole:
            phase = .checking
            whole = true
        case .askControl: phase = .control
        case .fresh, .place, .wholeFetch, .fail: phase = .ended
        }
        return action
    }

    private func next(_ event: Event) -> Action {
        switch (phase, event) {
        case (.control, .control(let answer)): return afterControl(answer)
        case (.scanning, .scanned(let missing, let length, let copyMatches)):
            // The copy is the control file's version (as a control file of the copy's SHA-1, above).
            if copyMatches { return start.revalidates ? .fresh : .wholeFetch(.controlStale("its SHA-1 is the cached copy's")) }
            if missing == 0 { return .check }
            // The 90 % rule: more than 90 % still missing is one plain GET of the whole file.
            if missing * 10 > length * 9 { return .wholeFetch(.littleInCommon(missing: missing, length: length)) }
            return .askRanges
        case (.ranges, .ranges(let answer)): return afterRanges(answer)
        case (.checking, .checked(let mismatch)):
            // A whole body that fails its checks is the resource's failure, as any whole fetch's.
            if whole { return mismatch.map { .fail($0, status: 200) } ?? .place }
            return mismatch.map { .wholeFetch(.mismatch($0)) } ?? .place
        default:
            preconditionFailure("delta: \(event) in phase \(phase)")
        }
    }

    private func afterControl(_ answer: ControlAnswer) -> Action {
        switch answer {
        case .notModified:
            if start.resumes { return .scan }  // the kept control file stands: the delta goes on
            return start.revalidates && start.conditional ? .fresh : .wholeFetch(.controlUnusable("HTTP 304 to a request without conditions"))
        case .file(let sha1):
            if let movedWith = start.movedWith, sha1 != movedWith {
                return .wholeFetch(.mirrorDiffers("its control file's SHA-1 is \(sha1), the delta began with \(movedWith)"))
            }
            guard sha1 != start.copySHA1 else {
                // The copy is the control file's version: current at a release; for a changed entry, stale.
                return start.revalidates ? .fresh : .wholeFetch(.controlStale("its SHA-1 is the cached copy's"))
            }
            return .scan
        case .unusable(let detail): return .wholeFetch(.controlUnusable(detail))
        case .status(let status, let ownOrigin):
            if [404, 410].contains(status) { return .wholeFetch(.controlMissing(status)) }
            if [401, 403].contains(status) { return .wholeFetch(.controlRefused(status)) }
            if !ownOrigin { return .wholeFetch(.controlUnreachable("HTTP \(status)")) }
            if status >= 500 || status == 429 { return .fail("control file: HTTP \(status)", status: status) }
            return .wholeFetch(.controlUnusable("HTTP \(status)"))
        case .failed(let detail, let ownOrigin):
            return ownOrigin ? .fail(detail, status: nil) : .wholeFetch(.controlUnreachable(detail))
        }
    }

    private func afterRanges(_ answer: RangesAnswer) -> Action {
        switch answer {
        case .brought(let missing): return missing == 0 ? .check : .askRanges
        case .nothing: return .wholeFetch(.rangesBroughtNothing)
        case .whole: return .wholeFetch(.rangesIgnored)
        case .wholeBody: return .checkWhole
        case .invalid(let detail): return .wholeFetch(.rangesInvalid(detail))
        case .stale(let detail): return .wholeFetch(.rangesStale(detail))
        case .status(let status):
            if status == 416 { return .wholeFetch(.rangeNotSatisfiable) }
            if status >= 500 || status == 429 { return .fail("HTTP \(status)", status: status) }
            // Any other status a whole fetch meets too, and judges as its own.
            return .wholeFetch(.rangesRefused(status))
        case .failed(let detail): return .fail(detail, status: nil)
        }
    }
}

/// Why a delta was not used (SPEC §9 "Whose trouble"): the run's `delta not used: REASON`
/// line, and `run --json`'s `{"type":"delta"}` event. The reasons are a short fixed list
/// (docs/commands.md), each with its detail.
enum DeltaRefusal: Equatable {
    case controlMissing(Int)
    case controlRefused(Int)
    case controlUnusable(String)
    case controlStale(String)
    case controlUnreachable(String)
    case littleInCommon(missing: UInt64, length: UInt64)
    case rangesIgnored
    case rangesInvalid(String)
    case rangesStale(String)
    case rangeNotSatisfiable
    case rangesRefused(Int)
    case rangesBroughtNothing
    case mismatch(String)
    case mirrorDiffers(String)
    case noMD4

    /// The fixed reason.
    var reason: String {
        switch self {
        case .controlMissing: return "control file missing"
        case .controlRefused: return "control file refused"
        case .controlUnusable: return "control file unusable"
        case .controlStale: return "control file stale"
        case .controlUnreachable: return "control file unreachable"
        case .littleInCommon: return "little in common"
        case .rangesIgnored: return "ranges ignored"
        case .rangesInvalid: return "ranges invalid"
        case .rangesStale: return "ranges stale"
        case .rangeNotSatisfiable: return "range not satisfiable"
        case .rangesRefused: return "ranges refused"
        case .rangesBroughtNothing: return "ranges brought nothing"
        case .mismatch: return "mismatch"
        case .mirrorDiffers: return "mirror differs"
        case .noMD4: return "no MD4"
        }
    }

    /// Its detail.
    var detail: String {
        switch self {
        case .controlMissing(let status), .controlRefused(let status), .rangesRefused(let status): return "HTTP \(status)"
        case .controlUnusable(let detail), .controlStale(let detail), .controlUnreachable(let detail), .rangesInvalid(let detail),
             .rangesStale(let detail), .mismatch(let detail), .mirrorDiffers(let detail):
            return detail
        case .littleInCommon(let missing, let length):
            return "\(ByteSize.format(missing)) of \(ByteSize.format(length)) missing after the scan (over 90 %)"
        case .rangesIgnored: return "HTTP 200 to a range request"
        case .rangeNotSatisfiable: return "HTTP 416"
        case .rangesBroughtNothing: return "a ranged answer brought none of the missing bytes"
        case .noMD4: return "libcrypto's legacy provider (MD4) could not be loaded"
        }
    }
}
