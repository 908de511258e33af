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
