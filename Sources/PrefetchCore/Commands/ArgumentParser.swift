/// A usage error: printed with the command's usage line, exit status 2.
public struct UsageError: Error, Sendable, Equatable {
    public let message: String
    /// The command whose usage to show; nil for the top level.
    public let command: String?

    public init(_ message: String, command: String?) {
        self.message = message
        self.command = command
    }
}

/// Parsed arguments of one command.
public struct ParsedArguments: Sendable, Equatable {
    public var command: String
    /// Options with values, by long name (`--feeds` → `feeds/`); the last one given wins.
    public var values: [String: String] = [:]
    /// Flags that were given.
    public var flags: Set<String> = []
    public var positionals: [String] = []
    /// True for `--help`/`-h`.
    public var wantsHelp = false

    /// The value of an option, by its long name.
    public subscript(_ name: String) -> String? { values[name] }
}

/// The hand-written argument parser, reading each command's option table.
public enum ArgumentParser {
    /// Parses the arguments after the command name.
    public static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments(command: spec.name)
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || !argument.hasPrefix("-") || argument == "-" {
                guard spec.arguments != nil else {
                    throw UsageError("unexpected argument '\(argument)'", command: spec.name)
                }
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" { onlyPositionals = true; continue }
            if argument == "--help" || argument == "-h" { parsed.wantsHelp = true; continue }
            var name = argument
            var inline: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                var message = "unknown option '\(name)'"
                if let guess = Suggestion.closest(to: name, among: spec.options.map(\.name)) {
                    message += " (did you mean '\(guess)'?)"
                }
                throw UsageError(message, command: spec.name)
            }
            if let placeholder = option.value {
                let value: String
                if let inline {
                    value = inline
                } else {
                    guard index < arguments.count else {
                        throw UsageError("option '\(name)' needs a value (\(placeholder))", command: spec.name)
                    }
                    value = arguments[index]
                    index += 1
                }
                if value.isEmpty { throw UsageError("option '\(name)' needs a value (\(placeholder))", command: spec.name) }
                parsed.values[name] = value
            } else {
                if inline != nil { throw UsageError("option '\(name)' takes no value", command: spec.name) }
                parsed.flags.insert(name)
            }
        }
        return parsed
    }
}
