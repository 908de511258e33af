import Foundation

/// What a run reports as it goes (rendered as log lines, progress bars or JSON).
enum RunEvent {
    case started(ResourceKey, url: String, total: UInt64?, resumeAt: UInt64)
    case progress([TransferProgress])
    /// A file put in place: its size, the body bytes this transfer received (less than the
    /// size after a resume), where the received bytes continued the partial (0: from the
    /// start) and the transfer's duration; `refusedResume`: where a resume of this run
    /// asked from, when the server answered it with the whole file (0: none).
    case placed(ResourceKey, bytes: UInt64, received: UInt64, resumedAt: UInt64, seconds: Double, refusedResume: UInt64 = 0)
    case fresh(ResourceKey)
    /// A transfer paused (resumably or not: `partial` says what became of its bytes).
    case paused(ResourceKey, reason: String, partial: PartialFate, refusedResume: UInt64 = 0)
    case retrying(ResourceKey, message: String, after: Int64)
    /// A request to one of a resource's URLs failed, and the next listed URL is asked at
    /// once (SPEC §8, mirrors): no attempt is counted.
    case nextURL(ResourceKey, message: String, url: String)
    /// A request failed in a way that holds its origin (SPEC §6, §7), and the resource is not
    /// given up in this run: what becomes of it is the hold's to say (its probe, at `until`,
    /// or the origin's `held` line at the end), not a retry of its own `after` seconds on.
    case heldWithOrigin(ResourceKey, message: String, origin: String, until: Instant, after: Int64)
    /// `origin`: the failure held its origin (SPEC §6), whose `held` line speaks for it in text.
    case failed(ResourceKey, message: String, retryAt: Instant?, origin: String? = nil)
    /// An origin held at the end of the run, with the resources held with it (SPEC §6).
    case held(origin: String, reason: String, until: Instant, resources: Int)
    /// state.db could not be written (once per run): not about one resource.
    case stateError(String)
    /// Something removed before the transfers to make room under `max_cache_size` (SPEC §8):
    /// an unlisted file of `feed` (`path`), or a previous generation (`generation`).
    case removedForRoom(feed: String, path: String?, generation: Int?, bytes: UInt64)
    /// A file placed from a local source (SPEC §9): no request; `from` is `FEED/PATH`.
    case placedFromCache(ResourceKey, bytes: UInt64, from: String, seconds: Double)
    /// A local source whose bytes no longer match its record: removed, as `verify` removes one.
    case sourceMismatch(ResourceKey, expected: String, found: String)
    /// A file assembled by a delta (SPEC §9): `fetched` bytes came over the wire for it (its
    /// control file included), `reused` were taken from a seed.
    case placedByDelta(ResourceKey, bytes: UInt64, fetched: UInt64, reused: UInt64, seconds: Double)
    /// A delta's own trouble (SPEC §9 "Whose trouble"): the resource is fetched whole.
    case deltaNotUsed(ResourceKey, reason: String, detail: String)
}

/// What became of a stopped transfer's partial (SPEC §7 "Partials as the run sees them").
enum PartialFate: Equatable {
    /// Nothing of it is on disk.
    case none
    /// Resumable: kept, and the next run resumes from this offset.
    case kept(UInt64)
    /// Not resumable (`ResumeRule`): these bytes were thrown away, for this reason.
    case discarded(UInt64, because: String)

    /// The bytes kept for resume (0: none).
    var kept: UInt64 { if case .kept(let bytes) = self { bytes } else { 0 } }
}

/// One active transfer's figures for a progress line.
struct TransferProgress {
    let key: ResourceKey
    let bytes: UInt64
    let total: UInt64?
    let rate: Double
    /// False while no response has come yet (connecting, or waiting for the server's answer):
    /// shown as such, not as a transfer moving 0 B.
    var receiving = true
}

