import Foundation

/// `prefetch plan`: what would run, when, and why not now. Reads only; never creates the
/// cache folder or state.db.
enum PlanCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        let flags = context.arguments.flags
        if flags.contains("--timeline") && flags.contains("--json") {
            return fail("--timeline and --json cannot be used together", context)
        }
        var days = 2
        if let text = context.arguments["--days"] {
            guard flags.contains("--timeline") else { return fail("--days is for --timeline", context) }
            guard text.allSatisfy(\.isASCII), let n = Int(text), text.first != "+", (1...14).contains(n) else {
                return fail("--days must be a whole number from 1 to 14, not '\(text)'", context)
            }
            days = n
        }
        let settings: Settings
        switch Settings.load(context, command: "plan") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let config = settings.config
        guard let set = context.loadFeedSet(config) else { return .usage }
        let feeds = set.all
        let (state, store) = context.readStateKeepingStore(cache: config.cache, feeds: feeds)
        let cache = CacheFolder.openExisting(config.cache)  // reads only: creates nothing
        var input = PlanInput(feeds: feeds, state: state, cached: CacheListing.present(feeds, in: cache),
                              conditions: settings.assumptions.snapshot(ConditionProbes(environment: settings.environment), config: config, cache: config.cache),
                              now: settings.now(), machineID: settings.machineID,
                              partialFiles: CacheListing.partialFiles(state, in: cache), bootID: settings.bootID)
        input.measureCache(config.maxCacheSize, in: cache)
        if let store, let cache {
            input.localSource = LocalSourceLookup.make(state: store, cache: cache)
            input.pinnedCopyHolds = PinnedCopyCheck.make(state: store, cache: cache, recordingAt: nil)
        }
        let plan = Planner.plan(input)
        if flags.contains("--timeline") {
            let byName = Dictionary(feeds.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            let timings = plan.feeds.compactMap { byName[$0.name].map { FeedTiming($0, machineID: settings.machineID?.usableValue) } }
            let system = ZoneCatalog.system
            let timeline = Timeline.build(plan, timings: timings, days: days, clock: ZoneClock(system.zone), zoneName: system.name)
            let renderer = TimelineRenderer(width: context.console.outColumns ?? 100, color: context.console.colorOut)
            context.console.out(renderer.text(timeline))
            return .success
        }
        let renderer = PlanRenderer(color: context.console.colorOut)
        // Feed sources first (SPEC §8): the plan is made from their copies in force.
        let records = (try? context.openStateReadOnly(cache: config.cache, feeds: feeds)?.sourceStates()) ?? [:]
        let zone = ZoneClock(TimeZone.current)
        let json = flags.contains("--json")
        var sourceLines = ""
        for view in set.sources {
            let status = SourceStatus(view, record: records[view.source.label], now: input.now)
            sourceLines += json ? SourceReport.json(status, clock: zone) : SourceReport.text(status, clock: zone)
        }
        if !sourceLines.isEmpty { context.console.out(sourceLines + (json ? "" : "\n")) }
        if json {
            renderer.json(plan, to: context.console.out)
        } else {
            renderer.text(plan, to: context.console.out)
        }
        return .success
    }

    private static func fail(_ message: String, _ context: CommandContext) -> ExitCode {
        ExitCode(rawValue: Prefetch.fail(UsageError(message, command: "plan"), console: context.console)) ?? .usage
    }
}
