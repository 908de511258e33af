import Foundation
import Testing
@testable import PrefetchCore

/// A transfer's life, event by event, without a network: header lines, body chunks, the
/// exchange's end, the digest, the fsync and the rename are told to the machine as libcurl
/// and the disk would report them.
@Suite struct TransferStateMachineTests {
    typealias Machine = TransferStateMachine
    static let url = try! ResourceURL.parse("https://e.com/a.bin")
    static let mib: UInt64 = 1 << 20

    static func machine(size: UInt64? = nil, maxSize: UInt64? = nil, sha256: String? = nil, cached: Validators? = nil,
                        partial: PartialState? = nil) -> Machine {
        Machine(url: url, size: size, maxSize: maxSize, globalCap: 1 << 40, sha256: sha256, cachedValidators: cached, partial: partial)
    }

    static func partial(_ synced: UInt64, etag: String? = "\"v1\"", total: UInt64? = nil) -> PartialState {
        PartialState(urlHash: "h", validators: Validators(etag: etag), totalLength: total, syncedOffset: synced, updatedAt: 0,
                     bootID: "b", inode: 1)
    }

    /// Tells the machine a response's head, line by line, and the blank line that ends it
    /// (as libcurl does).
    static func respond(_ machine: inout Machine, _ lines: String...) {
        for line in lines { machine.headerLine(line) }
        if lines.last?.trimmingCharacters(in: .newlines).isEmpty != true { machine.headerLine("\r\n") }
    }

    /// Writes `count` bytes as libcurl would hand them over (chunks of at most 64 KiB), the
    /// record committed when the machine holds for it; returns the chunk actions seen.
    @discardableResult
    static func receive(_ machine: inout Machine, _ count: UInt64, commitRecords: Bool = true) -> [Machine.Action] {
        var seen: [Machine.Action] = []
        var left = count
        if machine.awaitsBody { _ = machine.bodyBegins() }
        while left > 0 {
            let chunk = Int(min(left, 65_536))
            let action = machine.bodyChunk(chunk)
            seen.append(action)
            switch action {
            case .write:
                machine.wrote(chunk)
                left -= UInt64(chunk)
            case .holdForRecord:
                guard commitRecords else { return seen }
                machine.recordTaken()
                let letGo = machine.recordCommittedNow()
                #expect(letGo == .unpause)
            case .drop:
                #expect(machine.offset == 0 || machine.phase != .receiving, "a dropped chunk is never written")
                left -= UInt64(chunk)
            case .refuse:
                return seen
            default:
                Issue.record("not a chunk's action: \(action)")
                return seen
            }
        }
        return seen
    }

