extension Settings {
    /// Loads the config and parses everything else `command` reads: every bad value is
    /// reported (one `prefetch: error:` line each, then the usage once), and the result is
    /// the exit status to use (2). Only a command that transfers reads
    /// `PREFETCH_TRANSFER_THREADS`.
    static func load(_ context: CommandContext, command: String) -> Result<Settings, ExitCode> {
        guard let config = context.loadConfig() else { return .failure(.usage) }
        let environment = context.environment
        var errors: [String] = []
        func parse<T>(_ body: () throws(ValueError) -> T, else fallback: T) -> T {
            do { return try body() } catch {
                errors.append(error.message)
                return fallback
            }
        }
        let offset = parse({ () throws(ValueError) in try Clock.offset(environment: environment) }, else: .zero)
        let at = parse({ () throws(ValueError) -> Instant? in
            try context.arguments["--at"].map { (text: String) throws(ValueError) in try Clock.now(at: text, environment: environment) }
        }, else: nil)
        let transfers = command == "run" || command == "daemon"
        let threads = transfers ? parse({ () throws(ValueError) in try transferThreads(environment: environment) }, else: nil) : nil
        let faults = transfers ? parse({ () throws(ValueError) in try FaultPoints.parse(environment: environment) }, else: .none) : .none
        let assumptions = parse({ () throws(ValueError) in try context.arguments["--assume"].map(Assumptions.parse) ?? Assumptions() },
                                else: Assumptions())
        guard errors.isEmpty else {
            for message in errors.dropLast() { context.console.err("prefetch: error: \(message)\n") }
            return .failure(ExitCode(rawValue: Prefetch.fail(UsageError(errors.last!, command: command), console: context.console)) ?? .usage)
        }
        return .success(Settings(config: config, clockOffset: offset, at: at, transferThreads: threads,
                                 machineID: MachineID.find(environment: environment, config: config),
                                 bootID: BootID.current(environment: environment), assumptions: assumptions, faults: faults,
                                 environment: environment, metricsFile: transfers ? context.arguments["--metrics-file"] ?? config.metricsFile : nil))
    }
}
