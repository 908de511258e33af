import Foundation

/// SPEC §9 in a pass: a due resource whose content a recorded file in the cache holds is
/// placed from it with no request and no attempt, in two steps. First every such resource's
/// source is linked (or copied) into the partial folder and hashed through the new name
/// (`stage`), while state.db still says what each file held at the pass's start; then each
/// is renamed into place, its folders fsynced, and recorded (`place`). So content two
/// resources swap — A gets B's, B gets A's — is taken before either path is replaced.
/// Resources sharing a SHA-256 that no file holds yet make one transfer: the first in the
/// plan's order goes to the engine, the others wait for it (`split`), then take its content.
struct LocalPlacement {
    let cache: CacheFolder
    let state: StateStore
    let clock: () -> Instant
    let report: (RunEvent) -> Void
    var faults = FaultPoints.none
    /// `max_cache_size`'s room while the run places files: a copy (not a link) takes its size.
    var cacheAllowance: CacheAllowance?
    /// What the placements add to the pass's summary (placed, from the cache, reused bytes).
    private(set) var summary = EngineSummary()
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var folders: [String: FileDescriptor] = [:]
    /// Files placed and recorded in the open transaction, not yet committed: their folders are
    /// fsynced, then it commits (`commit`), as the engine's group commits do.
    private var placed: [Staged] = []
    private var placedFolders: [ObjectIdentifier: FileDescriptor] = [:]
    private var open = false
    private static let batch = 512

    /// A resource's content ready in the partial folder (`link`: its name there), or already
    /// at its path (nil: only its record changes).
    private struct Staged {
        let job: TransferJob
        let record: LocalSourceRecord
        let link: String?
        let identity: FileIdentity
        let started: Date
    }

    init(cache: CacheFolder, state: StateStore, clock: @escaping () -> Instant, report: @escaping (RunEvent) -> Void) {
        self.cache = cache
        self.state = state
        self.clock = clock
        self.report = report
    }

    /// Places what it can of `jobs` (those at `content` need content and have a `sha256`);
    /// returns the jobs for the engine, and those waiting for a transfer of the same content
    /// (`leading`: the SHA-256s a job given to the engine carries).
    mutating func split(_ jobs: consuming [TransferJob], content: Set<Int>,
                        leading: inout Set<String>) -> (transfer: [TransferJob], waiting: [TransferJob]) {
        var transfer: [TransferJob] = [], waiting: [TransferJob] = []
        transfer.reserveCapacity(jobs.count)
        folders = [:]  // a release staged since the last round: its folders are opened anew
        var staged: [Staged] = []
        begin()  // the lookups in one transaction: no lock taken per statement
        for (index, job) in jobs.enumerated() {
            guard content.contains(index), let sha256 = job.resource.sha256 else {
                transfer.append(job)
                continue
            }
            if open, let ready = stage(job, sha256: sha256) {
                staged.append(ready)
                continue
            }
            if leading.insert(sha256).inserted { transfer.append(job) } else { waiting.append(job) }
        }
        for ready in staged {
            if !open { begin() }
            guard open else {  // state.db cannot be written: nothing more is placed
                if let link = ready.link { cache.removeSourceCopy(link) }
                continue
            }
            place(ready)
            if placed.count >= Self.batch { commit() }
        }
        commit()
        return (transfer, waiting)
    }

    // MARK: Staging: the content in the partial folder, checked

    /// `job`'s content from the first recorded file that still holds `sha256` (its own copy
    /// first, then the copies at feeds' paths, then older generations'); nil when none does.
    private mutating func stage(_ job: TransferJob, sha256: String) -> Staged? {
        let started = Date()
        var records = (try? state.localSources(sha256: sha256, length: job.resource.size, kept: false)) ?? []
        if let own = records.firstIndex(where: { $0.key == job.key }), own > 0 { records.insert(records.remove(at: own), at: 0) }
        if let ready = stage(job, sha256: sha256, from: records, started: started) { return ready }
        // The older generations' files, asked only when no copy at a path would do.
        return stage(job, sha256: sha256, from: (try? state.keptSources(sha256: sha256, length: job.resource.size)) ?? [], started: started)
    }

    private mutating func stage(_ job: TransferJob, sha256: String, from records: [LocalSourceRecord], started: Date) -> Staged? {
        let key = job.key
        for record in records {
            // Its own copy, still the file placed (inode, mtime and size recorded): trusted as a
            // pinned copy is, with nothing opened; only its record changes.
            if record.key == key, !record.kept, let inode = record.inode,
               let target = cache.finalIdentity(feed: key.feed, path: key.path, folders: &folders),
               target == FileIdentity(inode: inode, mtime: record.mtime ?? Instant(nanoseconds: -1), size: record.length) {
                return Staged(job: job, record: record, link: nil, identity: target, started: started)
            }
            guard let source = cache.openSource(record, folders: &folders) else {
                if record.kept, let inode = record.inode { try? state.forgetKept(record.key, inode: inode) }
                continue
            }
            switch copy(key, from: source, record: record, sha256: sha256) {
            case .ready(let link, let identity): return Staged(job: job, record: record, link: link, identity: identity, started: started)
            case .damaged(let found): damaged(record, source: source, found: found, expected: sha256)
            case .unusable: continue
            }
        }
        return nil
    }

    private enum CopyOutcome { case ready(link: String?, FileIdentity), damaged(found: String), unusable }

