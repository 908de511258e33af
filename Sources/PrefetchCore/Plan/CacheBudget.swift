/// SPEC §8's cache size cap, decided before transfers start: which due resources are
/// admitted under `max_cache_size`, which are deferred, and what is removed to make room.
/// Pure: the due list, the bytes in use and the removable files come in; nothing is read.
///
/// The rule, in SPEC's words:
/// - due resources are taken in the order high, normal, low priority, then feed name, then
///   manifest order;
/// - one whose size alone is larger than the cap is `larger than max_cache_size`;
/// - one that would pass the cap is skipped (`cache full`) and the next is tried: a smaller
///   one may fit;
/// - room is made first, oldest placement first, from the removable candidates (unlisted
///   files of `prune: false` feeds with `consistency: file`, previous generations of
///   `release` feeds live for 60 s): as few as make it fit, and none when even all of them
///   would not;
/// - a resource of unknown size takes no room here: the transfer is held to the cap as its
///   `Content-Length` and body arrive (`CacheAllowance`).
public enum CacheBudget {
    /// One due resource.
    public struct Request: Sendable, Equatable {
        public var priority: Priority
        public var feed: String
        /// Its place in its feed's manifest.
        public var index: Int
        /// The file's expected size (`size`, for `decode` the decoded size, else the last
        /// recorded length); nil when not known.
        public var bytes: UInt64?
        /// How much the cache grows when it is placed: `bytes` less the bytes of the copy
        /// it replaces and of its partial already on disk (both already in use).
        public var need: UInt64?

        public init(priority: Priority, feed: String, index: Int, bytes: UInt64?, need: UInt64?) {
            self.priority = priority
            self.feed = feed
            self.index = index
            self.bytes = bytes
            self.need = need
        }
    }

    /// Something that may be removed to make room: the bytes its removal frees, and when it
    /// was placed.
    public struct Candidate: Sendable, Equatable {
        public var bytes: UInt64
        public var placed: Instant

        public init(bytes: UInt64, placed: Instant) {
            self.bytes = bytes
            self.placed = placed
        }
    }

    public enum Verdict: Sendable, Equatable {
        case admitted
        /// `deferred`, `cache full (max_cache_size)`.
        case cacheFull
        /// `deferred`, `larger than max_cache_size`.
        case tooLarge
    }

    public struct Decision: Sendable, Equatable {
        /// One per request, in the requests' order.
        public var verdicts: [Verdict]
        /// The candidates to remove (indexes into the candidates), in the order they go.
        public var removals: [Int]
        /// The bytes in use once the removals are made and the admitted are placed.
        public var used: UInt64
    }

    public static let cacheFullReason = "cache full (max_cache_size)"
    public static let tooLargeReason = "larger than max_cache_size"

    static func rank(_ priority: Priority) -> Int { priority == .high ? 0 : priority == .normal ? 1 : 2 }

    /// Decides for `requests` under `cap`, with `used` bytes in use and `candidates` removable.
    public static func decide(cap: UInt64, used: UInt64, requests: [Request], candidates: [Candidate]) -> Decision {
        // Admission order: priority, feed name (bytewise), manifest order.
        let order = requests.indices.sorted { a, b in
            let x = requests[a], y = requests[b]
            if rank(x.priority) != rank(y.priority) { return rank(x.priority) < rank(y.priority) }
            if x.feed != y.feed { return Array(x.feed.utf8).lexicographicallyPrecedes(Array(y.feed.utf8)) }
            if x.index != y.index { return x.index < y.index }
            return a < b
        }
        // Room, oldest placement first (ties: the candidates' own order).
        let room = candidates.indices.sorted { (candidates[$0].placed, $0) < (candidates[$1].placed, $1) }
        var next = 0  // the first candidate of `room` not yet removed
        var verdicts = [Verdict](repeating: .admitted, count: requests.count)
        var removals: [Int] = []
        var used = used
        for index in order {
            let request = requests[index]
            if let bytes = request.bytes, bytes > cap {
                verdicts[index] = .tooLarge
                continue
            }
            let need = request.need ?? 0
            if used + need <= cap {
                used += need
                continue
            }
            // As few of the oldest as make it fit; none when all of them would not.
            var freed: UInt64 = 0
            var take = next
            while take < room.count, used - min(used, freed) + need > cap {
                freed += candidates[room[take]].bytes
                take += 1
            }
            if used - min(used, freed) + need > cap {
                verdicts[index] = .cacheFull
                continue
            }
            removals += room[next..<take]
            next = take
            used = used - min(used, freed) + need
        }
        return Decision(verdicts: verdicts, removals: removals, used: used)
    }
}
