/// The planner's rule for an origin held after failures (SPEC §6).
extension Planner {
    /// A held origin (SPEC §6): what would be due or waiting waits for the hold's end,
    /// when one request probes the origin. Never believed beyond max_backoff from now.
    static func holdForOrigin(_ item: inout PlanItem, _ resource: Resource, state: ResourceState?, in context: FeedContext) {
        let holds = context.input.state.originHolds, now = context.now
        if !holds.isEmpty, item.status == .due || item.status == .waiting,
           let hold = Self.hold(of: resource, state: state, holds: holds, now: now) {
            item.status = .backoff
            item.reason = originHeldPrefix + hold.reason
            item.next = min(hold.until, now + context.feed.retry.maxBackoff)
            item.windowEnd = nil
        }
    }

    /// The hold a resource waits for (SPEC §6): its URL's origin's. With mirrors (§8) only
    /// when every listed URL's origin is held, and then the hold of the URL its pass would
    /// ask first (the one that served the copy, else `url`).
    static func hold(of resource: Resource, state: ResourceState?, holds: [String: OriginHold], now: Instant) -> OriginHold? {
        func held(_ url: ResourceURL) -> OriginHold? { holds[url.origin].flatMap { $0.until > now ? $0 : nil } }
        guard let mirrors = resource.mirrors else { return held(resource.url) }
        guard held(resource.url) != nil, mirrors.allSatisfy({ held($0) != nil }) else { return nil }
        if let hash = state?.servedBy?.hash, let served = mirrors.firstIndex(where: { $0.identityHash == hash }) {
            return held(mirrors[served])
        }
        return held(resource.url)
    }
}
