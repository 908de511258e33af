import Foundation

/// The planner's view of SPEC §9's local sources: for a SHA-256 (and size), the first file
/// state.db records with it that is on disk with the recorded length, as `FEED/PATH`. Each
/// content is looked up once per plan; none is when state.db records no file with a SHA-256.
final class LocalSourceLookup: @unchecked Sendable {
    private let state: StateStore
    private let cache: CacheFolder
    private let lock = NSLock()
    private var known: [String: String?] = [:]
    private var folders: [String: FileDescriptor] = [:]

    private init(state: StateStore, cache: CacheFolder) {
        self.state = state
        self.cache = cache
    }

    /// The lookup for `PlanInput.localSource`, or nil when there is nothing to look in.
    static func make(state: StateStore, cache: CacheFolder) -> (@Sendable (String, UInt64?) -> String?)? {
        guard (try? state.hasLocalSources()) == true else { return nil }
        let lookup = LocalSourceLookup(state: state, cache: cache)
        return { sha256, size in lookup.find(sha256: sha256, size: size) }
    }

    private func find(sha256: String, size: UInt64?) -> String? {
        lock.lock()
        defer { lock.unlock() }
        let key = sha256 + ":" + (size.map(String.init) ?? "")
        if let found = known[key] { return found }
        let records = (try? state.localSources(sha256: sha256, length: size)) ?? []
        let found = records.first { record in
            cache.openSource(record, folders: &folders).map { UInt64($0.info.st_size) == record.length } ?? false
        }?.shown
        known[key] = found
        return found
    }
}

