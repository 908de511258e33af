import Foundation

/// The `prefetch` program: argv in, exit status out.
public enum Prefetch {
    /// Runs the command line `arguments` (without the program name).
    public static func main(_ arguments: [String], environment: [String: String], console: Console) -> Int32 {
        guard let first = arguments.first else {
            console.err(HelpText.overview)
            return ExitCode.usage.rawValue
        }
        switch first {
        case "--version", "-V":
            console.out("prefetch \(HelpText.version)\n")
            return ExitCode.success.rawValue
        case "--help", "-h":
            console.out(HelpText.overview)
            return ExitCode.success.rawValue
        case "help":
            let rest = arguments.dropFirst().filter { $0 != "--help" && $0 != "-h" }
            guard let topic = rest.first else {
                console.out(HelpText.overview)
                return ExitCode.success.rawValue
            }
            // What the package installs, generated from the same table: prefetch(1) and
            // the bash completion script.
            if rest == ["--man"] {
                console.out(ManPage.text)
                return ExitCode.success.rawValue
            }
            if rest == ["--bash-completion"] {
                console.out(BashCompletion.script)
                return ExitCode.success.rawValue
            }
            guard rest.count == 1, let spec = Commands.named(topic) else {
                return fail(UsageError(rest.count == 1 ? "unknown command '\(topic)'" : "help takes one command", command: nil), console: console)
            }
            console.out(HelpText.page(for: spec))
            return ExitCode.success.rawValue
        default:
            break
        }
        guard let spec = Commands.named(first) else {
            var message = "unknown command '\(first)'"
            if let guess = Suggestion.closest(to: first, among: Commands.all.map(\.name) + ["help"]) {
                message += " (did you mean '\(guess)'?)"
            }
            return fail(UsageError(message, command: nil), console: console)
        }
        let parsed: ParsedArguments
        do {
            parsed = try ArgumentParser.parse(Array(arguments.dropFirst()), for: spec)
        } catch {
            return fail(error, console: console)
        }
        if parsed.wantsHelp {
            console.out(HelpText.page(for: spec))
            return ExitCode.success.rawValue
        }
        // JSON lines are read by programs: no journal priority prefix before them (SPEC §6).
        let context = CommandContext(arguments: parsed, environment: environment,
                                     console: parsed.flags.contains("--json") ? console.forJSON() : console)
        let code: ExitCode
        switch spec.name {
        case "validate":
            code = ValidateCommand.run(context)
        case "plan":
            code = PlanCommand.run(context)
        case "run":
            code = RunCommand.run(context)
        case "daemon":
            code = DaemonCommand.run(context)
        case "gc":
            code = GCCommand.run(context)
        case "status":
            code = StatusCommand.run(context)
        case "verify":
            code = VerifyCommand.run(context)
        default:
            console.err("prefetch: '\(spec.name)' is not available yet in prefetch \(HelpText.version); see 'prefetch help'\n")
            code = .usage
        }
        return code.rawValue
    }

    /// Prints a usage error with the usage line; returns exit status 2.
    static func fail(_ error: UsageError, console: Console) -> Int32 {
        var text = "prefetch: error: \(error.message)\n"
        if let name = error.command, let spec = Commands.named(name) {
            text += "Usage: \(spec.usage)\nSee 'prefetch help \(name)'.\n"
        } else {
            text += "Usage: prefetch <command> [options]\nSee 'prefetch help'.\n"
        }
        console.err(text)
        return ExitCode.usage.rawValue
    }
}
