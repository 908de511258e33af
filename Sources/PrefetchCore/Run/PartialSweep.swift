/// The partials a writer finds, as the run sees them (SPEC §7 "Partials as the run sees
/// them"): one that cannot resume (`ResumeRule`) is discarded when it is found — a `kill -9`
/// or an older version may have left it — and only resumable ones are said to be kept.
enum PartialSweep {
    /// Removes the file and the record of every partial of `feeds` that cannot resume, and
    /// takes them out of `snapshot`. A record state.db could not drop stays (the transfer
    /// that finds it discards it again); its file goes either way.
    static func discardUnresumable(_ feeds: [Feed], snapshot: inout StateSnapshot, cache: CacheFolder, state: StateStore) throws(SQLiteError) {
        // Most passes have no partial at all: one look over the records, not a lookup per resource.
        guard snapshot.hasPartials else { return }
        var failure: SQLiteError?
        for feed in feeds {
            for resource in feed.resources {
                let key = ResourceKey(feed: feed.name, path: resource.path)
                guard let partial = snapshot.resources[key]?.partial,
                      !ResumeRule.judge(partial.response, sha256Given: resource.sha256 != nil, encoding: resource.encoding,
                                        atAnotherURL: MirrorOrder.partialMoves(partial, resource: resource, state: snapshot.resources[key])).isResumable
                else { continue }
                cache.removePartial(CacheFolder.partialName(feed: feed.name, path: resource.path))
                snapshot.resources[key]?.partial = nil
                do { try state.deletePartial(key) } catch { failure = failure ?? error }
            }
        }
        if let failure { throw failure }
    }

    /// The partials of `feeds` kept for resume (`ResumePoint`): how many, and the bytes the
    /// next run resumes from.
    static func kept(_ feeds: [Feed], snapshot: StateSnapshot, cache: CacheFolder?, bootID: String) -> (count: Int, bytes: UInt64) {
        guard snapshot.hasPartials else { return (0, 0) }
        let files = CacheListing.partialFiles(snapshot, in: cache)
        var count = 0, bytes: UInt64 = 0
        for feed in feeds {
            for resource in feed.resources {
                let key = ResourceKey(feed: feed.name, path: resource.path)
                guard let state = snapshot.resources[key], state.partial != nil,
                      let point = ResumePoint.of(resource, state: state, identity: resource.url.identityHash, file: files[key], bootID: bootID)
                else { continue }
                count += 1
                bytes += point.resumeFrom
            }
        }
        return (count, bytes)
    }

    /// `kept` over what `state` records, reading its snapshot only when a partial is recorded
    /// (a daemon's stop over 100,000 resources read them all to say nothing).
    static func kept(_ feeds: [Feed], state: StateStore, cache: CacheFolder?, bootID: String) -> (count: Int, bytes: UInt64) {
        guard (try? state.hasPartials()) != false, let snapshot = try? state.snapshot() else { return (0, 0) }
        return kept(feeds, snapshot: snapshot, cache: cache, bootID: bootID)
    }

    /// "; 2 partial files kept for resume (12MiB)", or "" when none is.
    static func keptNote(_ kept: (count: Int, bytes: UInt64)) -> String {
        guard kept.count > 0 else { return "" }
        return "; \(kept.count) partial file\(kept.count == 1 ? "" : "s") kept for resume (\(ByteSize.format(kept.bytes)))"
    }
}
