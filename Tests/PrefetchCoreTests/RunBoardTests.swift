import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// What the transfer threads of one run share: the queue, pauses,
/// state.db's group commit and the progress lines.
@Suite struct RunBoardTests {
    /// Jobs of one feed, in manifest order; `hosts` gives each job's host (e.com by default).
    static func jobs(feed name: String, concurrency: Int, count: Int, hosts: (Int) -> String = { _ in "e.com" }) -> [TransferJob] {
        var yaml = "name: \(name)\nlimits: { concurrency: \(concurrency) }\nresources:\n"
        for index in 0..<count { yaml += "  - url: https://\(hosts(index))/\(name)\(index).bin\n" }
        let feed = JobFeed(PlannerTests.feed(yaml))
        return feed.feed.resources.enumerated().map { position, resource in
            TransferJob(feed: feed, position: position,
                        urlDigest: resource.url.identityDigest, release: 0, cachedValidators: nil, partial: nil, failures: 0)
        }
    }

    final class Events: @unchecked Sendable {
        var all: [RunEvent] = []
        var progress: [[String]] {
            all.compactMap { if case .progress(let list) = $0 { list.map(\.key.path) } else { nil } }
        }
    }

    static func board(_ jobs: [TransferJob], shards: Int = 2, stopped: @escaping (Feed) -> String? = { _ in nil },
                      events: Events = Events()) throws -> (RunBoard, TemporaryFolder) {
        let folder = try TemporaryFolder()
        let state = try StateStore.openForWriting(folder.path + "/state.db")
        return (RunBoard(jobs: jobs, state: state, syncsFolders: false, shards: shards, pauseReason: stopped,
                         onEvent: { events.all.append($0) }), folder)
    }

    /// SPEC §6 in the queue: while an origin is held none of its jobs starts (another
    /// origin's do); at the hold's end exactly one starts (the probe), the rest wait for its
    /// answer; an answer lets them all through. A hold beyond the run drops the origin's
    /// jobs, each counted once as held with it.
    @Test func aHeldOriginStartsOneProbeAndWaitsForItsAnswer() throws {
        let jobs = Self.jobs(feed: "a", concurrency: 8, count: 6, hosts: { $0 < 5 ? "down.example" : "up.example" })
        let (board, _) = try Self.board(jobs, shards: 1)
        var random = SplitMix64(seed: 1)
        let origin = jobs[0].resource.url.origin
        let first = try #require(board.next(now: Instant(seconds: 0)) { _ in .start })
        let (hold, wait, forTheRun) = board.holdOrigin(origin, cause: "HTTP 503", retryAfter: 10, policy: jobs[0].feed.retry,
                                                        startedAt: Instant(seconds: 0), now: Instant(seconds: 1), failed: first.key,
                                                        using: &random)
        #expect(hold.until == Instant(seconds: 11) && wait == 10 && !forTheRun && hold.failures == 1)
        #expect(board.transferEnded(origin: origin, answered: false) == false)
        // Held: only the other origin's job starts.
        #expect(board.next(now: Instant(seconds: 2)) { _ in .start }?.key.path == "a5.bin")
        #expect(board.next(now: Instant(seconds: 10)) { _ in .start } == nil)
        // At its end: one probe, then nothing until it answers.
        #expect(board.next(now: Instant(seconds: 11)) { _ in .start }?.key.path == "a1.bin")
        #expect(board.next(now: Instant(seconds: 12)) { _ in .start } == nil)
        // A probe that never reached the origin (it could not start, or was paused) lets the next one probe.
        board.probeEnded(jobs[1].resource.url)
        #expect(board.next(now: Instant(seconds: 12)) { _ in .start }?.key.path == "a2.bin")
        #expect(board.next(now: Instant(seconds: 12)) { _ in .start } == nil)
        #expect(board.transferEnded(origin: origin, answered: true), "the hold was recorded: state.db must clear it")
        let rest = (0..<2).compactMap { _ in board.next(now: Instant(seconds: 12)) { _ in .start }?.key.path }
        #expect(rest == ["a3.bin", "a4.bin"])
        #expect(board.heldOrigins().isEmpty)
        // Beyond the run: the origin's jobs are not started, and counted.
        let (other, _) = try Self.board(jobs, shards: 1)
        let probe = try #require(other.next(now: Instant(seconds: 0)) { _ in .start })
        let beyond = other.holdOrigin(origin, cause: "connection refused", retryAfter: 3600, policy: jobs[0].feed.retry,
                                      startedAt: Instant(seconds: 0), now: Instant(seconds: 1), failed: probe.key, using: &random)
        #expect(beyond.forTheRun)
        #expect(other.next(now: Instant(seconds: 5000)) { _ in .start }?.key.path == "a5.bin")
        #expect(other.next(now: Instant(seconds: 5000)) { _ in .start } == nil && other.drained)
        let held = other.heldOrigins()
        #expect(held.count == 1 && held.first?.resources.count == 5 && held.first?.reason == "connection refused")
    }