/// Totals of one engine run.
struct EngineSummary {
    var placed = 0
    var fresh = 0
    /// Transfers that ended failed (or in backoff) in this run, those held with their origin
    /// included: the metrics' `failed`, and §5's exit rule.
    var failed = 0
    var paused = 0
    /// Resources held with their origins at the end of the run (SPEC §6: the `held` lines'
    /// counts), and how many of `failed` are among them: the summary line counts those as
    /// held, not failed (SPEC §7).
    var held = 0
    var failedHeld = 0
    /// Files the pass's clean-up removed from the feeds' folders (expired, no longer listed):
    /// set by `RunPass` after the transfers.
    var pruned = 0
    /// What the summary line calls failed: failures not held with their origin.
    var failedAlone: Int { failed - failedHeld }
    var bodyBytes: UInt64 = 0
    var transferSeconds: Double = 0
    var diskFull = false
    var failures: [(ResourceKey, String)] = []
    /// Feeds whose files or their state changed (placed, revalidated, failed): their
    /// reader index is written anew.
    var changedFeeds: Set<String> = []
    /// The same counts per feed (the metrics' counters, SPEC §6).
    var byFeed: [String: FeedTally] = [:]
    /// Files placed from a local source (SPEC §9), among `placed`.
    var fromCache = 0

    /// How one transfer ended, as the metrics count it.
    enum Result: String, CaseIterable, Sendable { case placed, fresh, failed, paused }

    mutating func count(_ result: Result, feed: String) {
        switch result {
        case .placed: placed += 1
        case .fresh: fresh += 1
        case .failed: failed += 1
        case .paused: paused += 1
        }
        byFeed[feed, default: FeedTally()].results[result, default: 0] += 1
    }

    /// Adds a round's counts and what it saw (a pass may run the engine more than once: SPEC §9's
    /// resources waiting for another with their content).
    mutating func merge(_ other: EngineSummary) {
        add(other)
        held += other.held
        failedHeld += other.failedHeld
        transferSeconds += other.transferSeconds
        diskFull = diskFull || other.diskFull
        failures += other.failures
        changedFeeds.formUnion(other.changedFeeds)
        fromCache += other.fromCache
        for (feed, tally) in other.byFeed {
            byFeed[feed, default: FeedTally()].reusedBytes += tally.reusedBytes
            byFeed[feed, default: FeedTally()].deltaReusedBytes += tally.deltaReusedBytes
        }
    }

    mutating func countBody(_ bytes: UInt64, feed: String) {
        bodyBytes += bytes
        byFeed[feed, default: FeedTally()].bodyBytes += bytes
    }

    /// Adds another shard's counts.
    mutating func add(_ other: EngineSummary) {
        placed += other.placed
        fresh += other.fresh
        failed += other.failed
        paused += other.paused
        bodyBytes += other.bodyBytes
        for (feed, tally) in other.byFeed {
            for (result, count) in tally.results { byFeed[feed, default: FeedTally()].results[result, default: 0] += count }
            byFeed[feed, default: FeedTally()].bodyBytes += tally.bodyBytes
        }
    }
}

/// One feed's transfers of a run, by how they ended, and its body bytes.
struct FeedTally: Sendable, Equatable {
    var results: [EngineSummary.Result: Int] = [:]
    var bodyBytes: UInt64 = 0
    /// Bytes placed from local sources, not fetched (SPEC §9).
    var reusedBytes: UInt64 = 0
    /// Bytes a delta took from its seeds, not fetched (SPEC §9).
    var deltaReusedBytes: UInt64 = 0
}

