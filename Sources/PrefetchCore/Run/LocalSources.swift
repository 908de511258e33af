import Foundation

/// The planner's view of SPEC §9's local sources: for a SHA-256 (and size), the first file
/// state.db records with it that is on disk with the recorded length, as `FEED/PATH`. Each
/// content is looked up once per plan; none is when state.db records no file with a SHA-256.
final class LocalSourceLookup: @unchecked Sendable {
    private let state: StateStore
    private let cache: CacheFolder
    private let lock = NSLock()
    private var known: [String: String?] = [:]

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
        let found = records.first { record in cache.openSource(record).map { UInt64($0.info.st_size) == record.length } ?? false }?.shown
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
    /// What the placements add to the pass's summary (placed, from the cache, reused bytes).
    private(set) var summary = EngineSummary()
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)
    private var folders: [String: FileDescriptor] = [:]

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
        for (index, job) in jobs.enumerated() {
            guard content.contains(index), let sha256 = job.resource.sha256 else {
                transfer.append(job)
                continue
            }
            if place(job, sha256: sha256) { continue }
            if leading.insert(sha256).inserted { transfer.append(job) } else { waiting.append(job) }
        }
        return (transfer, waiting)
    }

    /// Places `job` from the first recorded file that still holds `sha256`; false when none does.
    private mutating func place(_ job: TransferJob, sha256: String) -> Bool {
        let started = Date()
        let records = (try? state.localSources(sha256: sha256, length: job.resource.size)) ?? []
        for record in records {
            guard let source = cache.openSource(record) else {
                if record.kept, let inode = record.inode { try? state.forgetKept(record.key, inode: inode) }
                continue
            }
            switch copy(job, from: source, record: record, sha256: sha256) {
            case .placed(let identity):
                let sameURL = record.servedBy == job.urlHash
                guard recordPlaced(job, record: record, identity: identity, sameURL: sameURL) else { return true }
                summary.count(.placed, feed: job.key.feed)
                summary.fromCache += 1
                summary.byFeed[job.key.feed, default: FeedTally()].reusedBytes += record.length
                summary.changedFeeds.insert(job.key.feed)
                report(.placedFromCache(job.key, bytes: record.length, from: record.shown, seconds: Date().timeIntervalSince(started)))
                return true
            case .damaged(let found):
                damaged(record, source: source, found: found, expected: sha256)
            case .unusable:
                continue
            }
        }
        return false
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
        if let target = cache.finalIdentity(feed: key.feed, path: key.path), target.inode == UInt64(source.info.st_ino) {
            switch CacheFolder.hash(source.file, buffer: &buffer) {
            case .success(let (found, identity)): return found == sha256 ? .placed(identity) : .damaged(found: found)
            case .failure: return .unusable
            }
        }
        let name = CacheLayout.sourceCopyName(feed: key.feed, path: key.path)
        // A link shares its owner and mode: only a file as prefetch would have made it is linked.
        let mayLink = source.info.st_uid == geteuid() && mode_t(source.info.st_mode) & 0o7777 == FileSystem.newFileMode
        guard case .success = cache.copySource(source, to: name, mayLink: mayLink) else { return .unusable }
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
            if !cache.syncIsFree {
                for synced in [folder] + createdIn where synced.sync().isSuccess == false { return .unusable }
            }
            return .placed(identity)
        }
    }

    /// Records the copy placed at `job`'s key: the source's validators only when the source
    /// was served by the same URL (else none, and no URL served it).
    private func recordPlaced(_ job: TransferJob, record: LocalSourceRecord, identity: FileIdentity, sameURL: Bool) -> Bool {
        do {
            try state.recordValidated(job.key, urlHash: job.urlHash, validators: sameURL ? record.validators : Validators(),
                                      length: record.length, sha256: job.resource.sha256, placed: true, encoding: job.resource.encoding,
                                      at: clock(), file: identity, keepingReplaced: job.feed.feed.consistency == .release)
            if !sameURL { try state.recordServedByNone(job.key) }
            cache.removePartial(CacheLayout.partialName(feed: job.key.feed, path: job.key.path))
            return true
        } catch {
            report(.stateError("cannot record state: \(error)"))
            return false
        }
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
            guard let found = cache.finalIdentity(feed: key.feed, path: key.path) else { return false }
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
