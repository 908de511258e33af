/// One option of a command: declared once, read by both the parser and `help`.
public struct OptionSpec: Sendable {
    /// The long name, with its dashes (`--feeds`).
    public let name: String
    /// The value's placeholder (`DIR`); nil for a flag.
    public let value: String?
    /// Its help: one line, or a few separated by `\n` (each renderer indents or joins them).
    public let help: String
    /// The option it is shown with in usage: `--timeline` is an alternative to `--json`
    /// (`[--json | --timeline]`); `--days` is nested under `--timeline` (`[--timeline [--days N]]`).
    public let alternativeTo: String?
    public let within: String?

    public init(_ name: String, value: String? = nil, _ help: String, alternativeTo: String? = nil, within: String? = nil) {
        self.name = name
        self.value = value
        self.help = help
        self.alternativeTo = alternativeTo
        self.within = within
    }

    /// The name with its placeholder, as help lists it: `--feeds DIR`.
    public var synopsis: String { name + (value.map { " " + $0 } ?? "") }
}

/// An environment variable a command reads: declared once, read by `help` and the man page.
public struct EnvironmentSpec: Sendable {
    /// The variable (`PREFETCH_CLOCK_OFFSET`), or a few read alike (`http_proxy, https_proxy, no_proxy`).
    public let name: String
    /// Its help: one line, or a few separated by `\n`.
    public let help: String

    public init(_ name: String, _ help: String) {
        self.name = name
        self.help = help
    }
}

/// A subcommand in the shape of swift-argument-parser's `CommandConfiguration`.
public struct CommandSpec: Sendable {
    public let name: String
    /// One line saying what the command is for.
    public let abstract: String
    /// Positional arguments as shown in usage (`[FILE|DIR ...]`), with their help.
    public let arguments: (usage: String, help: String)?
    public let options: [OptionSpec]
    /// Paragraphs after the option list.
    public let discussion: String
    /// The environment variables it reads, listed after the discussion.
    public let environment: [EnvironmentSpec]
    /// False while the command's issue has not landed: it parses its options, then says so.
    public let available: Bool

    /// The synopsis line: `prefetch validate [FILE|DIR ...] [--config FILE]`.
    public var usage: String {
        var parts = ["prefetch", name]
        if let arguments { parts.append(arguments.usage) }
        func shown(_ option: OptionSpec) -> String {
            option.synopsis + options.filter { $0.within == option.name }.map { " [" + shown($0) + "]" }.joined()
        }
        for option in options where option.within == nil && option.alternativeTo == nil {
            let alternatives = options.filter { $0.alternativeTo == option.name }.map { " | " + shown($0) }.joined()
            parts.append("[" + shown(option) + alternatives + "]")
        }
        return parts.joined(separator: " ")
    }
}

/// The commands of SPEC §2.
public enum Commands {
    static let config = OptionSpec("--config", value: "FILE", "Configuration file (default: \(Config.defaultPath)).")
    static let feeds = OptionSpec("--feeds", value: "DIR", "Feeds folder (default: from the config, else /etc/prefetch/feeds).")
    static let cache = OptionSpec("--cache", value: "DIR", "Cache folder (default: from the config, else /var/cache/prefetch).")
    static let assume = OptionSpec("--assume", value: "K=V,...",
                                   "Override probes: network=metered|unmetered, power=ac|battery, battery=N, free=SIZE\n"
                                   + "(power=ac,battery=N: on the charger, with a level).")
    static let json = OptionSpec("--json", "Print one JSON object per line.")
    static let metricsFile = OptionSpec("--metrics-file", value: "PATH",
                                        "Write Prometheus metrics to PATH after every pass (default: the config's metrics_file).")

    /// The options of the program itself, in the overview (each command's own list has `--config`).
    public static let programOptions = [
        OptionSpec("--config", value: "FILE", "Configuration file (default: \(Config.defaultPath)); every command takes it."),
        OptionSpec("--version", "Show the version."),
    ]

    /// The environment variables a command that plans reads; `transfers`: and one that transfers.
    static func environment(transfers: Bool) -> [EnvironmentSpec] {
        var variables = [
            EnvironmentSpec("PREFETCH_CLOCK_OFFSET", "Shift the clock read, e.g. +2h or -90s (rehearse tonight now)."),
            EnvironmentSpec("PREFETCH_MACHINE_ID", "This machine's name for jitter (else machine_id, then /etc/machine-id)."),
        ]
        if transfers {
            variables += [
                EnvironmentSpec("PREFETCH_TRANSFER_THREADS", "Transfer threads, 1 to 64 (default: for 64 transfers or more, one per\n"
                                + "core up to 4, each keeping 4 connections and 1 per origin)."),
                EnvironmentSpec("PREFETCH_BOOT_ID", "This boot's id for partial trust (default: the kernel's); set another\n"
                                + "to rehearse a reboot."),
                EnvironmentSpec("http_proxy, https_proxy, no_proxy", "Proxies, as curl reads them; the config's proxy and no_proxy\n"
                                + "replace them."),
            ]
        }
        return variables
    }