/// Runs transfers within the limits of SPEC §5 and writes every outcome to state.db as it
/// happens. Each `EngineShard` drives its own libcurl multi handle on its own thread, with an
/// even share of `concurrency`, `per_host` and each feed's `limits.concurrency` (so a feed
/// of concurrency 1 runs on the first shard only); they take jobs in plan order from one
/// `RunBoard`.
///
/// One shard is the rule. Many small transfers make a run CPU-bound on one core (libcurl,
/// the kernel's socket and file work, the rename, state.db), so a run of at least
/// `threadsFrom` jobs uses up to one shard per core (at most `maxThreads`), each with at
/// least 4 connections and 1 per host. A run with a `max_rate` or a `metered_budget` to
/// enforce keeps one shard: their token buckets and allowances are not shared across threads.
/// `PREFETCH_TRANSFER_THREADS` sets the count (the same limits still apply).
final class TransferEngine {
    private let cache: CacheFolder
    private let state: StateStore
    private let config: Config
    private let environment: [String: String]
    private let clock: () -> Instant
    private let onEvent: (RunEvent) -> Void
    /// Feeds whose metered bytes count toward their budget.
    private let metered: Bool
    private let meteredUsedToday: [String: UInt64]
    /// This boot's id, recorded with every partial (SPEC §5).
    private let bootID: String
    private let faults: FaultPoints
    /// The room left under `max_cache_size` (SPEC §8); nil: no cap.
    private let cacheAllowance: CacheAllowance?

    static let threadsFrom = 64
    static let maxThreads = 4

    /// `meteredUsedToday`: per feed, bytes already moved over metered links today (state.db),
    /// for `metered_budget` when `metered`.
    /// The transfer threads asked for (`PREFETCH_TRANSFER_THREADS`; nil: decided here).
    private let requestedThreads: Int?

    /// `environment` is for manifest headers' `${VAR}`, and tells whether libcurl will find
    /// a proxy there (`mayUseProxy`); `threads` and `bootID` come parsed (`Settings`).
    init(cache: CacheFolder, state: StateStore, config: Config, environment: [String: String], threads: Int?, bootID: String,
         faults: FaultPoints = .none, metered: Bool, meteredUsedToday: [String: UInt64] = [:], cacheAllowance: CacheAllowance? = nil,
         clock: @escaping () -> Instant, onEvent: @escaping (RunEvent) -> Void) {
        _ = CurlGlobal.initialized
        self.cacheAllowance = cacheAllowance
        self.bootID = bootID
        self.faults = faults
        requestedThreads = threads
        self.cache = cache
        self.state = state
        self.config = config
        self.environment = environment
        self.metered = metered
        self.meteredUsedToday = meteredUsedToday
        self.clock = clock
        self.onEvent = onEvent
    }

    /// How many shards run `jobs` jobs (see the type's comment); `capped`: some feed has a
    /// `max_rate` or a `metered_budget` to enforce.
    static func threads(jobs: Int, capped: Bool, concurrency: Int, perHost: Int, requested: Int?, cores: Int) -> Int {
        if capped { return 1 }
        let wanted = requested ?? (jobs >= threadsFrom ? min(cores, maxThreads) : 1)
        let limit = requested == nil ? concurrency / 4 : concurrency
        return max(1, min(wanted, limit, perHost, jobs))
    }

    /// Whether requests may go through a proxy: the config's `proxy`, or one of the
    /// environment variables libcurl reads. libcurl keys its connections to an HTTP proxy by
    /// the proxy, so its per-host cap (CURLMOPT_MAX_HOST_CONNECTIONS) would hold every origin
    /// behind the proxy to `per_host` together; `ShardLimits` counts `per_host` per origin,
    /// so then libcurl is left only the shard's total.
    static func mayUseProxy(config: Config, environment: [String: String]) -> Bool {
        config.proxy != nil || ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"].contains { !(environment[$0] ?? "").isEmpty }
    }