    /// A retry within the run starts only if its feed may still transfer at that moment — its
    /// window may have closed since the last periodic check (every 2 s), and a retry then
    /// began outside it — and never after its resource expired.
    @Test func aRetryIsCheckedWhenItStartsNotOnlyEveryTwoSeconds() throws {
        var jobs = Self.jobs(feed: "a", concurrency: 2, count: 2)
        let closed = SharedFlag()
        let (board, _) = try Self.board([jobs[0]], shards: 1, stopped: { _ in closed.value ? "window closed" : nil })
        #expect(board.stoppedFeeds(now: Date(), clock: 0).isEmpty)   // the periodic check: open
        #expect(board.next(now: 0) { _ in .start }?.key.path == "a0.bin")
        closed.value = true                                 // the window closes
        var retry = jobs[0]
        retry.failures = 1
        retry.notBefore = Instant(seconds: 5)
        board.retry(retry)
        #expect(board.next(now: Instant(seconds: 6)) { _ in .start } == nil, "a retry started after the window closed")
        #expect(board.drained)
        // Expired while the retry waited: not started either.
        var changed = jobs[1].feed.feed
        changed.resources[1].expires = Instant(seconds: 10)
        jobs[1] = TransferJob(feed: JobFeed(changed), position: 1, urlDigest: jobs[1].urlDigest,
                              release: 0, cachedValidators: nil, partial: nil, failures: 1, notBefore: Instant(seconds: 9))
        let (other, _) = try Self.board([jobs[1]], shards: 1)
        #expect(other.next(now: Instant(seconds: 11)) { _ in .start } == nil, "an expired resource was started")
        #expect(other.drained)
    }

    final class SharedFlag: @unchecked Sendable { var value = false }

    @Test func jobsComeInPlanOrderWhicheverShardAsks() throws {
        let (board, _) = try Self.board(Self.jobs(feed: "a", concurrency: 2, count: 3))
        #expect(board.next(now: 0) { _ in .start }?.key.path == "a0.bin")  // one shard
        #expect(board.next(now: 0) { _ in .start }?.key.path == "a1.bin")  // the other
        #expect(!board.drained)
        #expect(board.next(now: 0) { _ in .start }?.key.path == "a2.bin")
        #expect(board.next(now: 0) { _ in .start } == nil && board.drained)
    }

    @Test func aJobAShardWaitsOnKeepsItsPlaceAndARefusedOneIsDropped() throws {
        let (board, _) = try Self.board(Self.jobs(feed: "a", concurrency: 8, count: 3))
        // This shard cannot take a0 (its own limit) and refuses a1 (a budget): it gets a2.
        let taken = board.next(now: 0) { job in job.key.path == "a0.bin" ? .wait : job.key.path == "a1.bin" ? .refuse : .start }
        #expect(taken?.key.path == "a2.bin")
        #expect(board.next(now: 0) { _ in .start }?.key.path == "a0.bin")  // the other shard
        #expect(board.next(now: 0) { _ in .start } == nil && board.drained)
    }

    @Test func planOrderHoldsAcrossFeeds() throws {
        let a = Self.jobs(feed: "a", concurrency: 8, count: 2), b = Self.jobs(feed: "b", concurrency: 8, count: 2)
        let (board, _) = try Self.board([a[0], b[0], a[1], b[1]])
        let order = (0..<4).compactMap { _ in board.next(now: 0) { _ in .start }?.key.path }
        #expect(order == ["a0.bin", "b0.bin", "a1.bin", "b1.bin"])
    }

    @Test func aFeedAtItsLimitIsPassedOverAtOnce() throws {
        let (board, _) = try Self.board(Self.jobs(feed: "a", concurrency: 1, count: 500) + Self.jobs(feed: "b", concurrency: 8, count: 1))
        var asked: [String] = []
        let job = board.next(now: 0) { job in
            asked.append(job.key.path)
            return job.key.feed == "a" ? .waitFeed : .start
        }
        #expect(job?.key.path == "b0.bin")
        #expect(asked == ["a0.bin", "b0.bin"], "the held feed's other 499 jobs were asked about")
    }

    @Test func oneCallLooksPastAtMostScanLimitHeldJobsOfAFeed() throws {
        let count = RunBoard.scanLimit + 10
        let (board, _) = try Self.board(Self.jobs(feed: "a", concurrency: 8, count: count))
        var asked = 0
        let held = board.next(now: 0) { job in
            asked += 1
            return job.key.path == "a\(count - 1).bin" ? .start : .wait  // each held back by its origin, say
        }
        #expect(held == nil && asked == RunBoard.scanLimit)
        // Once the jobs in front have started, the last one is reached.
        for _ in 0..<(count - 1) { _ = board.next(now: 0) { job in job.key.path == "a\(count - 1).bin" ? .wait : .start } }
        #expect(board.next(now: 0) { _ in .start }?.key.path == "a\(count - 1).bin")
        #expect(board.drained)
    }

