import Foundation

/// Why a transfer failed, and what that means for retries (SPEC §5).
struct TransferFailure: Error, Equatable {
    enum Kind: Equatable {
        /// Network error, 5xx, 429, short body: retried with backoff; the partial is kept.
        case transient
        /// 404, 410, 401, 403, TLS, bad redirects: failed until the next release.
        case permanent
        /// size or sha256 mismatch, over the cap: counts as an attempt, not retried in this run.
        case mismatch
        /// The disk is full: pause everything, count no attempt.
        case diskFull
    }

    var kind: Kind
    var message: String
    /// Seconds the server asked to wait (Retry-After), if any.
    var retryAfter: Int64?
    /// Whether the partial must be thrown away.
    var discardPartial: Bool
    var httpStatus: Int?
    /// Why this failure holds the whole origin (SPEC §6: "HTTP 503", "connection refused"),
    /// or nil: a failure of this resource alone.
    var holdsOrigin: String? = nil
    /// The response was invalid (SPEC §7: its framing, its range, the size of its head or
    /// its Location): it says nothing of the origin, so it neither holds nor clears a hold.
    var invalidResponse = false

    /// libcurl itself failed (an option refused, a handle not made, the multi handle):
    /// transient, the partial kept.
    static func libcurl(_ error: any Error) -> TransferFailure {
        TransferFailure(kind: .transient, message: "libcurl: \((error as? CurlError)?.message ?? "\(error)")", retryAfter: nil,
                        discardPartial: false, httpStatus: nil)
    }
}

/// The failures a transfer's own events end it with (`TransferStateMachine`).
extension TransferFailure {
    /// libcurl refused the response itself (not HTTP, a negative length, a header line too
    /// long for it): an invalid response (SPEC §7).
    static func malformed(_ words: String, status: Int) -> TransferFailure {
        TransferFailure(kind: .transient, message: "invalid response: \(words)", retryAfter: nil, discardPartial: false,
                        httpStatus: status == 0 ? nil : status, invalidResponse: true)
    }

    /// No whole response came: the connection failed before one, or inside its head. A TLS
    /// failure is permanent; any other holds the origin when libcurl says it could not be
    /// reached (`connectionFailure`, SPEC §6).
    static func noResponse(_ words: String, tls: Bool, connectionFailure: String?) -> TransferFailure {
        TransferFailure(kind: tls ? .permanent : .transient, message: tls ? "TLS: \(words)" : words, retryAfter: nil, discardPartial: false,
                        httpStatus: nil, holdsOrigin: tls ? nil : connectionFailure)
    }

    /// A local failure (a file that cannot be written or read): transient, the partial kept.
    static func local(_ words: String) -> TransferFailure {
        TransferFailure(kind: .transient, message: words, retryAfter: nil, discardPartial: false, httpStatus: nil)
    }

    /// A redirect that is not followed (FAULTS 18).
    static func redirectRefused(_ why: String, status: Int) -> TransferFailure {
        TransferFailure(kind: .permanent, message: why, retryAfter: nil, discardPartial: false, httpStatus: status)
    }

    /// The body passed the file's cap as it arrived (FAULTS 13); a decoded body is held to
    /// it as it is decoded: a decompression bomb stops there.
    static func overCap(_ capName: String, decoded: Bool, status: Int) -> TransferFailure {
        TransferFailure(kind: .mismatch, message: "\(decoded ? "the decoded body" : "the body") is longer than \(capName); cut off and discarded",
                        retryAfter: nil, discardPartial: true, httpStatus: status)
    }

    /// A 206 sent more than its Content-Range's bytes, up to `end` (as the end would judge it,
    /// `ResponseRules.complete`, before the bytes land).
    static func pastRange(end: UInt64, status: Int) -> TransferFailure {
        TransferFailure(kind: .transient, message: "the 206 sent more than the bytes to \(end) of its Content-Range", retryAfter: nil,
                        discardPartial: true, httpStatus: status)
    }

    /// The partial could not be created or written; a full disk pauses everything.
    static func cannotWrite(_ error: Errno, creating: Bool, status: Int) -> TransferFailure {
        let full = error.code == ENOSPC || error.code == EDQUOT
        return TransferFailure(kind: full ? .diskFull : .transient,
                               message: full ? "disk full" : "cannot \(creating ? "open" : "write") the partial: \(error)",
                               retryAfter: nil, discardPartial: false, httpStatus: status == 0 ? nil : status)
    }

    /// An fsync of the partial failed: transient, and the partial is not trusted again.
    static func fsyncFailed(_ error: Errno) -> TransferFailure {
        TransferFailure(kind: .transient, message: "fsync: \(error)", retryAfter: nil, discardPartial: true, httpStatus: nil)
    }

    /// The rename into place failed: a path the cache cannot hold is not fetched again this
    /// release, a full disk pauses the run, any other error is retried. The partial goes.
    static func notPlaced(_ error: PlacementError) -> TransferFailure {
        switch error {
        case .unsafePath(let message):
            return TransferFailure(kind: .permanent, message: message, retryAfter: nil, discardPartial: true, httpStatus: nil)
        case .failed(_, let cause):
            let full = cause.code == ENOSPC || cause.code == EDQUOT
            return TransferFailure(kind: full ? .diskFull : .transient, message: full ? "disk full" : error.description, retryAfter: nil,
                                   discardPartial: true, httpStatus: nil)
        }
    }
}
