/// `prefetch plan`: what would run, when, and why not now. Reads only; never creates the
/// cache folder or state.db.
enum PlanCommand {
    static func run(_ context: CommandContext) -> ExitCode {
        guard let config = context.loadConfig() else { return .usage }
        let now: Instant
        let assumptions: Assumptions
        do {
            now = try Clock.now(at: context.arguments["--at"], environment: context.environment)
            assumptions = try context.arguments["--assume"].map(Assumptions.parse) ?? Assumptions()
        } catch {
            return ExitCode(rawValue: Prefetch.fail(UsageError(error.message, command: "plan"), console: context.console)) ?? .usage
        }
        guard let feeds = context.loadFeeds(config) else { return .usage }
        let state = context.readState(cache: config.cache, feeds: feeds)
        let input = PlanInput(feeds: feeds, state: state, cached: CacheListing.present(feeds, cache: config.cache),
                              conditions: assumptions.snapshot(ConditionProbes(), config: config, cache: config.cache), now: now,
                              machineID: MachineID.find(environment: context.environment, config: config))
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

extension CommandContext {
    /// Loads the feeds folder of `config`; prints diagnostics; nil on any error.
    func loadFeeds(_ config: Config) -> [Feed]? {
        let loaded = FeedLoader.load([config.feeds], config: config)
        console.report(loaded.diagnostics, sources: loaded.sources)
        if loaded.hasErrors {
            let errors = loaded.diagnostics.filter { $0.severity == .error }.count
            console.err("prefetch: \(errors) error\(errors == 1 ? "" : "s") in the feeds; nothing was done\n")
            return nil
        }
        return loaded.feeds
    }

    /// The recorded state, or an empty one (with a warning) when state.db cannot be read.
    func readState(cache: String, feeds: [Feed]) -> StateSnapshot {
        let path = StateStore.path(inCache: cache)
        do {
            return try StateStore.openReadOnly(path, currentURL: Feed.urlLookup(feeds))?.snapshot() ?? StateSnapshot()
        } catch {
            console.err("\(path): warning: cannot read the state (\(error)); planning as if nothing were recorded\n")
            return StateSnapshot()
        }
    }
}
