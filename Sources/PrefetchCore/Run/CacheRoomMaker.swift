/// Carries out the plan's room making under `max_cache_size` (SPEC §8) before a pass's
/// transfers start: each removal the plan chose, oldest placement first, said on stderr;
/// then the room the transfers may still take as their bodies arrive.
enum CacheRoomMaker {
    /// Removes what `plan` chose (each checked again to still be removable) and returns the
    /// allowance for the run's transfers. A removal that fails keeps its bytes counted.
    static func makeRoom(_ plan: CachePlan, cache: CacheFolder, state: StateStore, console: Console) -> CacheAllowance {
        var kept: UInt64 = 0
        for room in plan.removals {
            switch cache.removeRoom(room) {
            case .success:
                console.err("prefetch: removed \(room.label) (\(ByteSize.format(room.bytes))) to make room under max_cache_size\n")
                if case .file(let path) = room.kind { try? state.deleteResource(ResourceKey(feed: room.feed, path: path)) }
            case .failure(let error):
                kept += room.bytes
                console.err("prefetch: warning: cannot remove \(room.label) to make room under max_cache_size: \(error)\n")
            }
        }
        return CacheAllowance(cap: plan.maxBytes, used: plan.usedAfter + kept)
    }
}
