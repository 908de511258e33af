import Foundation

/// A delta's blocks: the seeds scanned into the delta partial (a kept partial first, then the
/// cached copy), the missing ones fetched as ranges, and the partial kept for resume — fsynced
/// every 2 s while it grows, its control file beside it, their record in state.db.
extension DeltaTransfer {
    /// How often a growing delta partial is fsynced and its record written (SPEC §7's partials).
    static let syncInterval: TimeInterval = 2

    /// `what` failed with `error`, in words; a want of room marks the disk full.
    mutating func failure(_ what: String, _ error: Errno) -> String {
        if error.code == ENOSPC || error.code == EDQUOT { diskFull = true }
        return "\(what): \(error)"
    }

    /// The delta partial an earlier run (or an earlier URL of this pass) kept, with its control
    /// file, when both are still there and read; else nil (and any leftovers are removed).
    mutating func keptPartial() -> (record: DeltaPartialRecord, control: ZsyncControl, bytes: [UInt8])? {
        guard let record = try? state.deltaPartial(job.key) else { return nil }
        if cache.partialFile(deltaName) != nil,
           let bytes = cache.readPartialFile(controlName, limit: ZsyncControl.headerLimit + Int(clamping: 20 * ((config.maxSize.bytes + 255) / 256))),
           let read = try? ZsyncControl(parsing: bytes, maxSize: config.maxSize.bytes, size: job.resource.size), read.sha1 == record.sha1 {
            return (record, read, bytes)
        }
        cache.removePartial(deltaName)
        cache.removePartial(controlName)
        try? state.deleteDeltaPartial(job.key)
        return nil
    }

    /// Keeps the delta partial for the next run: fsynced, its control file beside it, recorded.
    /// False when there is none to keep (or it cannot be kept).
    mutating func keep() -> Bool {
        guard let file = partial, file.sync().isSuccess else { return false }
        return recordPartial()
    }

    /// Records the delta partial as it is now (what `plan` and `status` show of it).
    @discardableResult
    func recordPartial() -> Bool {
        guard let control, let controlURL else { return false }
        let record = DeltaPartialRecord(controlURL: controlURL.text, validators: controlValidators ?? Validators(), sha1: control.sha1,
                                        ifRange: validator, missing: blocks?.missingBytes ?? control.length, length: control.length)
        return (try? state.recordDeltaPartial(job.key, record, at: Instant(Date()))) != nil
    }

    // MARK: The scan

    /// Opens the delta partial (a kept one as it is, else a new one, `Length` bytes long) and
    /// writes into it every block the seeds hold: the kept partial itself first (no offset in
    /// it trusted: its blocks are found again), then the cached copy. Nil when interrupted or
    /// the partial cannot be written.
    mutating func scan(_ seed: FileDescriptor?) -> (missing: UInt64, length: UInt64)? {
        guard let control, let controlURL else { return nil }
        let opened = kept != nil ? cache.openDeltaPartial(deltaName).map { file in file.truncate(to: control.length).map { file } }
            ?? .failure(Errno(ENOENT)) : cache.createDeltaPartial(deltaName, length: control.length)
        switch opened {
        case .failure(let error):
            writeError = failure("cannot write \(cache.path)/\(CacheLayout.metaEntry("partial/" + deltaName))", error)
            return nil
        case .success(let file): partial = file
        }
        // Its control file beside it, and its record, before any block is written (SPEC §9 "Resume").
        guard cache.writePartialFile(controlName, controlBytes),
              (try? state.recordDeltaPartial(job.key, DeltaPartialRecord(controlURL: controlURL.text, validators: controlValidators ?? Validators(),
                                                                       sha1: control.sha1, ifRange: validator, missing: control.length,
                                                                       length: control.length),
                                             at: Instant(Date()))) != nil else {
            writeError = "cannot keep the control file beside the delta partial"
            return nil
        }
        var blocks = DeltaBlocks(blockSize: control.blockSize, length: control.length)
        guard let file = partial, var matcher = BlockMatcher(control) else { return nil }
        for source in [kept != nil ? file : nil, seed].compactMap({ $0 }) where !blocks.isComplete {
            guard case .success = source.seek(to: 0) else { continue }
            var failed: Errno?
            let faults = self.faults
            matcher.scan(fill: { buffer in (try? source.read(into: buffer).get()) ?? 0 }, block: { index, bytes in
                guard failed == nil, !blocks.have[index] else { return }
                let at = UInt64(index) * UInt64(control.blockSize)
                if let error = CacheFolder.write(bytes, at: at, pieces: [at..<(at + UInt64(bytes.count))], to: file, faults: faults) {
                    failed = error
                    return
                }
                blocks.markHad(index)
            }, keepGoing: {
                if failed != nil { return false }
                if let reason = keepGoing() { interrupted = reason; return false }
                return true
            })
            if let failed { writeError = failure("cannot write the delta partial", failed); return nil }
            if interrupted != nil { return nil }
        }
        reused = control.length - blocks.missingBytes
        self.blocks = blocks
        recordPartial()
        return (blocks.missingBytes, control.length)
    }

