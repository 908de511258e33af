/// Carries out the plan's room making under `max_cache_size` (SPEC §8) before a pass's
/// transfers start: each removal the plan chose, oldest placement first, said on a line of
/// its own (`removed  FEED/PATH  SIZE (room for max_cache_size)`, a `removed` event in
/// JSON); then the room the transfers may still take as their bodies arrive.
enum CacheRoomMaker {
    /// Removes what `plan` chose (each checked again to still be removable) and returns the
    /// allowance for the run's transfers. A removal that fails keeps its bytes counted.
    static func makeRoom(_ plan: CachePlan, cache: CacheFolder, state: StateStore, console: Console,
                         report: (RunEvent) -> Void) -> CacheAllowance {
        var kept: UInt64 = 0
        for room in plan.removals {
            switch cache.removeRoom(room) {
            case .success:
                switch room.kind {
                case .file(let path):
                    report(.removedForRoom(feed: room.feed, path: path, generation: nil, bytes: room.bytes))
                    try? state.deleteResource(ResourceKey(feed: room.feed, path: path))
                case .generation(let number):
                    report(.removedForRoom(feed: room.feed, path: nil, generation: number, bytes: room.bytes))
                }
            case .failure(let error):
                kept += room.bytes
                console.err("prefetch: warning: cannot remove \(room.label) to make room under max_cache_size: \(error)\n")
            }
        }
        return CacheAllowance(cap: plan.maxBytes, used: plan.usedAfter + kept)
    }
}
