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
        out += table(Commands.programOptions.map { ($0.synopsis, $0.help) } + [("-h, --help", "Show help.")])
        out += "\nCONFIGURATION (\(Config.defaultPath), or --config FILE; every key optional):\n"
        out += table(ConfigKey.all.map { ($0.name, $0.summary + "\n" + $0.form + "; default " + $0.defaultValue + ".") })
        out += "\nSee 'prefetch help <command>' for a command's options.\n"
        out += "The manual: " + manualFolder + ".\n"
        out += "commands.md has every command, manifests.md every manifest key, configuration.md every config key.\n"
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
            rows.append((option.synopsis, option.help))
        }
        rows.append(("-h, --help", "Show help for this command."))
        out += "\nOPTIONS:\n" + table(rows)
        if !spec.discussion.isEmpty { out += "\n" + spec.discussion + "\n" }
        if let notes = outputNotes(for: spec.name) { out += "\n" + notes + "\n" }
        if !spec.environment.isEmpty {
            out += "\nENVIRONMENT:\n" + table(spec.environment.map { ($0.name, $0.help) }, width: environmentWidth)
        }
        out += "\nMANUAL: commands.md, \"\(spec.name)\", in " + manualFolder + ".\n"
        return out
    }

    /// What a command prints about content the cache already holds (SPEC §9: local sources,
    /// pinned copies and deltas), after its discussion; the man page shows the same text.
    static func outputNotes(for command: String) -> String? {
        switch command {
        case "plan":
            return "Content the cache already holds (an entry's sha256) plans 'due', reason 'in cache (FEED/PATH)', 0B:\n"
                + "linked or copied from that file, no request. A copy of its sha256 that no URL gave a validator\n"
                + "is 'fresh', reason 'pinned': never requested, its bytes checked on disk instead.\n"
                + "An entry with 'zsync' and a copy (or a kept delta partial) plans 'changed (delta)' or 'stale (delta)';\n"
                + "plan --json rows carry 'zsync', and 'remaining' is the size plus its control file's bound."
        case "run":
            return "Content the cache already holds (an entry's sha256) is linked or copied from that file, never fetched:\n"
                + "'placed  FEED/PATH  SIZE (from FEED2/PATH2)', and the summary adds 'N from the cache'. A source whose\n"
                + "bytes changed is removed with a 'mismatch' line on stderr, and the resource is fetched.\n"
                + "An entry with 'zsync' fetches only the blocks its copy lacks (its control file first):\n"
                + "'placed  FEED/PATH  SIZE in T (delta: F fetched, R reused)'. When the delta cannot be used\n"
                + "(its control file missing or unusable, a server's ranges refused or stale, a mismatch):\n"
                + "'whole   FEED/PATH  delta not used: REASON (DETAIL)', and the file is fetched whole in the same run."
        case "verify":
            return "A file with several links (content that feeds share, a release's generations) is hashed once\n"
                + "and reported at every path that links it."
        case "gc":
            return "It also removes what a crash left between linking a file of the cache and placing it:\n"
                + "'removed  .prefetch/partial/HASH.link  (copy of a local source a run left)', and the delta\n"
                + "partials and control files (HASH.delta, HASH.zsync) of resources no longer listed with 'zsync'."
        default:
            return nil
        }
    }

    /// Where the manual (`docs/`) is: in the source tree, and where the Debian package puts it.
    static let manualFolder = "docs/ of the source, or /usr/share/doc/prefetch/docs/ when installed"

    /// The name column of ENVIRONMENT: the longest single variable (`PREFETCH_TRANSFER_THREADS`);
    /// a longer entry (the proxy variables) runs over it.
    static let environmentWidth = 25

    /// Two columns, the left one padded to `width` (default: its widest entry); a right cell's
    /// later lines are indented under its first.
    private static func table(_ rows: [(String, String)], width: Int? = nil) -> String {
        let width = width ?? rows.map(\.0.count).max() ?? 0
        let indent = String(repeating: " ", count: 2 + width + 2)
        var out = ""
        for (left, right) in rows {
            out += "  " + pad(left, width) + "  " + right.replacingOccurrences(of: "\n", with: "\n" + indent) + "\n"
        }
        return out
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
