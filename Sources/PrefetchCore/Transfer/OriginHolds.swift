/// The origins held within one run (SPEC §6), and what that means for the queue: while an
/// origin is held none of its jobs starts; at the hold's end one job probes it and the rest
/// wait for its answer; a hold that outlasts the run drops the origin's jobs, each counted
/// once as held with it. Pure: `RunBoard` keeps it under its queue lock.
struct OriginHolds {
    /// One origin's hold.
    private struct Hold {
        var until: Instant
        var reason: String
        var since: Instant
        /// Consecutive failed requests (the origin's own backoff).
        var failures: Int
        /// When the hold last grew: a request already out then says nothing new of the origin.
        var grownAt = Instant(seconds: 0)
        /// A request is out to probe the origin; the others wait for its answer.
        var probing = false
        /// The hold outlasts what a run waits (or its probe gave up): the origin's other
        /// resources are not requested in this run.
        var beyondRun = false
        /// The resources held with it in this run (not requested, or failed with the hold).
        var held: Set<ResourceKey> = []
        /// state.db holds it (an earlier run's hold, or one recorded in this run).
        var recorded: Bool
    }

    private var holds: [String: Hold] = [:]

    /// `recorded`: the holds state.db keeps; one whose time has passed is probed by one request.
    init(recorded: [String: OriginHold] = [:]) {
        for (origin, hold) in recorded {
            holds[origin] = Hold(until: hold.until, reason: hold.reason, since: hold.since, failures: hold.failures, recorded: true)
        }
    }

    enum Admission { case go, wait, held }

    /// Whether `job` may start now as far as its origin goes. A job dropped as `held` is
    /// counted with its origin's hold.
    mutating func admission(_ job: TransferJob, now: Instant) -> Admission {
        guard !holds.isEmpty else { return .go }
        let origin = job.url.origin
        guard let hold = holds[origin] else { return .go }
        if hold.beyondRun {
            holds[origin]!.held.insert(job.key)
            return .held
        }
        return hold.probing || hold.until > now ? .wait : .go
    }

    /// What `origin`'s hold allows now, counting no resource with it (a resource with
    /// mirrors asks for each of its URLs, SPEC §8).
    func admission(of origin: String, now: Instant) -> MirrorOrder.Admission {
        guard let hold = holds[origin] else { return .go }
        if hold.beyondRun { return .held }
        return hold.probing || hold.until > now ? .wait : .go
    }

    /// Why `origin` is held now ("HTTP 503"), nil when it is not (or its hold has ended).
    func cause(of origin: String, now: Instant) -> String? {
        guard let hold = holds[origin], hold.beyondRun || hold.probing || hold.until > now else { return nil }
        return hold.reason
    }

    /// When `origin`'s hold ends, if it is held.
    func until(of origin: String) -> Instant? { holds[origin]?.until }

    /// `key` is counted with `origin`'s hold (every URL of it held for the rest of the run).
    mutating func countHeld(_ origin: String, _ key: ResourceKey) {
        holds[origin]?.held.insert(key)
    }

    /// `job` started: if its origin is held, it is the probe.
    mutating func started(_ job: TransferJob) {
        guard !holds.isEmpty else { return }
        let origin = job.url.origin
        if holds[origin] != nil { holds[origin]!.probing = true }
    }

    /// A request to `origin` failed in a way that holds it: the hold begins or grows, until
    /// what `Retry-After` says (capped at `max_backoff`) or the origin's own exponential
    /// backoff. A failure of a request that was already out when the hold last grew (one of
    /// the origin's transfers running beside the one that failed first) does not grow it
    /// again: the hold ends at the earliest time one of them may be retried. The origin
    /// gets the in-run retries one resource would (`attempts`). Returns the hold to record,
    /// the seconds the failed resource waits for its own retry, and whether the hold
    /// outlasts the run. `counted`: the failed resource is counted with the hold (not one
    /// that goes on to another of its URLs, SPEC §8).
    mutating func hold(_ origin: String, cause: String, retryAfter: Int64?, policy: RetryPolicy, startedAt: Instant, now: Instant,
                       failed key: ResourceKey, counted: Bool = true,
                       using random: inout some RandomNumberGenerator) -> (hold: OriginHold, wait: Int64, forTheRun: Bool) {
        if var hold = holds[origin], hold.until > now, startedAt < hold.grownAt {
            let own = retryAfter.map { min($0, policy.maxBackoff.seconds) } ?? max(0, hold.until.seconds - now.seconds)
            hold.until = min(hold.until, now.advanced(bySeconds: own))
            if counted { hold.held.insert(key) }
            holds[origin] = hold
            return (OriginHold(origin: origin, until: hold.until, reason: hold.reason, since: hold.since, failures: hold.failures),
                    own, hold.beyondRun)
        }
        let failures = (holds[origin]?.failures ?? 0) + 1
        let wait = retryAfter.map { min($0, policy.maxBackoff.seconds) } ?? RetryDecision.backoff(failures, policy, using: &random)
        var hold = holds[origin] ?? Hold(until: now, reason: cause, since: now, failures: 0, recorded: true)
        hold.until = now.advanced(bySeconds: wait)
        hold.grownAt = now
        hold.reason = cause
        hold.failures = failures
        hold.probing = false
        hold.recorded = true
        if counted { hold.held.insert(key) }
        if wait > RetryDecision.inRunLimit || failures >= policy.attempts { hold.beyondRun = true }
        holds[origin] = hold
        return (OriginHold(origin: origin, until: hold.until, reason: cause, since: hold.since, failures: failures), wait, hold.beyondRun)
    }

    /// The failed resource will not probe again in this run (its attempts are spent): the
    /// origin is held for the rest of it.
    mutating func holdForTheRun(_ origin: String) {
        holds[origin]?.beyondRun = true
    }

    /// A transfer to `origin` ended. With an HTTP answer other than 429/502/503/504
    /// (`answered`) the hold ends and the origin's waiting jobs go on; without one (a local
    /// failure, or the hold's own failure) the next request may probe. Returns whether
    /// state.db holds the origin, to be cleared there.
    mutating func transferEnded(origin: String, answered: Bool) -> Bool {
        guard holds[origin] != nil else { return false }
        if answered { return holds.removeValue(forKey: origin)!.recorded }
        holds[origin]!.probing = false
        return false
    }

    /// A job that never reached its origin (it could not start, or it was paused): if it
    /// was the probe, the next request may probe. No string is built when nothing is held.
    mutating func probeEnded(_ url: ResourceURL) {
        guard !holds.isEmpty else { return }
        let origin = url.origin
        if holds[origin] != nil { holds[origin]!.probing = false }
    }

    /// The origins still held, each with the resources held with it.
    func held() -> [(origin: String, reason: String, until: Instant, resources: Set<ResourceKey>)] {
        holds.filter { !$0.value.held.isEmpty }.sorted { $0.key < $1.key }
            .map { (origin: $0.key, reason: $0.value.reason, until: $0.value.until, resources: $0.value.held) }
    }
}
