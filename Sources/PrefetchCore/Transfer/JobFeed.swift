import Foundation

/// A feed as its jobs see it: one shared reference, so a job list of thousands does not
/// copy (and retain, and release) a whole manifest entry per job.
final class JobFeed {
    let feed: Feed
    /// When the window this run's transfers of the feed run in closes (nil: it never does):
    /// they are paused then, checked at every look the engine takes, not only every 2 s.
    var windowEnd: Instant?
    var name: String { feed.name }
    var limits: FeedLimits { feed.limits }
    var retry: RetryPolicy { feed.retry }
    var conditions: Conditions { feed.conditions }
    var timeZone: TimeZone { feed.timeZone }

    init(_ feed: Feed) {
        self.feed = feed
    }
}
