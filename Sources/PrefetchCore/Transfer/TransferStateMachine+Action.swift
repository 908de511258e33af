import Foundation

/// What a transfer's state machine answers, and the words it shares with its caller: where
/// the transfer stands (`Phase`), the request it asks for (`Request`), why libcurl is held
/// (`Hold`), the one `Action` every event returns, and what a failure means now
/// (`afterFailure`).
extension TransferStateMachine {
    /// Where the transfer stands, as the engine reads it (`resendingCachedCopy` reads as
    /// `discarding`: a body not written).
    enum Phase: Sendable, Equatable {
        case queued, connecting, receiving, discarding, verifying, syncing, placed, fresh, paused, failed
    }

    /// Why the body's writer stopped libcurl (CURL_WRITEFUNC_PAUSE); libcurl hands the same
    /// bytes over again when the transfer goes on.
    enum Hold: Sendable, Equatable {
        /// Until state.db holds the partial's record (SPEC §5: before it holds 1 MiB, or
        /// before anything is appended to a partial resumed).
        case record
        /// Until the feed's `max_rate` bucket refills.
        case rate
        /// The feed's metered budget is used: the engine takes the transfer out, resumably.
        case budget
        /// The body would pass `max_cache_size` (SPEC §8): the engine pauses it, resumably.
        case cacheFull
    }

    /// The most of a body that is not written read to its end (`drop`); past it the exchange
    /// stops, and its connection with it. Error pages are a few hundred bytes (nginx's are
    /// under 600); 64 KiB costs less than a new connection even on a slow link.
    static let drainLimit: UInt64 = 64 * 1024

    /// What the next request asks for.
    struct Request: Sendable, Equatable {
        var url: String
        /// The manifest's headers go only to the resource's own origin.
        var sameOrigin: Bool
        /// `Range: bytes=N-` (0: none) and the If-Range guarding it.
        var rangeFrom: UInt64
        var ifRange: String?
        /// If-None-Match / If-Modified-Since of the cached copy (a revalidation).
        var revalidating: Validators?
    }

    /// What the caller does next: every event that answers returns one of these (each
    /// event's comment names the ones it may return). The notices of what the caller did
    /// (`wrote`, `held`, `released`, `recordTaken`, `resumeFailed`, `cannotWrite`) answer
    /// nothing.
    enum Action: Sendable, Equatable {
        /// Nothing to do: a header line taken, no bytes to resume, no pause (the file is
        /// complete, or the transfer is over), no news for the record, no hold to release.
        case nothing
        /// Keep the partial's first bytes and read them into the digest; `resumeFailed` when
        /// they cannot be read.
        case resume(from: UInt64)
        /// Send this request: the first, or the same again.
        case send(Request)
        /// The body that begins is written: after the bytes kept, or (`restart`) into an
        /// emptied partial from byte 0. `remaining`: the bytes still to come, when known.
        case writeBody(restart: Bool, remaining: UInt64?)
        /// The body that begins is not written (no 2xx; refused on its head: the failure is
        /// kept for the end; or the cached copy, resent whole to a revalidation).
        case discardBody
        /// Write the chunk.
        case write
        /// Take the chunk and throw it away: a small body that is not written (an error page, a
        /// redirect's page, up to `drainLimit` bytes) is read to its end, so the connection
        /// carries the next request (HTTP/1.1 keep-alive) instead of being closed under it.
        case drop
        /// Stop libcurl until the record is committed (`recordCommittedNow`).
        case holdForRecord
        /// Take nothing of the chunk or the header line: libcurl ends the exchange with a
        /// write error, and the end judges it (`ended`).
        case refuse
        /// The record is committed: libcurl, held for it, goes on.
        case unpause
        /// An fsync made more of the partial durable: its record may say so (`partialRecord`).
        case recordSynced
        /// Ask again at the new URL (already checked: scheme, loop, count).
        case follow(Request)
        /// The cached copy is current (a 304, or a 200 that is the copy): keep it, with these
        /// validators.
        case keepCachedCopy(Validators)
        /// Take the digest of the partial's bytes (`offset` of them), then `digested`.
        case digest
        /// The digest passed: fsync the file, then `fileSynced`.
        case fsync
        /// The file is durable: rename it into place, then `renamed`.
        case rename
        /// The file is in place: record it.
        case recordPlaced
        /// The transfer paused, resumably: take it out, and keep its partial if it can resume.
        case paused
        /// The transfer failed so (one that failed already keeps its first failure).
        case fail(TransferFailure)

        /// The failure, when the action is `.fail`.
        var failure: TransferFailure? { if case .fail(let failure) = self { failure } else { nil } }
    }

    /// What a failure means now (after `RetryDecision`).
    enum FailureAction: Sendable, Equatable {
        /// The disk is full: every transfer pauses; no attempt is counted.
        case pauseEverything
        /// Again within this run at `at`, keeping the partial's durable bytes when `keep`.
        case retry(at: Instant, wait: Int64, keep: PartialState?, discard: Bool)
        /// Failed for now; a later run may try again at `nextRetry`.
        case report(nextRetry: Instant?)
    }

    /// What a failure means, given the release's earlier `failures` and the feed's policy
    /// (SPEC §5). A retry keeps the partial's `durable` bytes (FAULTS 4; curl's --retry
    /// throws them away) unless the failure discards them. Not an event: the transfer is
    /// over when it is asked, and the engine asks it of failures from outside a transfer too.
    static func afterFailure(_ failure: TransferFailure, failures: Int, policy: RetryPolicy, durable: PartialState?, now: Instant,
                             using random: inout some RandomNumberGenerator) -> FailureAction {
        if failure.kind == .diskFull { return .pauseEverything }
        let decision = RetryDecision.after(failure, failures: failures + 1, policy: policy, now: now, using: &random)
        guard decision.inRun, let at = decision.nextRetry else { return .report(nextRetry: decision.nextRetry) }
        return .retry(at: at, wait: decision.wait, keep: failure.discardPartial ? nil : durable, discard: failure.discardPartial)
    }
}
