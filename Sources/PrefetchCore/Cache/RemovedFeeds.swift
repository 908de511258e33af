import Foundation

/// Feeds whose manifest is gone (SPEC §6): their folder is kept for `removed_feed_grace`
/// from the first pass that noticed, then removed — never at once, so a manifest deleted by
/// mistake does not wipe a kiosk's content. Only feeds state.db recorded count; when no
/// manifest at all is found, nothing is scheduled. Pure.
enum RemovedFeeds {
    struct Decision: Equatable {
        /// Newly found gone: noticed now.
        var notice: [String] = []
        /// Listed again: the notice is dropped.
        var back: [String] = []
        /// Gone for the whole grace: folder and state go.
        var remove: [String] = []
        /// Each feed noticed before and still gone, and when its grace ends: the daemon wakes
        /// then (`DaemonWakeup`), at rest too.
        var graces: [Grace] = []
    }

    /// A removed feed in its grace, and when the grace ends.
    struct Grace: Equatable, Sendable {
        var feed: String
        var ends: Instant
    }

    static func decide(recorded: [String: Instant?], listed: Set<String>, now: Instant, grace: TimeSpan) -> Decision {
        var decision = Decision()
        guard !listed.isEmpty else { return decision }  // no manifest at all: nothing is scheduled
        for (feed, since) in recorded.sorted(by: { $0.key < $1.key }) {
            if listed.contains(feed) {
                if since != nil { decision.back.append(feed) }
            } else if let since {
                if now >= since + grace { decision.remove.append(feed) } else { decision.graces.append(Grace(feed: feed, ends: since + grace)) }
            } else {
                decision.notice.append(feed)
            }
        }
        return decision
    }
}

extension CacheFolder {
    /// Removes `CACHE/<feed>/` and everything below it, by descriptor: no symlink is
    /// followed (one is removed as a link), nothing outside the folder is touched; for a
    /// `consistency: release` feed, its symlink and then its generations. Returns how many
    /// of the feed's files went (as the writer saw them; its reader index not counted).
    func removeFeedFolder(_ feed: String) -> Result<Int, Errno> {
        let layout = self.layout(of: feed)
        switch layout {
        case .missing, .foreign: return .success(0)  // gone already, or not a folder prefetch would follow
        case .plain, .generations, .dangling: break
        }
        var removed = 0
        func count(_ folder: FileDescriptor, top: Bool) {
            for entry in FileSystem.entries(in: folder) {
                if entry.kind == .directory {
                    if case .success(let sub) = FileDescriptor.open(entry.name, relativeTo: folder, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) {
                        count(sub, top: false)
                    }
                } else if !top || (entry.name != CacheLayout.index && entry.name != CacheLayout.indexTemp) {
                    removed += 1  // the feed's files, not its index
                }
            }
        }
        if case .success(let folder) = feedFolder(feed) { count(folder, top: true) }  // a dangling link holds no files
        if case .failure(let error) = FolderTree.removeTree(feed, in: root) { return .failure(error) }
        if layout.isGenerations, case .failure(let error) = removeGenerations(of: feed) {
            return .failure(error)
        }
        if !syncIsFree, case .failure(let error) = root.sync() { return .failure(error) }
        return .success(removed)
    }
}
