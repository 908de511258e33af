/// The help pages, generated from the command table.
public enum HelpText {
    /// The program's version.
    public static let version = ProgramVersion.text

    /// `prefetch help`.
    public static var overview: String {
        let width = Commands.all.map(\.name.count).max() ?? 0
        var out = "OVERVIEW: Preload content into a local cache before anyone needs it.\n\n"
        out += "USAGE: prefetch <command> [options]\n\nCOMMANDS:\n"
        for command in Commands.all {
            out += "  " + pad(command.name, width) + "  " + command.abstract
            out += command.available ? "\n" : " (not available yet)\n"
        }
        out += "  " + pad("help", width) + "  Show help for prefetch or one of its commands.\n"
        out += "\nOPTIONS:\n"
        out += "  --config FILE  Configuration file (default: \(Config.defaultPath)); every command takes it.\n"
        out += "  --version      Show the version.\n"
        out += "  -h, --help     Show help.\n"
        out += "\nSee 'prefetch help <command>' for a command's options.\n"
        return out
    }

    /// `prefetch help COMMAND`.
    public static func page(for spec: CommandSpec) -> String {
        var out = "OVERVIEW: \(spec.abstract)\n"
        if !spec.available { out += "(Not available yet in prefetch \(version).)\n" }
        out += "\nUSAGE: \(spec.usage)\n"
        var rows: [(String, String)] = []
        if let arguments = spec.arguments {
            out += "\nARGUMENTS:\n"
            out += "  \(arguments.usage)\n        \(arguments.help)\n"
        }
        for option in spec.options {
            rows.append((option.name + (option.value.map { " " + $0 } ?? ""), option.help))
        }
        rows.append(("-h, --help", "Show help for this command."))
        let width = rows.map(\.0.count).max() ?? 0
        out += "\nOPTIONS:\n"
        for (left, right) in rows { out += "  " + pad(left, width) + "  " + right + "\n" }
        if !spec.discussion.isEmpty { out += "\n" + spec.discussion + "\n" }
        return out
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
