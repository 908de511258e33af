/// The planner's part of SPEC §9's deltas.
extension Planner {
    /// A row that will try a delta — its entry has a control file and an effective `encoding`
    /// of `refuse`, and it has a seed (its cached copy, or a delta partial kept for resume) —
    /// says `(delta)` after its reason; its `remaining` is what the kept partial still misses,
    /// else its whole size and the control file's bound; the metered budget admits it on its
    /// first step, the control file (its bound).
    static func planDelta(_ item: inout PlanItem, _ resource: Resource, cached: Bool, bytes: UInt64?, reason: inout String,
                          budgetNeed: inout UInt64?, in context: FeedContext) {
        let kept = context.input.state.deltaPartials.isEmpty ? nil
            : context.input.state.deltaPartials[ResourceKey(feed: context.feed.name, path: resource.path)]
        guard cached || kept != nil else { return }
        reason += " (delta)"
        item.remaining = kept.map(\.missing) ?? bytes.map { $0 + ZsyncControl.bound(size: resource.size) }
        budgetNeed = ZsyncControl.bound(size: resource.size)
    }
}