    /// The source's bytes for `key`: the same inode at its path already (hashed unless its
    /// inode, mtime and size are the recorded ones), or a link or copy in the partial folder
    /// hashed through its new name.
    private mutating func copy(_ key: ResourceKey, from source: CacheFolder.OpenedSource, record: LocalSourceRecord,
                               sha256: String) -> CopyOutcome {
        if UInt64(source.info.st_size) != record.length {  // cut short or grown since it was placed: damaged
            guard case .success(let (found, _)) = CacheFolder.hash(source.file, buffer: &buffer) else { return .unusable }
            return .damaged(found: found)
        }
        if let target = cache.finalIdentity(feed: key.feed, path: key.path, folders: &folders), target.inode == UInt64(source.info.st_ino) {
            if record.inode == target.inode, record.mtime == target.mtime, record.length == target.size { return .ready(link: nil, target) }
            switch CacheFolder.hash(source.file, buffer: &buffer) {
            case .success(let (found, identity)): return found == sha256 ? .ready(link: nil, identity) : .damaged(found: found)
            case .failure: return .unusable
            }
        }
        let name = CacheLayout.sourceCopyName(feed: key.feed, path: key.path)
        // A link shares its owner and mode: only a file as prefetch would have made it is linked.
        let mayLink = source.info.st_uid == geteuid() && mode_t(source.info.st_mode) & 0o7777 == FileSystem.newFileMode
        guard case .success(let made) = cache.copySource(source, to: name, mayLink: mayLink) else { return .unusable }
        // A copy is new bytes in the cache: admitted at its full size, or not made (SPEC §9).
        if made == .copied, let allowance = cacheAllowance, !allowance.take(record.length) {
            cache.removeSourceCopy(name)
            return .unusable
        }
        if faults.reach(.sourceLink) != nil {
            cache.removeSourceCopy(name)
            return .unusable
        }
        let checked = cache.hashPartial(name, buffer: &buffer)
        guard case .success(let (found, identity)) = checked, found == sha256 else {
            cache.removeSourceCopy(name)
            if case .success(let (found, _)) = checked { return .damaged(found: found) }
            return .unusable
        }
        return .ready(link: name, identity)
    }

    /// A source whose bytes no longer match its record: removed and forgotten, as `verify`
    /// removes a copy that fails its check (SPEC §6), and said.
    private mutating func damaged(_ record: LocalSourceRecord, source: CacheFolder.OpenedSource, found: String, expected: String) {
        report(.sourceMismatch(record.key, expected: expected, found: found))
        do {
            if record.kept {
                _ = FileSystem.remove(source.leaf, in: source.folder)
                if let inode = record.inode { try state.forgetKept(record.key, inode: inode) }
            } else {
                _ = cache.removeFinal(feed: record.key.feed, path: record.key.path)
                try state.deleteResource(record.key)
            }
        } catch {
            report(.stateError("cannot record state: \(error)"))
        }
        summary.changedFeeds.insert(record.key.feed)
    }

    // MARK: Placing: renamed into place, recorded, committed after the folders' fsync

    private mutating func begin() {
        guard !open else { return }
        do {
            try state.begin()
            open = true
        } catch {
            report(.stateError("cannot record state: \(error)"))  // the jobs go to the engine
        }
    }

    /// Renames a staged link or copy into place and records the copy in the open transaction.
    private mutating func place(_ ready: Staged) {
        let key = ready.job.key
        if let link = ready.link {
            switch cache.place(partial: link, feed: key.feed, path: key.path, folders: &folders) {
            case .failure(let error):
                cache.removeSourceCopy(link)
                report(.stateError("cannot place \(key.feed)/\(key.path) from the cache: \(error)"))
                return
            case .success(let (folder, createdIn)):
                for synced in [folder] + createdIn { placedFolders[ObjectIdentifier(synced)] = synced }
            }
        }
        let sameURL = ready.record.servedBy == ready.job.urlHash
        do {
            // The source's validators only when the same URL served it (else none, and no URL served it).
            try state.recordValidated(key, urlHash: ready.job.urlHash, validators: sameURL ? ready.record.validators : Validators(),
                                      length: ready.record.length, sha256: ready.job.resource.sha256, placed: true,
                                      encoding: ready.job.resource.encoding, at: clock(), clearPartial: ready.job.partial != nil,
                                      file: ready.identity, keepingReplaced: ready.job.feed.feed.consistency == .release,
                                      servedByNone: !sameURL)
            placed.append(ready)
        } catch {  // placed, not recorded: the next pass revalidates it
            state.rollback()
            open = false
            placed.removeAll()
            placedFolders.removeAll()
            report(.stateError("cannot record state: \(error)"))
        }
    }

    /// fsyncs the folders the placed files were renamed into, then commits their records,
    /// then says them: a file is said placed only once state.db records it durably.
    private mutating func commit() {
        guard open else { return }
        open = false
        defer {
            placed.removeAll(keepingCapacity: true)
            placedFolders.removeAll()
        }
        if !cache.syncIsFree {
            for folder in placedFolders.values where folder.sync().isSuccess == false {
                state.rollback()
                report(.stateError("cannot fsync a folder of the cache: files placed from the cache are not recorded"))
                return
            }
        }
        do { try state.commit() } catch {  // rolled back
            report(.stateError("cannot record state: \(error)"))
            return
        }
        for ready in placed {
            let key = ready.job.key, bytes = ready.record.length
            if ready.job.partial != nil { cache.removePartial(CacheLayout.partialName(feed: key.feed, path: key.path)) }
            summary.count(.placed, feed: key.feed)
            summary.fromCache += 1
            summary.byFeed[key.feed, default: FeedTally()].reusedBytes += bytes
            summary.changedFeeds.insert(key.feed)
            report(.placedFromCache(key, bytes: bytes, from: ready.record.shown, seconds: Date().timeIntervalSince(ready.started)))
        }
    }
}