/// SPEC §9 in a pass: a due resource whose content a recorded file in the cache holds is
/// placed from it — linked (or copied) into the partial folder, hashed through the new name,
/// renamed into place, its folder fsynced, then recorded — with no request and no attempt.
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
    /// Files renamed into place and recorded in the open transaction, not yet committed: their
    /// folders are fsynced, then the transaction commits (`flush`), as the engine's group
    /// commits do; the lookups run inside it too (no lock taken per statement).
    private var pending: [(job: TransferJob, record: LocalSourceRecord, started: Date)] = []
    private var open = false
    private var pendingFolders: [ObjectIdentifier: FileDescriptor] = [:]
    private static let batch = 512

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
        for (index, job) in jobs.enumerated() {
            guard content.contains(index), let sha256 = job.resource.sha256 else {
                transfer.append(job)
                continue
            }
            if !open { begin() }
            if open, place(job, sha256: sha256) {
                if pending.count >= Self.batch { flush() }
                continue
            }
            if leading.insert(sha256).inserted { transfer.append(job) } else { waiting.append(job) }
        }
        flush()
        return (transfer, waiting)
    }

    private mutating func begin() {
        do {
            try state.begin()
            open = true
        } catch {
            report(.stateError("cannot record state: \(error)"))  // the jobs go to the engine
        }
    }

    /// fsyncs the folders the pending files were renamed into, then commits their records,
    /// then says them: a file is said placed only once state.db records it durably.
    private mutating func flush() {
        guard open else { return }
        open = false
        defer {
            pending.removeAll(keepingCapacity: true)
            pendingFolders.removeAll()
        }
        if !cache.syncIsFree {
            for folder in pendingFolders.values where folder.sync().isSuccess == false {
                state.rollback()
                report(.stateError("cannot fsync a folder of the cache: files placed from the cache are not recorded"))
                return
            }
        }
        do { try state.commit() } catch {  // rolled back
            report(.stateError("cannot record state: \(error)"))
            return
        }
        for placed in pending {
            let key = placed.job.key, bytes = placed.record.length
            if placed.job.partial != nil { cache.removePartial(CacheLayout.partialName(feed: key.feed, path: key.path)) }
            summary.count(.placed, feed: key.feed)
            summary.fromCache += 1
            summary.byFeed[key.feed, default: FeedTally()].reusedBytes += bytes
            summary.changedFeeds.insert(key.feed)
            report(.placedFromCache(key, bytes: bytes, from: placed.record.shown, seconds: Date().timeIntervalSince(placed.started)))
        }
    }

    /// Places `job` from the first recorded file that still holds `sha256`; false when none does.
    private mutating func place(_ job: TransferJob, sha256: String) -> Bool {
        let started = Date()
        var records = (try? state.localSources(sha256: sha256, length: job.resource.size, kept: false)) ?? []
        // Its own copy first (a URL that changed, same content): only its record changes.
        if let own = records.firstIndex(where: { $0.key == job.key }), own > 0 { records.insert(records.remove(at: own), at: 0) }
        if place(job, sha256: sha256, from: records, started: started) { return true }
        // The older generations' files, asked only when no copy at a path would do.
        return place(job, sha256: sha256, from: (try? state.keptSources(sha256: sha256, length: job.resource.size)) ?? [], started: started)
    }

    private mutating func place(_ job: TransferJob, sha256: String, from records: [LocalSourceRecord], started: Date) -> Bool {
        for record in records {
            // Its own copy, still the file placed (inode, mtime and size recorded): trusted as a
            // pinned copy is, with nothing opened; only its record changes.
            if record.key == job.key, !record.kept, let inode = record.inode,
               let target = cache.finalIdentity(feed: job.key.feed, path: job.key.path, folders: &folders),
               target == FileIdentity(inode: inode, mtime: record.mtime ?? Instant(nanoseconds: -1), size: record.length) {
                return recorded(job, record: record, identity: target, started: started)
            }
            guard let source = cache.openSource(record, folders: &folders) else {
                if record.kept, let inode = record.inode { try? state.forgetKept(record.key, inode: inode) }
                continue
            }
            switch copy(job, from: source, record: record, sha256: sha256) {
            case .placed(let identity):
                return recorded(job, record: record, identity: identity, started: started)
            case .damaged(let found):
                damaged(record, source: source, found: found, expected: sha256)
            case .unusable:
                continue
            }
        }
        return false
    }

    /// Records the copy placed at `job`'s key in the open transaction (committed by `flush`).
    private mutating func recorded(_ job: TransferJob, record: LocalSourceRecord, identity: FileIdentity, started: Date) -> Bool {
        do {
            try recordPlaced(job, record: record, identity: identity, sameURL: record.servedBy == job.urlHash)
            pending.append((job, record, started))
        } catch {  // placed, not recorded: the next pass revalidates it
            state.rollback()
            open = false
            pending.removeAll()
            pendingFolders.removeAll()
            report(.stateError("cannot record state: \(error)"))
        }
        return true
    }

    private enum CopyOutcome { case placed(FileIdentity), damaged(found: String), unusable }

    /// The source's bytes at `job`'s path: the same inode there already (only the record
    /// changes), or a link or copy checked and renamed into place, its folders fsynced.
    private mutating func copy(_ job: TransferJob, from source: CacheFolder.OpenedSource, record: LocalSourceRecord,
                               sha256: String) -> CopyOutcome {
        let key = job.key
        if UInt64(source.info.st_size) != record.length {  // cut short or grown since it was placed: damaged
            guard case .success(let (found, _)) = CacheFolder.hash(source.file, buffer: &buffer) else { return .unusable }
            return .damaged(found: found)
        }
        if let target = cache.finalIdentity(feed: key.feed, path: key.path, folders: &folders), target.inode == UInt64(source.info.st_ino) {
            // Still the file placed (inode, mtime and size recorded): trusted as a pinned copy is.
            if record.inode == target.inode, record.mtime == target.mtime, record.length == target.size { return .placed(target) }
            switch CacheFolder.hash(source.file, buffer: &buffer) {
            case .success(let (found, identity)): return found == sha256 ? .placed(identity) : .damaged(found: found)
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
        switch cache.place(partial: name, feed: key.feed, path: key.path, folders: &folders) {
        case .failure:
            cache.removeSourceCopy(name)
            return .unusable
        case .success(let (folder, createdIn)):
            for synced in [folder] + createdIn { pendingFolders[ObjectIdentifier(synced)] = synced }
            return .placed(identity)
        }
    }

    /// Records the copy placed at `job`'s key: the source's validators only when the source
    /// was served by the same URL (else none, and no URL served it).
    private func recordPlaced(_ job: TransferJob, record: LocalSourceRecord, identity: FileIdentity, sameURL: Bool) throws(SQLiteError) {
        try state.recordValidated(job.key, urlHash: job.urlHash, validators: sameURL ? record.validators : Validators(),
                                  length: record.length, sha256: job.resource.sha256, placed: true, encoding: job.resource.encoding,
                                  at: clock(), clearPartial: job.partial != nil, file: identity,
                                  keepingReplaced: job.feed.feed.consistency == .release, servedByNone: !sameURL)
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
}

/// SPEC §9's check of a pinned copy due for revalidation, with no request: it holds its pin
/// when its size, inode and mtime are the recorded ones, else when its bytes hash to it.
/// A writer (`recording`) records the copy as validated then (and its inode and mtime, when
/// they had changed); a mismatch leaves it to be fetched as a missing file.
enum PinnedCopyCheck {
    static func make(state: StateStore, cache: CacheFolder, recordingAt now: Instant?) -> @Sendable (ResourceKey, String) -> Bool {
        let check = Check(state: state, cache: cache, now: now)
        return { key, sha256 in check.holds(key, sha256) }
    }

    private final class Check: @unchecked Sendable {
        let state: StateStore
        let cache: CacheFolder
        let now: Instant?
        private let lock = NSLock()
        private var buffer: [UInt8] = []

        init(state: StateStore, cache: CacheFolder, now: Instant?) {
            self.state = state
            self.cache = cache
            self.now = now
        }

        func holds(_ key: ResourceKey, _ sha256: String) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            var folders: [String: FileDescriptor] = [:]
            guard let found = cache.finalIdentity(feed: key.feed, path: key.path, folders: &folders) else { return false }
            var changed = false
            if (try? state.fileIdentity(key)) != found {
                if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: 1 << 20) }
                var linked: [LinkedInode: String] = [:]
                guard case .success(let hash)? = cache.hashFinal(feed: key.feed, path: key.path, buffer: &buffer, linked: &linked),
                      hash == sha256 else { return false }
                changed = true
            }
            if let now {
                try? state.recordPinnedValidated(key, at: now, file: changed ? found : nil)
            }
            return true
        }
    }
}

/// Keeps state.db's older-generation sources (`kept_files`) to what is on disk.
enum LocalSourceRecords {
    /// Forgets `feed`'s older generations' files no longer found in its generations.
    static func forgetGone(feed: String, state: StateStore, cache: CacheFolder) throws(SQLiteError) {
        for (path, inode) in try state.keptFiles(feed: feed) {
            let record = LocalSourceRecord(key: ResourceKey(feed: feed, path: path), length: 0, inode: inode, mtime: nil, servedBy: "",
                                           validators: Validators(), kept: true)
            var folders: [String: FileDescriptor] = [:]
            if cache.openSource(record, folders: &folders) == nil { try state.forgetKept(record.key, inode: inode) }
        }
    }
}