    /// Every command, in the order help lists them.
    public static let all: [CommandSpec] = [
        CommandSpec(name: "plan", abstract: "Show what would run, when, and why not now.", arguments: nil,
                    options: [OptionSpec("--dry-run", "Accepted for clarity; plan never transfers."), feeds, cache,
                              OptionSpec("--at", value: "TIME", "Evaluate at TIME: RFC 3339, or HH:MM today in the system's zone."),
                              assume, json,
                              OptionSpec("--timeline", "Draw the plan as a picture: windows, releases, this machine's start,\nthe expected finish and what holds each feed back.", alternativeTo: "--json"),
                              OptionSpec("--days", value: "N", "Days the timeline shows, from local midnight of TIME's day: 1 to 14 (default 2).", within: "--timeline"),
                              config],
                    discussion: "Reads feeds and recorded state; never transfers and never writes the cache.\nStates: due, waiting, deferred, fresh, backoff, failed, expired. Exit 0 unless the feeds or options are wrong (2).\n"
                        + "A cached copy that no longer matches its entry (sha256, size, encoding, or url other than its query) is due\n"
                        + "at once: reason 'changed'. Times are compared to the nanosecond: refresh: 0s revalidates at every release,\n"
                        + "and without schedule or window at every run. Cron: a day field that begins with '*' keeps its step\n"
                        + "(0 12 */2 * 1 is Mondays on odd days of the month, as in Vixie cron).",
                    environment: environment(transfers: false), available: true),
        CommandSpec(name: "run", abstract: "Transfer what is due now, verify it and place it in the cache.", arguments: nil,
                    options: [feeds, cache, OptionSpec("--feed", value: "NAME", "Only this feed."), assume, json,
                              OptionSpec("--quiet", "Print only errors, and the summary of a failed run."), metricsFile, config],
                    discussion: "One pass, as a cron line or a systemd timer calls it. Exit 0 on success, 1 when a transfer failed, 75 when another writer holds the cache.\n"
                        + "Feed sources (the config's feed_sources) that are due are checked first; a source it covers that is stale\n"
                        + "or never applied makes it exit 1 (its copy in force, if any, still runs).\n"
                        + "Partials: within the boot that wrote them, the bytes on disk are trusted whole (a kill -9 loses nothing\n"
                        + "the kernel accepted); after a reboot only the offset recorded after an fsync.",
                    environment: environment(transfers: true), available: true),
        CommandSpec(name: "daemon", abstract: "Run forever, waking for each release, window and retry.", arguments: nil,
                    options: [feeds, cache, metricsFile, config],
                    discussion: "Holds the cache lock for its lifetime. SIGTERM/SIGINT stop resumably (exit 0), SIGHUP reloads feeds and checks every feed source, SIGUSR1 plans and runs now.",
                    environment: environment(transfers: true), available: true),
        CommandSpec(name: "status", abstract: "Show what is cached, partial transfers and the next wake-up.", arguments: nil,
                    options: [feeds, cache, json, config], discussion: "Reads only; never creates the cache.", environment: [], available: true),
        CommandSpec(name: "validate", abstract: "Check feed manifests and report every problem.",
                    arguments: ("[FILE|DIR ...]", "Manifests, or folders of them (default: the feeds folder)."),
                    options: [feeds, config],
                    discussion: "Each problem is printed as file:line:column: error: message, with the line and a caret.\nExit 0 when every manifest is valid (warnings allowed), 2 otherwise.",
                    environment: [], available: true),
        CommandSpec(name: "verify", abstract: "Re-hash cached files against their recorded SHA-256; remove those that changed.",
                    arguments: nil, options: [feeds, cache, OptionSpec("--feed", value: "NAME", "Only this feed."), json, config],
                    discussion: "Reads one file at a time with a 1 MiB buffer. A mismatch prints 'mismatch  FEED/PATH  expected HASH found HASH',\n"
                        + "removes the file and forgets its state, so the next run fetches it again; a file without a recorded\n"
                        + "hash is 'unverified' and left alone. Exit 1 when a file mismatched, 0 otherwise, 75 when another writer\n"
                        + "holds the cache lock.", environment: [], available: true),
        CommandSpec(name: "gc", abstract: "Remove expired, unlisted and abandoned files from the cache.", arguments: nil,
                    options: [feeds, cache, OptionSpec("--dry-run", "Only list what would be removed."), config],
                    discussion: "Exit 75 when another writer holds the cache lock. run does the same clean-up after each pass.", environment: [], available: true),
    ]

    /// The command named `name`.
    public static func named(_ name: String) -> CommandSpec? {
        all.first { $0.name == name }
    }
}
