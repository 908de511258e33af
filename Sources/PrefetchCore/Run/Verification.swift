import Foundation

/// One verification of the cache (SPEC §6), for `prefetch verify` and the daemon's own:
/// every cached file with a recorded SHA-256 is hashed again, one at a time through a 1 MiB
/// buffer; a mismatch removes the file and forgets its state, and the feed's reader index
/// is written anew. A file without a recorded hash is said `unverified` and left alone.
enum Verification {
    struct Outcome {
        var verified = 0
        var mismatched = 0
        var unverified = 0
        var errors = 0
        /// Stopped before the last file (a signal, or the daemon's work came due): the
        /// position (over every feed's resources, in order) to go on from.
        var stoppedAt: Int?
        var stopped: Bool { stoppedAt != nil }
    }

    /// `stopRequested` is asked between files (the daemon's signals, and its next wake-up);
    /// `alive` is told after every MiB read (the daemon's watchdog). `from`: the position a
    /// verification that was stopped goes on from (the resources before it are left out).
    static func run(_ feeds: [Feed], cache: CacheFolder, state: StateStore, now: Instant, settings: Settings, console: Console,
                    json: Bool, from start: Int = 0, stopRequested: () -> Bool = { false }, alive: () -> Void = {}) -> Outcome {
        var outcome = Outcome()
        let snapshot: StateSnapshot
        do { snapshot = try state.snapshot() } catch {
            console.err("prefetch: error: cannot read \(state.path): \(error)\n")
            outcome.errors += 1
            return outcome
        }
        let cached = CacheListing.present(feeds, in: cache)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)  // one read at a time, for every file
        var linked: [LinkedInode: String] = [:]  // an inode with hard links is hashed once (SPEC §9)
        var changed: Set<String> = []
        var withdrawnFromLive: [String: [(path: String, state: String, reason: String)]] = [:]
        func say(_ type: String, _ key: ResourceKey, _ text: String, expected: String? = nil, found: String? = nil) {
            if json {
                var line = JSONObject()
                line.add("type", type); line.add("feed", key.feed); line.add("path", key.path)
                if type == "mismatch" { line.add("expected", expected); line.add("found", found) }
                console.out(line.line + "\n")
            } else if !text.isEmpty {
                console.out(text + "\n")
            }
        }
        var position = -1
        files: for feed in feeds {
            for (place, resource) in feed.resources.enumerated() {
                position += 1
                guard position >= start else { continue }
                if stopRequested() {
                    outcome.stoppedAt = position
                    break files
                }
                let key = ResourceKey(feed: feed.name, path: resource.path)
                guard cached.contains(feed: feed.name, position: place) else { continue }
                let name = "\(feed.name)/\(resource.path)"
                guard let expected = snapshot.resources[key]?.sha256 else {
                    outcome.unverified += 1
                    say("unverified", key, "unverified  \(name)  (no recorded SHA-256)")
                    continue
                }
                switch cache.hashFinal(feed: feed.name, path: resource.path, buffer: &buffer, linked: &linked, between: alive) {
                case nil: continue  // gone since the listing
                case .failure(let error)?:
                    outcome.errors += 1
                    console.err("prefetch: error: cannot read \(cache.path)/\(name): \(error)\n")
                case .success(let found)? where found == expected:
                    outcome.verified += 1
                    say("verified", key, "")
                case .success(let found)?:
                    outcome.mismatched += 1
                    say("mismatch", key, "mismatch  \(name)  expected \(expected) found \(found)", expected: expected, found: found)
                    switch cache.removeFinal(feed: feed.name, path: resource.path) {
                    case .failure(let error):
                        outcome.errors += 1
                        console.err("prefetch: error: cannot remove \(cache.path)/\(name): \(error)\n")
                    case .success(true): withdrawnFromLive[feed.name, default: []].append((resource.path, "missing", "failed verification"))
                    case .success(false): break
                    }
                    do { try state.deleteResource(key) } catch {
                        outcome.errors += 1
                        console.err("prefetch: error: cannot record state: \(error)\n")
                    }
                    changed.insert(feed.name)
                }
            }
        }
        if !changed.isEmpty, let after = try? state.snapshot() {
            let cachedAfter = CacheListing.present(feeds, in: cache)
            let plan = Planner.plan(PlanInput(feeds: feeds, state: after, cached: cachedAfter,
                                              conditions: ConditionProbes(environment: settings.environment).snapshot(config: settings.config, cache: settings.config.cache),
                                              now: now, machineID: settings.machineID,
                                              partialFiles: CacheListing.partialFiles(after, in: cache), bootID: settings.bootID))
            IndexWriter.write(feeds.filter { changed.contains($0.name) }, plan: plan, state: after, cached: cachedAfter, cache: cache,
                              now: now, console: console)
        }
        for feed in feeds { IndexWriter.withdraw(withdrawnFromLive[feed.name] ?? [], feed: feed, cache: cache, now: now, console: console) }
        if json {
            var line = JSONObject()
            line.add("type", "summary")
            line.add("verified", Int64(outcome.verified)); line.add("mismatched", Int64(outcome.mismatched))
            line.add("unverified", Int64(outcome.unverified)); line.add("errors", Int64(outcome.errors))
            console.out(line.line + "\n")
        } else {
            console.out("verify: \(outcome.verified) verified, \(outcome.mismatched) mismatched (removed), \(outcome.unverified) unverified\n")
        }
        return outcome
    }
}