    static func end(_ machine: inout Machine, cleanly: Bool = true, tls: Bool = false, redirect: String? = nil,
                    maxRedirects: Int = 5) -> Machine.Action {
        machine.ended(cleanly: cleanly, tlsError: tls, describe: { cleanly ? "ok" : "connection reset" }, redirectURL: { redirect },
                      maxRedirects: maxRedirects, now: Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test func aFreshDownloadIsVerifiedSyncedAndPlaced() {
        var m = Self.machine()
        let request = m.request()
        #expect(request == .send(Machine.Request(url: "https://e.com/a.bin", sameOrigin: true, rangeFrom: 0, ifRange: nil, revalidating: nil)))
        #expect(m.phase == .connecting)
        Self.respond(&m, "HTTP/1.1 200 OK\r\n", "Content-Length: 1000\r\n", "ETag: \"v2\"\r\n", "\r\n")
        let begun = m.bodyBegins()
        #expect(begun == .writeBody(restart: false, remaining: 1000))
        #expect(!m.needsRecord, "a body under 1 MiB is not recorded before it is placed")
        #expect(Self.receive(&m, 1000).allSatisfy { $0 == .write })
        let end = Self.end(&m)
        #expect(end == .digest)
        #expect(m.phase == .verifying)
        let paused = m.pause("stopped")
        #expect(paused == .nothing, "a complete file is not paused")
        let mismatch = m.digested("abc")
        #expect(mismatch == .fsync && m.phase == .syncing)
        let synced = m.fileSynced(.success(()))
        let renamed = m.renamed(nil)
        #expect(synced == .rename && renamed == .recordPlaced)
        #expect(m.phase == .placed && m.partialValidators == Validators(etag: "\"v2\"") && m.offset == 1000)
    }

    /// SPEC §5: a body that may hold more than 1 MiB is recorded before it does; the chunk
    /// that would cross is held, and handed over again once the record is committed.
    @Test func aLargeBodyWaitsForItsRecordAtOneMebibyte() {
        var m = Self.machine()
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 3145728")
        _ = m.bodyBegins()
        #expect(m.needsRecord)
        let actions = Self.receive(&m, 3 * Self.mib, commitRecords: false)
        #expect(actions.last == .holdForRecord && m.offset == Self.mib && m.hold == .record)
        m.recordTaken()
        #expect(!m.needsRecord)
        let letGo = m.recordCommittedNow()
        #expect(letGo == .unpause && m.hold == nil)
        #expect(Self.receive(&m, 2 * Self.mib).allSatisfy { $0 == .write })
        #expect(m.offset == 3 * Self.mib)
    }

    /// FAULTS 2, 7: a partial with a strong ETag resumes with If-Range; nothing is appended
    /// before its new record is committed.
    @Test func aResumeAsksForTheRestAndAppendsOnlyAfterTheRecord() {
        var m = Self.machine(partial: Self.partial(400, total: 1000))
        let kept = m.resume(trusted: 500)
        #expect(kept == .resume(from: 500))
        #expect(m.syncedOffset == 400, "only what an fsync recorded is durable for certain")
        guard case .send(let request) = m.request() else { Issue.record("no request"); return }
        #expect(request.rangeFrom == 500 && request.ifRange == "\"v1\"" && request.revalidating == nil)
        Self.respond(&m, "HTTP/1.1 206 Partial Content", "Content-Range: bytes 500-999/1000", "ETag: \"v1\"")
        let begun = m.bodyBegins()
        #expect(begun == .writeBody(restart: false, remaining: 500))
        let first = m.bodyChunk(1)
        #expect(first == .holdForRecord)
        m.recordTaken()
        _ = m.recordCommittedNow()
        Self.receive(&m, 500)
        let end = Self.end(&m)
        #expect(end == .digest && m.offset == 1000)
    }

    /// FAULTS 5: a 200 to a ranged request is the whole file: the partial starts again from
    /// zero, and an fsync begun before says nothing of the new bytes.
    @Test func aWholeBodyToARangedRequestRestartsThePartial() {
        var m = Self.machine(partial: Self.partial(500))
        _ = m.resume(trusted: 500)
        _ = m.request()
        let before = m.epoch
        Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 800", "ETag: \"v1\"")
        let begun = m.bodyBegins()
        #expect(begun == .writeBody(restart: true, remaining: 800))
        #expect(m.offset == 0 && m.syncedOffset == 0 && m.epoch == before + 1)
        Self.receive(&m, 600)
        let old = m.synced(500, epoch: before, validators: Validators(etag: "\"v1\""))
        #expect(old == .nothing, "an fsync of the old bytes")
        let new = m.synced(600, epoch: m.epoch, validators: Validators(etag: "\"v1\""))
        #expect(new == .recordSynced)
        #expect(m.syncedOffset == 600)
    }

    /// FAULTS 8: a weak ETag never guards a resume; with no sha256 to check, the file starts
    /// again (and a cached copy is revalidated instead).
    @Test func aWeakETagIsNotResumed() {
        var m = Self.machine(cached: Validators(etag: "\"c\""), partial: Self.partial(500, etag: "W/\"v1\""))
        let kept = m.resume(trusted: 500)
        #expect(kept == .nothing)
        guard case .send(let request) = m.request() else { Issue.record("no request"); return }
        #expect(request.rangeFrom == 0 && request.revalidating == Validators(etag: "\"c\""))
        var checked = Self.machine(sha256: "x", partial: Self.partial(500, etag: "W/\"v1\""))
        let checkedKept = checked.resume(trusted: 500)
        #expect(checkedKept == .resume(from: 500), "a sha256 checks the result instead")
        guard case .send(let checkedRequest) = checked.request() else { Issue.record("no request"); return }
        #expect(checkedRequest.ifRange == nil && checkedRequest.rangeFrom == 500)
    }

    /// SPEC §7: a 200 to a ranged request tells where the refused resume began (the run's
    /// line says so); the partial it begins takes that response's facts, and whether it can
    /// resume follows §7's rule on them (a weak ETag and a Last-Modified equal to the Date:
    /// only with a sha256; Accept-Ranges: none: never).
    @Test func theResponseThatBeginsAPartialDecidesWhetherItCanResume() {
        var m = Self.machine(partial: Self.partial(500))
        _ = m.resume(trusted: 500)
        #expect(m.resumeVerdict == .resume(ifRange: "\"v1\""))
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 800", "ETag: W/\"v2\"", "Last-Modified: Tue, 01 Dec 2026 10:00:00 GMT",
                     "Date: Tue, 01 Dec 2026 10:00:00 GMT", "Accept-Ranges: bytes")
        _ = m.bodyBegins()
        #expect(m.refusedResume == 500)
        #expect(m.lastResponse == ResponseFacts(etag: "W/\"v2\"", lastModified: "Tue, 01 Dec 2026 10:00:00 GMT",
                                                date: "Tue, 01 Dec 2026 10:00:00 GMT"))
        #expect(m.resumeVerdict == .restart(.weakETag))
        #expect(m.partialRecord(urlHash: "h", syncedOffset: 0, bootID: "b", inode: 1, at: 0).date == "Tue, 01 Dec 2026 10:00:00 GMT")
        var checked = Self.machine(sha256: "x")
        _ = checked.request()
        Self.respond(&checked, "HTTP/1.1 200 OK", "Content-Length: 800", "ETag: \"v3\"", "Accept-Ranges: none")
        _ = checked.bodyBegins()
        #expect(checked.refusedResume == 0 && checked.resumeVerdict == .restart(.acceptRangesNone))
        #expect(checked.partialRecord(urlHash: "h", syncedOffset: 0, bootID: "b", inode: 1, at: 0).acceptRangesNone)
    }

    @Test func aRevalidationAnsweredWith304KeepsTheCopy() {
        var m = Self.machine(cached: Validators(etag: "\"c\""))
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 304 Not Modified", "ETag: \"c2\"")
        let end = Self.end(&m)
        #expect(end == .keepCachedCopy(Validators(etag: "\"c2\"")))
        #expect(m.phase == .fresh && m.isOver)
    }

    /// A 200 to a revalidation that carries the cached copy's own strong ETag is that copy
    /// (RFC 9110 §8.8.1; a stale Squid entry asked with If-None-Match alone answers so): its
    /// body is not written, the copy is kept as for a 304, however the connection ends.
    @Test(arguments: [true, false]) func a200CarryingTheCachedCopyKeepsIt(cleanly: Bool) {
        var m = Self.machine(cached: Validators(etag: "\"c\"", lastModified: "Sun, 29 Nov 2026 10:00:00 GMT"))
        guard case .send(let request) = m.request() else { Issue.record("no request"); return }
        #expect(request.revalidating != nil)
        Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 5000", "ETag: \"c\"")
        let begun = m.bodyBegins()
        #expect(begun == .discardBody)
        let chunk = m.bodyChunk(5000)
        #expect(chunk == .refuse && m.offset == 0, "a byte of the copy was written")
        let end = Self.end(&m, cleanly: cleanly)
        #expect(end == .keepCachedCopy(Validators(etag: "\"c\"", lastModified: "Sun, 29 Nov 2026 10:00:00 GMT")))
        #expect(m.phase == .fresh && m.isOver)
    }

    /// Not the copy: another ETag, a weak one (RFC 9110 §8.8.1: only a strong validator says
    /// the bytes are the same), or no revalidation at all — each body is written and placed.
    @Test(arguments: [("\"c\"", "\"c2\"", true), ("W/\"c\"", "W/\"c\"", true), ("\"c\"", "W/\"c\"", true), ("\"c\"", "\"c\"", false)])
    func a200ThatIsNotTheCachedCopyIsPlaced(cached: String, sent: String, revalidating: Bool) {
        var m = Self.machine(cached: revalidating ? Validators(etag: cached) : nil)
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 1000", "ETag: \(sent)")
        #expect(Self.receive(&m, 1000).allSatisfy { $0 == .write })
        let end = Self.end(&m)
        #expect(end == .digest && m.offset == 1000)
    }

    /// FAULTS 18: redirects are followed by hand — bounded, loops refused, only http(s),
    /// the manifest's headers only to the resource's own origin.
    @Test func redirectsAreFollowedByHand() {
        var m = Self.machine()
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 302 Found", "Location: https://cdn.example/a.bin")
        _ = m.bodyBegins()
        guard case .follow(let next) = Self.end(&m, redirect: "https://cdn.example/a.bin") else {
            Issue.record("not followed")
            return
        }
        #expect(next.url == "https://cdn.example/a.bin" && !next.sameOrigin && m.phase == .connecting && m.redirects == 1)
        Self.respond(&m, "HTTP/1.1 302 Found")
        guard case .fail(let loop) = Self.end(&m, redirect: "https://e.com/a.bin") else {
            Issue.record("a loop was followed")
            return
        }
        #expect(loop.kind == .permanent && loop.message.hasPrefix("redirect loop"))

        var scheme = Self.machine()
        _ = scheme.request()
        Self.respond(&scheme, "HTTP/1.1 301 Moved")
        let refused = Self.end(&scheme, redirect: "ftp://e.com/a.bin")
        #expect(refused.failure?.message == "redirect to ftp:// refused: only http and https are followed")

        var many = Self.machine()
        _ = many.request()
        for hop in 1...3 {
            Self.respond(&many, "HTTP/1.1 307 Temporary Redirect")
            let action = Self.end(&many, redirect: "https://e.com/\(hop).bin", maxRedirects: 2)
            if hop <= 2 {
                guard case .send(let again) = many.request() else { Issue.record("no request"); return }
                #expect(action.failure == nil && again.sameOrigin)
            } else {
                #expect(action.failure?.message == "more than 2 redirects")
            }
        }
    }

    /// FAULTS 13: the cap is enforced as bytes arrive, whatever the head announced.
    @Test func aBodyOverItsCapIsCutOffAndDiscarded() {
        var m = Self.machine(maxSize: 100_000)
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 200 OK")  // chunked: no length announced
        _ = m.bodyBegins()
        let actions = Self.receive(&m, 200_000)
        #expect(actions.last == .refuse && m.offset == 65_536)
        #expect(m.failure?.kind == .mismatch && m.failure?.discardPartial == true)
        let end = Self.end(&m, cleanly: false)
        #expect(end.failure == m.failure, "the end keeps the first failure")
    }

    /// FAULTS 14: an error page is never written. A short one is read to its end (dropped),
    /// so its connection carries the next request; a longer one stops the exchange.
    @Test func anErrorBodyIsNotWritten() {
        var m = Self.machine()
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 404 Not Found", "Content-Length: 50")
        let begun = m.bodyBegins()
        #expect(begun == .discardBody)
        let chunk = m.bodyChunk(50)
        #expect(chunk == .drop && m.offset == 0)
        let failure = Self.end(&m, cleanly: true).failure
        #expect(failure?.kind == .permanent && failure?.message == "HTTP 404")
    }

    /// An error page is read to its end up to `drainLimit` bytes (each redirect's page
    /// counted alone), never written; past the limit the exchange stops, judged as before.
    @Test(arguments: [(500, "HTTP 500", TransferFailure.Kind.transient), (404, "HTTP 404", .permanent)])
    func anErrorBodyIsReadToItsEndOnlyWhenShort(status: Int, message: String, kind: TransferFailure.Kind) {
        let limit = TransferStateMachine.drainLimit
        var m = Self.machine()
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 302 Found", "Location: https://e.com/b.bin", "Content-Length: \(limit)")
        #expect(m.bodyBegins() == .discardBody)
        #expect(m.bodyChunk(Int(limit)) == .drop, "a redirect's page within the limit")
        guard case .follow = Self.end(&m, redirect: "https://e.com/b.bin") else { Issue.record("not followed"); return }
        Self.respond(&m, "HTTP/1.1 \(status) Whatever", "Content-Length: \(2 * limit)")
        #expect(m.bodyBegins() == .discardBody)
        #expect(m.bodyChunk(Int(limit) - 1) == .drop, "the next response's page is counted from zero")
        #expect(m.bodyChunk(1) == .drop)
        #expect(m.bodyChunk(1) == .refuse, "a byte past the limit")
        #expect(m.offset == 0 && m.dropped == limit)
        for cleanly in [true, false] {
            var ended = m
            let failure = Self.end(&ended, cleanly: cleanly).failure
            #expect(failure?.kind == kind && failure?.message == message, "cleanly \(cleanly)")
        }
    }

    /// Only a body that is not written is dropped: a 2xx refused on its head (too long for
    /// `size`) and the cached copy resent whole stop the exchange at their first byte.
    @Test func onlyAnUnwrittenErrorPageIsDropped() {
        var refused = Self.machine(size: 10)
        _ = refused.request()
        Self.respond(&refused, "HTTP/1.1 200 OK", "Content-Length: 20")
        #expect(refused.bodyBegins() == .discardBody)
        #expect(refused.bodyChunk(20) == .refuse)
        var copy = Self.machine(cached: Validators(etag: "\"c\""))
        _ = copy.request()
        Self.respond(&copy, "HTTP/1.1 200 OK", "Content-Length: 20", "ETag: \"c\"")
        #expect(copy.bodyBegins() == .discardBody)
        #expect(copy.bodyChunk(20) == .refuse)
    }

    @Test func aFullDiskPausesEverythingAndCountsNoAttempt() {
        var m = Self.machine()
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 10")
        _ = m.bodyBegins()
        m.cannotWrite(Errno(ENOSPC))
        #expect(m.failure?.kind == .diskFull && m.failure?.message == "disk full")
        var random = SplitMix64(seed: 1)
        #expect(Machine.afterFailure(m.failure!, failures: 0, policy: RetryPolicy(), durable: nil, now: 0, using: &random) == .pauseEverything)
    }

    @Test func aDigestMismatchFailsAndDiscards() {
        var m = Self.machine(sha256: "good")
        _ = m.request()
        Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 10")
        Self.receive(&m, 10)
        let end = Self.end(&m)
        #expect(end == .digest)
        let failure = m.digested("bad").failure
        #expect(failure?.kind == .mismatch && failure?.discardPartial == true && m.phase == .failed)
    }

    /// A failed fsync of the complete file: retried, and none of the partial trusted again
    /// (the kernel may have dropped its dirty pages). A failed rename: a folder in the way is
    /// permanent, a full disk pauses the run, another error is retried; the partial goes.
    @Test func aFailedFsyncOrRenameIsAFailure() {
        let cases: [(PlacementError?, Errno?, TransferFailure.Kind)] = [
            (nil, Errno(EIO), .transient),
            (.unsafePath("a folder is in the way"), nil, .permanent),
            (.failed("cache/t/a", Errno(ENOSPC)), nil, .diskFull),
            (.failed("cache/t/a", Errno(EDQUOT)), nil, .diskFull),
            (.failed("cache/t/a", Errno(EIO)), nil, .transient),
        ]
        for (renameError, fsyncError, kind) in cases {
            var m = Self.machine()
            _ = m.request()
            Self.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 10")
            Self.receive(&m, 10)
            _ = Self.end(&m)
            _ = m.digested("d")
            let failure: TransferFailure?
            if let fsyncError {
                failure = m.fileSynced(.failure(fsyncError)).failure
            } else {
                #expect(m.fileSynced(.success(())) == .rename)
                failure = m.renamed(renameError).failure
            }
            #expect(failure?.kind == kind && failure?.discardPartial == true, "\(String(describing: renameError)) \(String(describing: fsyncError))")
            #expect(m.phase == .failed)
        }
    }

    /// SPEC §5: a retry within the run keeps the durable bytes, unless the failure discards them.
    @Test func aRetryKeepsTheDurableBytes() {
        var random = SplitMix64(seed: 2)
        let kept = Self.partial(300)
        let cut = TransferFailure(kind: .transient, message: "cut", retryAfter: 5, discardPartial: false, httpStatus: 200)
        #expect(Machine.afterFailure(cut, failures: 0, policy: RetryPolicy(), durable: kept, now: 0, using: &random)
            == .retry(at: Instant(seconds: 5), wait: 5, keep: kept, discard: false))
        var wrong = cut
        wrong.discardPartial = true
        #expect(Machine.afterFailure(wrong, failures: 0, policy: RetryPolicy(), durable: kept, now: 0, using: &random)
            == .retry(at: Instant(seconds: 5), wait: 5, keep: nil, discard: true))
        let gone = TransferFailure(kind: .permanent, message: "HTTP 404", retryAfter: nil, discardPartial: false, httpStatus: 404)
        #expect(Machine.afterFailure(gone, failures: 0, policy: RetryPolicy(), durable: kept, now: 0, using: &random) == .report(nextRetry: nil))
        var slow = cut
        slow.retryAfter = 600
        #expect(Machine.afterFailure(slow, failures: 0, policy: RetryPolicy(), durable: kept, now: 0, using: &random)
            == .report(nextRetry: Instant(seconds: 600)), "a long wait is left to a later run")
    }

    /// Seeded random exchanges — statuses, lengths, ranges, validators, chunk sizes, holds,
    /// pauses and write failures in any order — against the promises of SPEC §3 and §5:
    /// nothing is written beyond the cap, nothing past 1 MiB (or appended to a resumed
    /// partial) before the record, nothing of a body that is not 2xx; a file is placed only
    /// after its digest, its fsync and its rename, and only when it holds what the response
    /// said; after the end, nothing more.
    @Test func randomExchangesKeepThePromises() {
        let seed = UInt64(ProcessInfo.processInfo.environment["PREFETCH_TRANSFER_SEED"] ?? "") ?? UInt64.random(in: 1...1_000_000)
        print("randomExchangesKeepThePromises: PREFETCH_TRANSFER_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        func pick<T>(_ values: [T]) -> T { values[Int(random.next(below: UInt64(values.count)))] }
        for exchange in 0..<3_000 {
            let context = "seed \(seed) exchange \(exchange)"
            let total = pick([0, 10, 70_000, Self.mib, Self.mib + 1, 3 * Self.mib])
            let size: UInt64? = pick([nil, nil, total, total + 1])
            let resumeAt: UInt64 = pick([0, 0, 1, 5, total / 2, total, total + 3])
            let partial = resumeAt > 0 ? Self.partial(pick([0, resumeAt / 2, resumeAt]), etag: pick(["\"v1\"", "W/\"v1\"", nil])) : nil
            var m = Self.machine(size: size, maxSize: pick([nil, 100_000]), sha256: pick([nil, "d"]), cached: pick([nil, Validators(etag: "\"c\"")]),
                                 partial: partial)
            let resumed = m.resume(trusted: partial == nil ? nil : resumeAt)
            #expect(resumed == .nothing || resumed == .resume(from: resumeAt), "\(context)")
            let kept: UInt64 = if case .resume(let from) = resumed { from } else { 0 }
            guard case .send(var request) = m.request() else { Issue.record("\(context): no request"); continue }
            var written: UInt64 = kept
            var writtenThisBody: UInt64 = 0
            var recordedBeforeGrowth = true
            var ended = false
            var steps = 0
            while !ended, steps < 200 {
                steps += 1
                let status = pick([200, 200, 206, 206, 304, 302, 404, 416, 503])
                m.headerLine("HTTP/1.1 \(status) X")
                if status == 206 {
                    let start = pick([request.rangeFrom, request.rangeFrom, 0, request.rangeFrom + 1])
                    let end = max(start, total) - (total > start ? 1 : 0)
                    m.headerLine("Content-Range: bytes \(start)-\(end)/\(pick(["\(total)", "*", "\(total + 1)"]))")
                }
                if Bool.random(using: &random) { m.headerLine("Content-Length: \(pick([total, total - min(total, request.rangeFrom), 5]))") }
                let etag = pick(["\"v1\"", "\"v2\"", "W/\"v1\"", "\"c\""])
                m.headerLine("ETag: \(etag)")
                if status == 302 { m.headerLine("Location: \(pick(["https://e.com/b.bin", "https://e.com/a.bin", "ftp://x/y"]))") }
                var body = pick([UInt64(0), 1, 40_000, total, 2 * Self.mib])
                writtenThisBody = 0
                var paused = false
                let phaseBefore = m.phase
                if body > 0 || Bool.random(using: &random) {
                    let action = m.bodyBegins()
                    if case .writeBody(let restart, _) = action, restart { written = 0 }
                    if case .writeBody = action {
                        #expect((200..<300).contains(m.head.status), "\(context): a \(m.head.status) body is written")
                    }
                }
                while body > 0 {
                    if random.next(below: 40) == 0, m.pause("stopped") == .paused { paused = true; break }
                    if random.next(below: 60) == 0 { m.cannotWrite(Errno(pick([ENOSPC, EIO]))) }
                    let chunk = Int(min(body, UInt64(1 + random.next(below: 300_000))))
                    switch m.bodyChunk(chunk) {
                    case .write:
                        if m.offset + UInt64(chunk) > PartialTrust.recordBefore || m.requestedFrom > 0 {
                            if !m.recordCommitted, m.partialRecorded || m.requestedFrom > 0 || (m.expectedTotal ?? .max) > PartialTrust.recordBefore {
                                recordedBeforeGrowth = false
                            }
                        }
                        if Bool.random(using: &random) { m.held(.rate); m.released() }
                        m.wrote(chunk)
                        written += UInt64(chunk)
                        writtenThisBody += UInt64(chunk)
                        body -= UInt64(chunk)
                        #expect(m.offset <= m.cap, "\(context): \(m.offset) bytes over the cap \(m.cap)")
                    case .holdForRecord:
                        #expect(m.needsRecord || m.recordRequested, "\(context): held for a record nobody will take")
                        m.recordTaken()
                        _ = m.recordCommittedNow()
                    case .drop:
                        #expect(!(200..<300).contains(m.head.status), "\(context): a \(m.head.status) body dropped")
                        #expect(m.dropped <= TransferStateMachine.drainLimit, "\(context): \(m.dropped) bytes dropped")
                        body -= UInt64(chunk)
                    case .refuse:
                        body = 0
                    default:
                        Issue.record("\(context): not a chunk's action")
                        body = 0
                    }
                    if random.next(below: 8) == 0 { _ = m.synced(min(m.offset, UInt64(random.next(below: m.offset + 1))), epoch: m.epoch, validators: m.partialValidators) }
                }
                #expect(m.offset == written, "\(context): the machine counts \(m.offset), \(written) were written")
                #expect(m.syncedOffset <= m.offset, "\(context): more durable than written")
                if paused {
                    #expect(m.phase == .paused && phaseBefore != .verifying)
                    break
                }
                let cleanly = random.next(below: 5) != 0
                if m.bodyBeginsAtEnd(cleanly: cleanly), case .writeBody(true, _) = m.bodyBegins() { written = 0 }
                switch Self.end(&m, cleanly: cleanly, redirect: nil) {
                case .follow(let next):
                    request = next
                    #expect(status == 302 && m.phase == .connecting, "\(context)")
                case .keepCachedCopy:
                    // A 304, or a 200 carrying the cached copy's own strong ETag.
                    #expect((status == 304 || (status == 200 && etag == "\"c\"")) && request.revalidating != nil && m.phase == .fresh, "\(context)")
                    ended = true
                case .fail:
                    #expect(m.phase == .failed, "\(context)")
                    let after = m.bodyChunk(1)
                    #expect(after == .refuse, "\(context): written to after the end")
                    ended = true
                case .digest:
                    #expect((200..<300).contains(status) || status == 416, "\(context): \(status) completes")
                    if let size { #expect(m.offset == size, "\(context): placed \(m.offset) bytes, size \(size)") }
                    if status == 200, writtenThisBody > 0 || m.offset > 0 { #expect(m.offset == writtenThisBody, "\(context): a 200 was appended") }
                    let digest = pick(["d", "e"])
                    if m.digested(digest) == .fsync {
                        #expect(m.phase == .syncing)
                        if m.fileSynced(.success(())) == .rename, m.renamed(nil) == .recordPlaced { #expect(m.phase == .placed) }
                    }
                    ended = true
                default:
                    Issue.record("\(context): not an end's action")
                    ended = true
                }
            }
            #expect(recordedBeforeGrowth, "\(context): grew past 1 MiB (or appended to a resumed partial) before its record")
        }
    }
}

extension TransferStateMachine {
    @discardableResult
    mutating func headerLine(_ line: String) -> Bool {
        var copy = line
        let action: Action = copy.withUTF8 { headerLine(UnsafeRawBufferPointer($0)) }
        return action != .refuse
    }
}