    /// Runs `jobs` in order. `pauseReason(feed)` is asked every few seconds (window closed,
    /// condition lost), from any shard's thread but one call at a time; `stopRequested`
    /// every loop of every shard (a signal).
    /// `holds`: the origins state.db holds (SPEC §6).
    func run(_ jobs: [TransferJob], holds: [String: OriginHold] = [:], pauseReason: @escaping (Feed) -> String?,
             stopRequested: @escaping () -> Bool) -> EngineSummary {
        let now = Date().timeIntervalSince1970
        var limiters: [String: RateLimiter] = [:]
        var allowances: [String: MeteredAllowance] = [:]
        for job in jobs where limiters[job.feed.name] == nil {
            if let rate = job.feed.limits.maxRate { limiters[job.feed.name] = RateLimiter(bytesPerSecond: rate.bytes, now: now) }
        }
        if metered {
            for job in jobs where allowances[job.feed.name] == nil {
                guard let budget = job.feed.conditions.meteredBudget else { continue }
                allowances[job.feed.name] = MeteredAllowance(budget: budget.bytes, usedToday: meteredUsedToday[job.feed.name] ?? 0)
            }
        }
        let capped = jobs.contains { $0.feed.limits.maxRate != nil || (metered && $0.feed.conditions.meteredBudget != nil) }
        var count = Self.threads(jobs: jobs.count, capped: capped, concurrency: config.concurrency, perHost: config.perHost,
                                 requested: requestedThreads, cores: ProcessInfo.processInfo.activeProcessorCount)
        // One multi handle per shard; if libcurl cannot make them all (out of memory), fewer shards run.
        var multis: [CurlMulti] = []
        var multiError: CurlError?
        let proxied = Self.mayUseProxy(config: config, environment: environment)
        for index in 0..<count {
            do {
                let total = Self.share(config.concurrency, index, count)
                multis.append(try CurlMulti(totalConnections: total, perHost: proxied ? total : Self.share(config.perHost, index, count)))
            } catch {
                multiError = error
                break
            }
        }
        guard !multis.isEmpty else {
            var summary = EngineSummary()
            for job in jobs {
                let message = "libcurl: \(multiError?.message ?? "no multi handle")"
                summary.count(.failed, feed: job.feed.name)
                summary.failures.append((job.key, message))
                onEvent(.failed(job.key, message: message, retryAt: nil))
            }
            return summary
        }
        count = multis.count
        let pool = BufferPool()
        let board = RunBoard(jobs: jobs, state: state, syncsFolders: !cache.syncIsFree, shards: count, faults: faults, holds: holds,
                             pauseReason: pauseReason, onEvent: onEvent)
        let shards = (0..<count).map { index in
            EngineShard(multi: multis[index],
                        limits: ShardLimits(index: index, of: count, concurrency: Self.share(config.concurrency, index, count),
                                            perHost: Self.share(config.perHost, index, count), allowances: allowances, limiters: limiters),
                        board: board, cache: cache, config: config, environment: environment, metered: metered,
                        pool: pool, bootID: bootID, faults: faults, cacheAllowance: cacheAllowance, clock: clock)
        }
        let stop = UncheckedSendable(stopRequested)
        let done = DispatchGroup()
        for shard in shards.dropFirst() {
            done.enter()
            let thread = Thread { [shard] in
                shard.run(stopRequested: stop.value)
                done.leave()
            }
            thread.name = "prefetch.transfers"
            thread.start()
        }
        shards[0].run(stopRequested: stopRequested)
        done.wait()
        pool.waitForHashing()
        board.write([], force: true)
        var summary = shards.dropFirst().reduce(into: shards[0].summary) { total, shard in
            let part = shard.summary
            total.add(part)
            total.transferSeconds = max(total.transferSeconds, part.transferSeconds)  // they ran side by side
            total.diskFull = total.diskFull || part.diskFull
            total.failures += part.failures
            total.changedFeeds.formUnion(part.changedFeeds)
        }
        var heldKeys = Set<ResourceKey>()
        for held in board.heldOrigins() {  // one line per origin, not per resource
            board.emit(.held(origin: held.origin, reason: held.reason, until: held.until, resources: held.resources.count))
            heldKeys.formUnion(held.resources)
        }
        summary.held = heldKeys.count
        summary.failedHeld = summary.failures.reduce(0) { $0 + (heldKeys.contains($1.0) ? 1 : 0) }
        return summary
    }

    /// Shard `index`'s part of `total` when `count` shards share it (the parts add up to it).
    static func share(_ total: Int, _ index: Int, _ count: Int) -> Int {
        total / count + (index < total % count ? 1 : 0)
    }
}
