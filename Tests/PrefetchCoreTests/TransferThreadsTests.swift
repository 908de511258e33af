import Testing
@testable import PrefetchCore

/// How many threads (`EngineShard`s) a run's transfers get, and how limits are shared out.
@Suite struct TransferThreadsTests {
    @Test func manySmallJobsGetACoreEachUpToFour() {
        #expect(TransferEngine.threads(jobs: 2000, capped: false, concurrency: 16, perHost: 16, requested: nil, cores: 2) == 2)
        #expect(TransferEngine.threads(jobs: 2000, capped: false, concurrency: 16, perHost: 16, requested: nil, cores: 8) == 4)
        #expect(TransferEngine.threads(jobs: 2000, capped: false, concurrency: 16, perHost: 16, requested: nil, cores: 1) == 1)
    }

    @Test func fewJobsStayOnOneThread() {
        #expect(TransferEngine.threads(jobs: TransferEngine.threadsFrom - 1, capped: false, concurrency: 16, perHost: 16,
                                       requested: nil, cores: 8) == 1)
        #expect(TransferEngine.threads(jobs: TransferEngine.threadsFrom, capped: false, concurrency: 16, perHost: 16,
                                       requested: nil, cores: 8) == 4)
    }

    @Test func eachThreadKeepsFourConnectionsAndOnePerHost() {
        #expect(TransferEngine.threads(jobs: 500, capped: false, concurrency: 7, perHost: 16, requested: nil, cores: 8) == 1)
        #expect(TransferEngine.threads(jobs: 500, capped: false, concurrency: 8, perHost: 16, requested: nil, cores: 8) == 2)
        #expect(TransferEngine.threads(jobs: 500, capped: false, concurrency: 16, perHost: 1, requested: nil, cores: 8) == 1)
        #expect(TransferEngine.threads(jobs: 500, capped: false, concurrency: 16, perHost: 3, requested: nil, cores: 8) == 3)
    }

    @Test func aRateOrBudgetToEnforceKeepsOneThread() {
        #expect(TransferEngine.threads(jobs: 2000, capped: true, concurrency: 16, perHost: 16, requested: nil, cores: 8) == 1)
        #expect(TransferEngine.threads(jobs: 2000, capped: true, concurrency: 16, perHost: 16, requested: 4, cores: 8) == 1)
    }

    @Test func theEnvironmentSetsTheCountWithinTheLimits() throws {
        #expect(TransferEngine.threads(jobs: 3, capped: false, concurrency: 16, perHost: 16, requested: 2, cores: 1) == 2)
        #expect(TransferEngine.threads(jobs: 3, capped: false, concurrency: 16, perHost: 16, requested: 8, cores: 1) == 3)
        #expect(TransferEngine.threads(jobs: 100, capped: false, concurrency: 2, perHost: 16, requested: 8, cores: 1) == 2)
        #expect(TransferEngine.threads(jobs: 100, capped: false, concurrency: 16, perHost: 16, requested: 1, cores: 8) == 1)
        #expect(try Settings.transferThreads(environment: [:]) == nil)
        #expect(try Settings.transferThreads(environment: ["PREFETCH_TRANSFER_THREADS": "3"]) == 3)
        for bad in ["0", "65", "two", "-1", "1.5"] {
            #expect(throws: ValueError.self) { try Settings.transferThreads(environment: ["PREFETCH_TRANSFER_THREADS": bad]) }
        }
    }

    @Test func sharesAddUpToTheLimit() {
        for total in 1...40 {
            for count in 1...4 {
                let parts = (0..<count).map { TransferEngine.share(total, $0, count) }
                #expect(parts.reduce(0, +) == total)
                #expect(parts.max()! - parts.min()! <= 1)
            }
        }
        #expect((0..<2).map { TransferEngine.share(6, $0, 2) } == [3, 3])
        #expect((0..<3).map { TransferEngine.share(16, $0, 3) } == [6, 5, 5])
    }
}
