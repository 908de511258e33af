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
        guard let feeds = context.loadFeeds(config) else { return .usage }
        let state = context.readState(cache: config.cache, feeds: feeds)
        let cache = CacheFolder.openExisting(config.cache)  // reads only: creates nothing
        let input = PlanInput(feeds: feeds, state: state, cached: CacheListing.present(feeds, in: cache),
                              conditions: settings.assumptions.snapshot(ConditionProbes(environment: settings.environment), config: config, cache: config.cache),
                              now: settings.now(), machineID: settings.machineID,
                              partialFiles: CacheListing.partialFiles(state, in: cache), bootID: settings.bootID)
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
        if flags.contains("--json") {
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
