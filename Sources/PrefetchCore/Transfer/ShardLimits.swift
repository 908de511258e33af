import Foundation

/// The limits one shard keeps: its share of `concurrency`, of a feed's
/// `limits.concurrency` and of the connections per origin (the shares of all shards add
/// up to the limits), each capped feed's token bucket (`max_rate`) and each budgeted
/// feed's metered allowance (these two only ever on a run's single shard).
final class ShardLimits {
    let index: Int
    let shards: Int
    let concurrency: Int
    let perHost: Int
    private let allowances: [String: MeteredAllowance]
    private let limiters: [String: RateLimiter]

    init(index: Int, of shards: Int, concurrency: Int, perHost: Int, allowances: [String: MeteredAllowance], limiters: [String: RateLimiter]) {
        self.index = index
        self.shards = shards
        self.concurrency = concurrency
        self.perHost = perHost
        self.allowances = allowances
        self.limiters = limiters
    }

    var hasBudgets: Bool { !allowances.isEmpty }
    func limiter(_ feed: String) -> RateLimiter? { limiters[feed] }
    func allowance(_ feed: String) -> MeteredAllowance? { allowances[feed] }

    /// Whether `job` may start beside `active`: the feed's rate, then this shard's shares
    /// of the feed's concurrency and of the connections to its origin.
    func canStart(_ job: TransferJob, beside active: Dictionary<CurlEasy.ID, Transfer>.Values) -> RunBoard.Admission {
        var sameFeed = 0
        var sameOrigin = 0
        let url = job.url
        for transfer in active {
            if transfer.job.feed === job.feed { sameFeed += 1 }
            if RunBoard.sameOrigin(transfer.job.url, url) { sameOrigin += 1 }
        }
        if let limiter = limiters[job.feed.name] {
            limiter.refill(now: Date().timeIntervalSince1970)
            if limiter.exhausted { return .waitFeed }  // the feed is over its rate: new transfers wait too
        }
        if sameFeed >= TransferEngine.share(job.feed.limits.concurrency, index, shards) { return .waitFeed }
        return sameOrigin < perHost ? .start : .waitOrigin
    }

    /// Whether `job` fits its feed's metered budget now (no budget: always).
    func admitUnderBudget(_ job: TransferJob) -> MeteredAllowance.Admission {
        guard let allowance = allowances[job.feed.name] else { return .start }
        return allowance.admit(job.resource.sizeOnWire.map { $0 - min($0, job.partial?.syncedOffset ?? 0) })
    }

    /// A transfer started: it joins its feed's bucket, and one of known size reserves what
    /// it still needs of the budget.
    func started(_ transfer: Transfer) {
        if let allowance = allowances[transfer.job.feed.name], let size = transfer.job.resource.sizeOnWire {
            transfer.reservedBudget = max(1, size - min(size, transfer.offset))
            allowance.reserve(transfer.reservedBudget)
        }
        limiters[transfer.job.feed.name]?.join(transfer)
    }

    /// A transfer left the running set: its share of the bucket goes back.
    func left(_ transfer: Transfer) {
        limiters[transfer.job.feed.name]?.leave(transfer)
    }

    /// A transfer ended: it gives back what it reserved of the budget.
    func released(_ transfer: Transfer) {
        guard transfer.reservedBudget > 0 else { return }
        allowances[transfer.job.feed.name]?.release(transfer.reservedBudget)
        transfer.reservedBudget = 0
    }

    /// How long an idle loop waits: until a capped feed's bucket refills, at most 0.2 s.
    func idleWait() -> Double {
        let limited = limiters.values.filter(\.exhausted).map { $0.secondsUntilAvailable() }.min() ?? 0.2
        return min(0.2, max(0.001, limited))
    }

    /// Refills the buckets and resumes transfers paused for their feed's rate; returns how
    /// long the loop may wait for sockets before a bucket has tokens again (milliseconds).
    func resumeRateLimited(_ active: Dictionary<CurlEasy.ID, Transfer>.Values) -> Int {
        guard !limiters.isEmpty else { return 200 }
        let now = Date().timeIntervalSince1970
        for limiter in limiters.values { limiter.refill(now: now) }
        var wait = 200.0
        for transfer in active where transfer.pausedForRate {
            guard let limiter = limiters[transfer.job.feed.name] else { continue }
            if limiter.canTake(transfer) {
                transfer.resumeAfterRateLimit()
            } else {
                wait = min(wait, limiter.secondsUntilAvailable(for: transfer) * 1000)
            }
        }
        for limiter in limiters.values where limiter.exhausted { wait = min(wait, limiter.secondsUntilAvailable() * 1000) }
        return max(1, Int(wait.rounded(.up)))
    }
}
