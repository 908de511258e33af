/// SPEC §6's removed feeds, carried out (`RemovedFeeds` decides): at the end of `run` and
/// the daemon's passes, and by `gc`.
enum FeedRemoval {
    /// Lines for people: what was noticed, kept or removed; `dryRun` changes nothing.
    static func apply(listed feeds: [Feed], cache: CacheFolder, state: StateStore, now: Instant, grace: TimeSpan,
                      dryRun: Bool) -> (lines: [String], errors: [String], graces: [RemovedFeeds.Grace]) {
        var lines: [String] = []
        var errors: [String] = []
        let recorded: [String: Instant?]
        do { recorded = try state.recordedFeeds() } catch {
            return ([], ["cannot read \(state.path): \(error)"], [])
        }
        let decision = RemovedFeeds.decide(recorded: recorded, listed: Set(feeds.map(\.name)), now: now, grace: grace)
        let utc = ZoneClock(TimeZone(identifier: "UTC")!)
        for feed in decision.notice {
            lines.append("kept  \(feed)/  (its manifest is gone; the folder goes after \(TimeFormat.rfc3339(now + grace, clock: utc)))")
            if !dryRun {
                do { try state.markFeedRemoved(feed, at: now) } catch { errors.append("cannot record state: \(error)") }
            }
        }
        for feed in decision.back where !dryRun {
            do { try state.clearFeedRemoved(feed) } catch { errors.append("cannot record state: \(error)") }
        }
        for feed in decision.remove {
            if dryRun {
                lines.append("would remove  \(feed)/  (its manifest has been gone for \(grace))")
                continue
            }
            switch cache.removeFeedFolder(feed) {
            case .success(let count):
                lines.append("removed  \(feed)/  (\(count) file\(count == 1 ? "" : "s"); its manifest has been gone for \(grace))")
                do { try state.forgetFeed(feed) } catch { errors.append("cannot record state: \(error)") }
            case .failure(let error):
                errors.append("cannot remove \(cache.path)/\(feed): \(error)")
            }
        }
        return (lines, errors, decision.graces)
    }
}

import Foundation