    @Test func aRunOfJobsOnAFullOriginIsJumpedAtOnce() throws {
        // 600 jobs on one host, then one on another, then 600 more on the first.
        let jobs = Self.jobs(feed: "a", concurrency: 16, count: 1201, hosts: { $0 == 600 ? "f.com" : "e.com" })
        let (board, _) = try Self.board(jobs)
        var asked: [String] = []
        let job = board.next(now: 0) { job in
            asked.append(job.key.path)
            return job.resource.url.host == "e.com" ? .waitOrigin : .start
        }
        #expect(job?.key.path == "a600.bin")
        #expect(asked == ["a0.bin", "a600.bin"], "\(asked.count) jobs asked about")
        // With f.com's share full too, one call asks once per run and finds nothing.
        asked = []
        #expect(board.next(now: 0) { job in asked.append(job.key.path); return .waitOrigin } == nil)
        #expect(asked == ["a0.bin", "a601.bin"])
    }

    @Test func retriesQueueLastAndWaitForTheirTime() throws {
        let (board, _) = try Self.board(Self.jobs(feed: "a", concurrency: 8, count: 2))
        var retry = try #require(board.next(now: 100) { _ in .start })
        retry.notBefore = 130
        board.retry(retry)
        #expect(board.next(now: 100) { _ in .start }?.key.path == "a1.bin")
        #expect(board.next(now: 129) { _ in .start } == nil && !board.drained)
        #expect(board.next(now: 130) { _ in .start }?.key.path == "a0.bin")
        #expect(board.drained)
    }

    @Test func aPausedFeedsQueuedJobsAreDroppedAndItStaysPaused() throws {
        var asked = 0
        let jobs = Self.jobs(feed: "a", concurrency: 8, count: 2) + Self.jobs(feed: "b", concurrency: 8, count: 2)
        let (board, _) = try Self.board(jobs, stopped: { feed in
            asked += 1
            return feed.name == "a" ? "window closed" : nil
        })
        #expect(board.stoppedFeeds(now: Date(), clock: 0) == ["a": "window closed"])
        #expect(asked == 2)
        #expect(board.stoppedFeeds(now: Date(), clock: 0) == ["a": "window closed"])
        #expect(asked == 2, "feeds are asked again only after 2 s")
        #expect(board.stoppedFeeds(now: Date().addingTimeInterval(3), clock: 0) == ["a": "window closed"])
        #expect(asked == 3, "a paused feed is not asked again; the other is")
        #expect(board.next(now: 0) { _ in .start }?.key.path == "b0.bin")
        #expect(board.next(now: 0) { _ in .start }?.key.path == "b1.bin")
        #expect(board.next(now: 0) { _ in .start } == nil && board.drained)
    }

    /// A feed's window end, known from the plan, pauses it at the first look at or after it,
    /// without waiting for the 2-second check of its conditions.
    @Test func aWindowsEndPausesItsFeedAtOnce() throws {
        var asked = 0
        let jobs = Self.jobs(feed: "a", concurrency: 8, count: 2)
        jobs[0].feed.windowEnd = Instant(seconds: 100)
        let (board, _) = try Self.board(jobs, stopped: { _ in asked += 1; return nil })
        let now = Date()
        #expect(board.stoppedFeeds(now: now, clock: Instant(seconds: 99)).isEmpty)
        #expect(board.stoppedFeeds(now: now, clock: Instant(seconds: 100)) == ["a": "window closed"], "the end is exclusive")
        #expect(asked == 1, "no condition check was needed for it")
    }

    @Test func progressLinesJoinTheShardsAndDropWhatEnded() throws {
        let events = Events()
        let (board, _) = try Self.board([], events: events)
        func line(_ path: String) -> TransferProgress { TransferProgress(key: ResourceKey(feed: "t", path: path), bytes: 1, total: nil, rate: 1) }
        board.progress(shard: 1, [line("z.bin")])
        board.progress(shard: 0, [line("b.bin"), line("a.bin")])
        board.emit(.placed(ResourceKey(feed: "t", path: "z.bin"), bytes: 1, received: 1, resumedAt: 0, seconds: 0))
        board.progress(shard: 0, [line("b.bin")])
        #expect(events.progress == [["z.bin"], ["a.bin", "b.bin", "z.bin"], ["b.bin"]])
    }

    @Test func writesAreCommittedTogetherWhenDueOrForced() throws {
        let (board, folder) = try Self.board([])
        let key = ResourceKey(feed: "t", path: "a.bin")
        func recorded() throws -> Bool {
            try StateStore.openReadOnly(folder.path + "/state.db")?.snapshot().resources[key] != nil
        }
        board.write([RunBoard.StateWrite(placedIn: []) { state in
            try state.recordValidated(key, urlHash: "h", validators: Validators(), length: 1, sha256: nil, placed: true, at: 1)
        }], force: false)
        #expect(try !recorded(), "committed at once: no group commit")
        board.write([], force: true)
        #expect(try recorded())
    }
}
