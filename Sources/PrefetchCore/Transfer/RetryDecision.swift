import Foundation

/// What a failed attempt means for the resource (SPEC §5): failed for the release, or a
/// retry at a time — within this run when the wait is short, else by a later run. Pure:
/// the engine records it, and the planner simulation uses the same decision.
struct RetryDecision: Equatable {
    /// No retry in this release (404, 410, 401, 403, TLS, redirect loops; or attempts exhausted).
    let permanent: Bool
    /// When the next attempt may start (nil: none in this release).
    let nextRetry: Instant?
    /// Seconds until then.
    let wait: Int64
    /// The retry happens within this run (a transient failure whose wait is at most 60 s).
    let inRun: Bool

    /// The longest wait a run sleeps through; longer ones are left to a later run.
    static let inRunLimit: Int64 = 60

    /// After the `failures`-th consecutive failure of the release (this one included).
    static func after(_ failure: TransferFailure, failures: Int, policy: RetryPolicy, now: Instant,
                      using random: inout some RandomNumberGenerator) -> RetryDecision {
        switch failure.kind {
        case .diskFull:  // counts no attempt: the run pauses, the next one resumes
            return RetryDecision(permanent: false, nextRetry: nil, wait: 0, inRun: false)
        case .permanent:
            return RetryDecision(permanent: true, nextRetry: nil, wait: 0, inRun: false)
        case .mismatch, .transient:
            let exhausted = failures >= policy.attempts
            var wait = failure.retryAfter.map { min($0, policy.maxBackoff.seconds) } ?? backoff(failures, policy, using: &random)
            // A 416 that restarts the partial is asked again at once, from zero.
            if failure.discardPartial && failure.kind == .transient && failure.httpStatus == 416 { wait = 0 }
            let next = exhausted ? nil : now.advanced(bySeconds: wait)
            return RetryDecision(permanent: exhausted, nextRetry: next, wait: wait,
                                 inRun: failure.kind == .transient && !exhausted && wait <= inRunLimit)
        }
    }

    /// Exponential backoff with jitter: `backoff · 2^(n-1)`, capped, then a uniform draw
    /// from its upper half so a fleet does not retry in step.
    static func backoff(_ failures: Int, _ policy: RetryPolicy, using random: inout some RandomNumberGenerator) -> Int64 {
        let base = Double(policy.backoff.seconds) * pow(2, Double(max(0, failures - 1)))
        let capped = min(base, Double(policy.maxBackoff.seconds))
        return Int64((capped * Double.random(in: 0.5...1.0, using: &random)).rounded(.up))
    }
}
