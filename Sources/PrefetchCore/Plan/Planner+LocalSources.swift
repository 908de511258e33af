/// The planner's rules for content already in the cache (SPEC §9): a row a local source
/// gives, and a pinned copy.
extension Planner {
    /// A row whose content a local source holds (SPEC §9): it follows `not_before` and the
    /// window (and its jitter), not the conditions, the metered budget or an origin's hold;
    /// due with the reason `in cache (FEED/PATH)` and nothing to fetch.
    static func planFromCache(_ item: inout PlanItem, _ resource: Resource, source: String, in context: FeedContext) {
        if !deferred(&item, resource, in: context) {
            item.status = .due
            item.reason = localSourcePrefix + source + ")"
            item.remaining = 0
            item.windowEnd = context.windowEnd
            item.nextOpening = context.openingAfter
        }
    }

    /// A pinned copy (SPEC §9): its entry has `sha256`, the copy is of it, and none of the
    /// entry's URLs gave it a validator — a request could bring only the same bytes.
    static func isPinned(_ sha256: String, _ state: ResourceState) -> Bool {
        state.sha256 == sha256 && state.validators.etag == nil && state.validators.lastModified == nil
            && (state.servedBy?.validators.values.allSatisfy { $0.etag == nil && $0.lastModified == nil } ?? true)
    }

    /// The reason of a fresh pinned copy's row.
    static let pinnedReason = "pinned"

    /// The reason of a row placed from a local source: `in cache (FEED/PATH)`.
    static let localSourcePrefix = "in cache ("
}
