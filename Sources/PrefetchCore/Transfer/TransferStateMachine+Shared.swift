import Foundation

/// What a transfer's states share, kept beside the machine's state rather than in its cases:
/// what the transfer is for (`Inputs`), where the partial stands (`Partial`) and the
/// redirect chain (`RedirectChain`). Each outlives every exchange: a redirect, a body not
/// written, a pause or a failure keep them.
extension TransferStateMachine {
    /// What the transfer is for: the same in every state.
    struct Inputs {
        let url: ResourceURL
        /// The partial it was given began at another of the resource's URLs (SPEC §8): it
        /// resumes only with a `sha256`, without `If-Range`.
        let partialAtAnotherURL: Bool
        let size: UInt64?
        let sha256: String?
        /// The transfer's `encoding` mode (§7's resumable rule reads it).
        let encoding: EncodingMode
        /// With `decode`, the content codings offered (`ContentCodings.offered`).
        let offered: [String]
        let cachedValidators: Validators?
        /// The partial state.db recorded for this resource, if any.
        let recordedPartial: PartialState?
        /// The most bytes the file may have (`size`, else `max_size`, else the global cap),
        /// and how a failure names it.
        let cap: UInt64
        let capName: String

        /// Whether the cached copy can be revalidated (it has a validator to send).
        var canRevalidate: Bool { cachedValidators.map { $0.etag != nil || $0.lastModified != nil } == true }

        init(url: ResourceURL, size: UInt64?, maxSize: UInt64?, globalCap: UInt64, sha256: String?, encoding: EncodingMode,
             offered: [String], cachedValidators: Validators?, partial: PartialState?, partialAtAnotherURL: Bool) {
            self.url = url
            self.partialAtAnotherURL = partialAtAnotherURL
            self.size = size
            self.sha256 = sha256
            self.encoding = encoding
            self.offered = encoding == .decode ? offered : []
            self.cachedValidators = cachedValidators
            recordedPartial = partial
            if let size {
                cap = size
                capName = "size \(size) bytes"
            } else if let maxSize, maxSize < globalCap {
                cap = maxSize
                capName = "max_size \(ByteSize.format(maxSize))"
            } else {
                cap = globalCap
                capName = "the global max_size \(ByteSize.format(globalCap))"
            }
        }
    }

    /// Where the partial stands: its bytes, how many of them are durable, the response that
    /// began them, whether state.db may hold its record.
    struct Partial {
        /// Bytes in the partial (written, or gathering in the writer's buffer).
        var offset: UInt64 = 0
        /// Where the current request's Range starts (0: the whole body).
        var requestedFrom: UInt64 = 0
        /// Bytes known to be on disk (after an fsync), as state.db records them.
        var syncedOffset: UInt64 = 0
        /// Counts the partial's restarts from zero: an fsync begun before one says nothing of
        /// the bytes written after it (`synced`).
        var epoch = 0
        /// What the response that began the partial's bytes said (§7's resumable rule).
        var response = ResponseFacts()
        /// The file's whole length, once a response says it.
        var expectedTotal: UInt64?
        /// Whether state.db may hold a partial record for this resource (to clear at the end).
        var recorded: Bool
        /// The validator guarding a resume's Range (If-Range), when the partial was resumed.
        var ifRange: String?

        /// Keeps the first `trusted` bytes of the partial state.db `recorded`, resumed with
        /// `ifRange`. One begun at another URL keeps no validators of its own (SPEC §8): the
        /// `sha256` checks the result, and the 206 that continues it gives the partial this
        /// URL's own.
        mutating func resume(_ trusted: UInt64, of recorded: PartialState, ifRange: String?, atAnotherURL: Bool) {
            self.ifRange = ifRange
            response = recorded.response
            if atAnotherURL {
                response.etag = nil
                response.lastModified = nil
            }
            offset = trusted
            requestedFrom = trusted
            // Durable for certain: what an fsync recorded, not more (the rest is trusted only in this boot).
            syncedOffset = min(trusted, recorded.syncedOffset)
        }

        /// The partial starts again from byte 0 (another version, or kept bytes unreadable).
        mutating func restartFromZero() {
            epoch += 1
            offset = 0
            requestedFrom = 0
            syncedOffset = 0
            response = ResponseFacts()
        }

        /// `offset` bytes of the partial as it was at `epoch`, written with these validators,
        /// were fsynced: whether the record may say so. False when the partial moved on since
        /// (another version, a restart) or the offset is not newer.
        mutating func synced(_ offset: UInt64, epoch: Int, validators: Validators) -> Bool {
            guard epoch == self.epoch, offset > syncedOffset, validators == response.validators, offset <= self.offset else { return false }
            syncedOffset = offset
            recorded = true
            return true
        }

        /// The partial's record with `offset` durable.
        func record(urlHash: String, syncedOffset offset: UInt64, validators: Validators?, total: UInt64??, bootID: String, inode: UInt64?,
                    at time: Instant) -> PartialState {
            PartialState(urlHash: urlHash, validators: validators ?? response.validators, totalLength: total ?? expectedTotal,
                         syncedOffset: offset, updatedAt: time, bootID: bootID, inode: inode, date: response.date,
                         acceptRangesNone: response.acceptRangesNone, contentEncoding: response.contentEncoding)
        }
    }

    /// The redirects followed by hand, from the first request on (FAULTS 18): the URL asked
    /// now, those asked before, how many.
    struct RedirectChain {
        private(set) var url: String
        private var visited: Set<String> = []
        private(set) var count = 0

        init(from url: String) {
            self.url = url
        }

        /// Moves on to `target`: nil, or why it is not followed (only http and https, at most
        /// `maxRedirects`, no loop).
        mutating func follow(_ target: String, maxRedirects: Int) -> String? {
            let parsed: ResourceURL
            do {
                parsed = try ResourceURL.parse(target)
            } catch {
                let scheme = target.split(separator: ":").first.map(String.init) ?? target
                return "redirect to \(scheme):// refused: only http and https are followed"
            }
            visited.insert(url)
            if visited.contains(parsed.text) { return "redirect loop at \(parsed.redacted)" }
            count += 1
            if count > maxRedirects { return "more than \(maxRedirects) redirects" }
            url = parsed.text
            return nil
        }
    }
}