    // MARK: The ranges

    mutating func askRanges() -> DeltaMachine.RangesAnswer {
        guard var blocks, let control, let file = partial else { return .failed("no delta partial") }
        let asked = blocks.nextRequest
        let headers: [String]
        do { headers = try job.resource.headerLines(environment: environment) } catch { return .failed(error.message) }
        let request = RangeFetcher.Request(url: job.url, headers: headers, ranges: asked, ifRange: validator,
                                           timeouts: SingleExchange.Timeouts(job.feed.limits, config: config), pace: pace)
        var answer = RangedAnswer(asked: asked, length: control.length, validator: validator)
        var headTaken = false
        var failedWrite: (what: String, error: Errno)?
        var lastSync = Date()
        let faults = self.faults, readsWhole = budget == nil
        let fetcher = RangeFetcher(config: config)
        let outcome = fetcher.fetch(request, keepGoing: keepGoing) { bytes, head in
            if !headTaken {
                headTaken = true
                // A 200 is the whole fetch from its first byte (SPEC §9), unless a metered budget was only for the ranges.
                guard answer.take(head: head, readsWhole: readsWhole) else { return false }
                if answer.readingWhole, case .failure(let error) = file.truncate(to: 0) {
                    failedWrite = ("cannot write the delta partial", error)
                    return false
                }
            }
            let whole = answer.readingWhole
            return answer.take(body: bytes) { offset, data in
                let pieces = whole ? [offset..<(offset + UInt64(data.count))] : blocks.usable(offset: offset, count: data.count)
                if let error = CacheFolder.write(data, at: offset, pieces: pieces, to: file, faults: faults) {
                    failedWrite = ("cannot write the delta partial", error)
                    return false
                }
                // What arrived is durable every 2 s: after a crash, a delta fetches again at most what came since.
                if Date().timeIntervalSince(lastSync) >= Self.syncInterval {
                    lastSync = Date()
                    if case .failure(let error) = file.sync() {
                        failedWrite = ("cannot fsync the delta partial", error)
                        return false
                    }
                }
                return true
            }
        }
        wireBytes += fetcher.bodyBytes
        trouble = fetcher.trouble
        if case .answered(let head) = outcome { retryAfter = head.retryAfter }
        if let failedWrite {
            writeError = failure(failedWrite.what, failedWrite.error)
            return .failed(writeError ?? "")
        }
        switch outcome {
        case .failed(let message): return .failed(message)
        case .interrupted(let reason):
            interrupted = reason
            return .failed(reason)
        case .answered(let head):
            if !headTaken { _ = answer.take(head: head) }
            if head.status == 206 { rangeValidators = Validators(etag: head.etag.flatMap { ResponseRules.isWeakTag($0) ? nil : $0 }, lastModified: head.lastModified) }
            if answer.readingWhole {
                wholeBody = answer.wholeBytes
                rangeValidators = Validators(etag: head.etag, lastModified: head.lastModified)
                return answer.wholeBodyComplete ? .wholeBody
                    : .failed("the body ended after \(answer.wholeBytes) of \(head.contentLength.map(String.init) ?? "?") bytes")
            }
        case .refused:
            if answer.readingWhole { return .failed("more body bytes than its Content-Length") }
        }
        switch answer.finish() {
        case .whole: return .whole
        case .invalid(let detail): return .invalid(detail)
        case .stale(let detail): return .stale(detail)
        case .status(let status): return .status(status)
        case .reading:
            validator = answer.validator
            let brought = blocks.take(answer.received)
            self.blocks = blocks
            recordPartial()
            return brought == 0 ? .nothing : .brought(missing: blocks.missingBytes)
        }
    }
}
