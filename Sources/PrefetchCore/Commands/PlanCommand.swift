/// `prefetch plan`: what would run, when, and why not now. Reads only; never creates the
/// cache folder or state.db.
enum PlanCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        let settings: Settings
        switch Settings.load(context, command: "plan") {
        case .success(let loaded): settings = loaded
        case .failure(let code): return code
        }
        let config = settings.config
        guard let feeds = context.loadFeeds(config) else { return .usage }
        let state = context.readState(cache: config.cache, feeds: feeds)
        let input = PlanInput(feeds: feeds, state: state, cached: CacheListing.present(feeds, in: CacheFolder.openExisting(config.cache)),
                              conditions: settings.assumptions.snapshot(ConditionProbes(environment: settings.environment), config: config, cache: config.cache),
                              now: settings.now(), machineID: settings.machineID)
        let plan = Planner.plan(input)
        let renderer = PlanRenderer(color: context.console.colorOut)
        if context.arguments.flags.contains("--json") {
            renderer.json(plan, to: context.console.out)
        } else {
            renderer.text(plan, to: context.console.out)
        }
        return .success
    }
}
