import Foundation

/// Renders a run's events: JSON lines, plain log lines, or live progress bars on a terminal.
final class RunReporter {
    private var saidStateError = false
    /// State writes that failed, said or not: a pass with one exits 1 (SPEC §5: the cache
    /// could not be written).
    private(set) var stateErrors = 0
    enum Mode { case json, plain, terminal }

    private let mode: Mode
    private let quiet: Bool
    private let console: Console
    private var drawnLines = 0
    private var lastProgress: [TransferProgress] = []
    private var lastJSONProgress = Date.distantPast

    /// The daemon's passes stay silent when they did nothing.
    private let silentWhenIdle: Bool
    /// Plain output (a log, the journal) gets the running transfers' figures this often,
    /// as aria2c's summary does: a long transfer is not silent until it ends.
    private let progressInterval: TimeInterval
    private let now: () -> Date
    private var lastPlainProgress: Date
    /// Told every event too (the daemon's systemd status), before it is rendered.
    private let observe: ((RunEvent) -> Void)?

    init(mode: Mode, quiet: Bool, console: Console, silentWhenIdle: Bool = false,
         progressInterval: TimeInterval = 60, now: @escaping () -> Date = Date.init, observe: ((RunEvent) -> Void)? = nil) {
        self.observe = observe
        self.mode = mode
        self.quiet = quiet
        self.console = console
        self.silentWhenIdle = silentWhenIdle
        self.progressInterval = progressInterval
        self.now = now
        self.lastPlainProgress = now()
    }

    private func name(_ key: ResourceKey) -> String { key.feed + "/" + key.path }

    /// Why a file or generation went before the transfers (SPEC §8).
    static let roomReason = "room for max_cache_size"

    func handle(_ event: RunEvent) {
        observe?(event)
        if case .stateError = event {  // said once a run, whichever part could not write
            stateErrors += 1
            guard !saidStateError else { return }
            saidStateError = true
        }
        if case .progress = event { flush() }  // lines reach the log at least every quarter second
        switch mode {
        case .json: json(event)
        case .plain, .terminal: text(event)
        }
        switch event {
        case .paused, .retrying, .heldWithOrigin, .failed, .stateError, .held, .nextURL: flush()  // rare, and worth seeing at once
        case .started, .progress, .placed, .fresh, .removedForRoom, .placedFromCache, .sourceMismatch, .placedByDelta, .deltaNotUsed: break
        }
    }

    private func json(_ event: RunEvent) {
        var line = JSONObject()
        func key(_ type: String, _ key: ResourceKey) {
            line.add("type", type)
            line.add("feed", key.feed)
            line.add("path", key.path)
        }
        switch event {
        case .started(let k, let url, let total, let resumeAt):
            key("start", k); line.add("url", url); line.add("bytes", total); line.add("resume_at", resumeAt)
        case .progress(let transfers):
            guard Date().timeIntervalSince(lastJSONProgress) >= 1 else { return }
            lastJSONProgress = Date()
            for transfer in transfers {
                var row = JSONObject()
                row.add("type", "progress"); row.add("feed", transfer.key.feed); row.add("path", transfer.key.path)
                row.add("bytes", transfer.bytes); row.add("total", transfer.total); row.add("rate_bps", transfer.rate)
                row.add("receiving", transfer.receiving)
                out(row.line + "\n")
            }
            return
        case .placed(let k, let bytes, let received, let resumedAt, let seconds, let refused):
            key("placed", k); line.add("bytes", bytes); line.add("seconds", seconds)
            line.add("transferred", received); line.add("resumed_at", resumedAt); line.add("resume_refused_at", refused)
            line.add("from", nil as String?); line.add("fetched", received); line.add("reused", UInt64(0))
        case .placedFromCache(let k, let bytes, let from, let seconds):
            key("placed", k); line.add("bytes", bytes); line.add("seconds", seconds)
            line.add("transferred", UInt64(0)); line.add("resumed_at", UInt64(0)); line.add("resume_refused_at", UInt64(0))
            line.add("from", from); line.add("fetched", UInt64(0)); line.add("reused", bytes)
        case .placedByDelta(let k, let bytes, let fetched, let reused, let seconds):
            key("placed", k); line.add("bytes", bytes); line.add("seconds", seconds)
            line.add("transferred", fetched); line.add("resumed_at", UInt64(0)); line.add("resume_refused_at", UInt64(0))
            line.add("from", nil as String?); line.add("fetched", fetched); line.add("reused", reused); line.add("delta", true)
        case .deltaNotUsed(let k, let reason, let detail):
            key("delta", k); line.add("used", false); line.add("reason", reason); line.add("detail", detail)
        case .sourceMismatch(let k, let expected, let found):
            key("mismatch", k); line.add("expected", expected); line.add("found", found)
        case .fresh(let k):
            key("fresh", k); line.add("reason", "not modified")
        case .paused(let k, let reason, let partial, let refused):
            key("paused", k); line.add("reason", reason); line.add("offset", partial.kept)
            if case .discarded(let bytes, let why) = partial {
                line.add("discarded", bytes); line.add("cannot_resume", why)
            } else {
                line.add("discarded", UInt64(0)); line.add("cannot_resume", nil as String?)
            }
            line.add("resume_refused_at", refused)
        case .retrying(let k, let message, let after):
            key("failed", k); line.add("error", message); line.add("retry_in_s", after); line.add("final", false)
        case .nextURL(let k, let message, let url):
            key("failed", k); line.add("error", message); line.add("next_url", url); line.add("final", false)
        case .heldWithOrigin(let k, let message, let origin, let until, let after):
            // Not a retry of its own: the origin's hold decides (its probe, or the `held` line).
            key("failed", k); line.add("error", message); line.add("held", true); line.add("origin", origin)
            line.add("until", TimeFormat.rfc3339(until, clock: ZoneClock(TimeZone(identifier: "UTC")!))); line.add("held_s", after)
            line.add("final", false)
        case .failed(let k, let message, let retryAt, _):
            key("failed", k); line.add("error", message); line.add("retry_at", retryAt.map { TimeFormat.rfc3339($0, clock: ZoneClock(TimeZone(identifier: "UTC")!)) })
            line.add("final", true)
        case .held(let origin, let reason, let until, let resources):
            line.add("type", "held"); line.add("origin", origin); line.add("reason", reason)
            line.add("until", TimeFormat.rfc3339(until, clock: ZoneClock(TimeZone(identifier: "UTC")!))); line.add("resources", Int64(resources))
        case .stateError(let message):
            // Not about one resource: a `failed` line with no feed and no path.
            line.add("type", "failed"); line.add("feed", nil as String?); line.add("path", nil as String?)
            line.add("error", message); line.add("final", true)
        case .removedForRoom(let feed, let path, let generation, let bytes):
            line.add("type", "removed"); line.add("feed", feed); line.add("path", path)
            if let generation { line.add("generation", Int64(generation)) }
            line.add("bytes", bytes); line.add("reason", Self.roomReason)
        }
        out(line.line + "\n")
    }

    /// Lines written to a pipe or file are gathered and written together (one `write` per
    /// batch rather than per file); a terminal gets every line at once.
    private var pending = ""

    private func out(_ text: String) {
        guard mode != .terminal else { return console.out(text) }
        pending += text
        if pending.utf8.count >= 32 * 1024 { flush() }
    }

    private func err(_ text: String) {
        flush()  // keeps stdout and stderr in order
        console.err(text)
    }

    func flush() {
        guard !pending.isEmpty else { return }
        console.out(pending)
        pending = ""
    }

    private func text(_ event: RunEvent) {
        switch event {  // a transfer that ended leaves the bars at once, not at the next progress tick
        case .placed(let k, _, _, _, _, _), .fresh(let k), .paused(let k, _, _, _), .retrying(let k, _, _), .failed(let k, _, _, _),
             .heldWithOrigin(let k, _, _, _, _), .nextURL(let k, _, _):
            lastProgress.removeAll { $0.key == k }
        case .started, .progress, .stateError, .held, .removedForRoom, .placedFromCache, .sourceMismatch, .placedByDelta, .deltaNotUsed: break
        }
        if quiet {  // `--quiet` keeps the error lines only: the others are not even made
            switch event {
            case .placed, .fresh, .paused, .retrying, .heldWithOrigin, .nextURL, .removedForRoom, .placedFromCache, .placedByDelta, .deltaNotUsed: return
            case .started, .progress, .failed, .stateError, .held, .sourceMismatch: break
            }
        }
        switch event {
        case .progress(let transfers):
            lastProgress = transfers
            if mode == .terminal && !quiet { redraw() }
            if mode == .plain && !quiet && !transfers.isEmpty && now().timeIntervalSince(lastPlainProgress) >= progressInterval {
                lastPlainProgress = now()
                logProgress(transfers)
            }
            return
        case .started:
            return
        case .placed(let k, let bytes, let received, let resumedAt, let seconds, let refused):
            // The rate is of the bytes that moved: after a resume, fewer than the file holds.
            var notes: [String] = []
            if seconds > 0.05 && received > 0 { notes.append("\(ByteSize.format(UInt64(Double(received) / seconds)))/s") }
            if resumedAt > 0 { notes.append("resumed at \(ByteSize.format(resumedAt))") }
            if refused > 0 { notes.append(ResumeRule.refusal(from: refused)) }
            log("placed  \(name(k))  \(ByteSize.format(bytes)) in \(DecimalText.oneDecimal(seconds))s"
                + (notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")"))
        case .placedFromCache(let k, let bytes, let from, _):
            log("placed  \(name(k))  \(ByteSize.format(bytes)) (from \(from))")
        case .placedByDelta(let k, let bytes, let fetched, let reused, let seconds):
            log("placed  \(name(k))  \(ByteSize.format(bytes)) in \(DecimalText.oneDecimal(seconds))s"
                + " (delta: \(ByteSize.format(fetched)) fetched, \(ByteSize.format(reused)) reused)")
        case .deltaNotUsed(let k, let reason, let detail):
            log("whole   \(name(k))  delta not used: \(reason) (\(detail))")
        case .sourceMismatch(let k, let expected, let found):
            log("mismatch  \(name(k))  expected \(expected) found \(found) (removed; not used as a local source)", error: true)
        case .fresh(let k):
            log("fresh   \(name(k))  (not modified)")
        case .paused(let k, let reason, let partial, let refused):
            // "kept for resume" only for a resumable partial (SPEC §7); otherwise what became of it.
            var text = "paused  \(name(k))  \(reason)"
            switch partial {
            case .kept(let bytes) where bytes > 0: text += ", \(ByteSize.format(bytes)) kept for resume"
            case .discarded(let bytes, let why): text += ", \(ByteSize.format(bytes)) discarded (cannot resume: \(why))"
            case .kept, .none: break
            }
            if refused > 0 { text += "; " + ResumeRule.refusal(from: refused) }
            log(text)
        case .retrying(let k, let message, let after):
            log("retry   \(name(k))  \(message); again in \(after)s")
        case .nextURL(let k, let message, let url):
            log("retry   \(name(k))  \(message); trying \(url)")
        case .heldWithOrigin(let k, let message, let origin, let until, _):
            log("held    \(name(k))  \(message); \(origin) held until " + TimeFormat.local(until, clock: ZoneClock(TimeZone.current), withUTC: false))
        case .failed(let k, let message, let retryAt, let origin?):
            // The origin's `held` line speaks for it (one line per origin, not per resource),
            // unless an answer ended that hold before the run did: then it is said at the end.
            heldFailures[origin, default: []].append((k, message, retryAt))
            return
        case .failed(let k, let message, let retryAt, nil):
            failedLine(k, message, retryAt)
        case .stateError(let message):
            log("prefetch: error: \(message)", error: true)
        case .removedForRoom(let feed, let path, let generation, let bytes):
            let what = path.map { feed + "/" + $0 } ?? "\(feed) (generation \(generation ?? 0))"
            log("removed  \(what)  \(ByteSize.format(bytes)) (\(Self.roomReason))")
        case .held(let origin, let reason, let until, let resources):
            heldFailures[origin] = nil
            log("failed  \(origin)  \(reason); \(resources) resource\(resources == 1 ? "" : "s") held until "
                + TimeFormat.local(until, clock: ZoneClock(TimeZone.current), withUTC: false), error: true)
        }
    }

    /// Failures whose origin's `held` line was to speak for them, by origin (text only).
    private var heldFailures: [String: [(ResourceKey, String, Instant?)]] = [:]

    /// The failed line of each resource whose origin's hold an answer ended before the run did.
    private func failedLine(_ key: ResourceKey, _ message: String, _ retryAt: Instant?) {
        var text = "failed  \(name(key))  \(message)"
        if let retryAt { text += "; retry after " + TimeFormat.local(retryAt, clock: ZoneClock(TimeZone.current), withUTC: false) }
        log(text, error: true)
    }

    /// A log line above the progress block (errors to stderr; `--quiet` keeps only those).
    private func log(_ line: String, error: Bool = false) {
        if quiet && !error { return }
        clearBlock()
        if error { err(line + "\n") } else { out(line + "\n") }
        if mode == .terminal && !quiet { redraw() }
    }

    private func clearBlock() {
        guard mode == .terminal, drawnLines > 0 else { return }
        console.out("\u{1b}[\(drawnLines)A\u{1b}[J")
        drawnLines = 0
    }

    /// The running transfers as log lines (up to 8, and one for all of them when several).
    /// Those still waiting for an answer say so; "active" counts the ones receiving.
    private func logProgress(_ transfers: [TransferProgress]) {
        for transfer in transfers.prefix(8) {
            log("running \(name(transfer.key))  " + Self.figures(transfer))
        }
        if transfers.count > 8 { log("running … and \(transfers.count - 8) more") }
        guard transfers.count > 1 else { return }
        log("running " + Self.summaryLabel(transfers) + "  " + Self.figures(of: transfers))
    }

    /// `all 3 active` or `all 2 active, 1 connecting`.
    static func summaryLabel(_ transfers: [TransferProgress]) -> String {
        let waiting = transfers.filter { !$0.receiving }.count
        return "all \(transfers.count - waiting) active" + (waiting > 0 ? ", \(waiting) connecting" : "")
    }

    /// One transfer's figures, or that it waits for the server.
    static func figures(_ transfer: TransferProgress) -> String {
        guard transfer.receiving else {
            return "connecting" + (transfer.bytes > 0 ? " (resuming at \(ByteSize.format(transfer.bytes)))" : "")
        }
        return figures(transfer.bytes, transfer.total, transfer.rate)
    }

    /// The figures of the transfers receiving, together.
    static func figures(of transfers: [TransferProgress]) -> String {
        let moving = transfers.filter(\.receiving)
        let totals = moving.compactMap(\.total)
        return figures(moving.reduce(0) { $0 + $1.bytes }, totals.count == moving.count ? totals.reduce(0, +) : nil,
                       moving.reduce(0) { $0 + $1.rate })
    }

    /// "225MiB of 512MiB (43%), 100MiB/s, ETA 3s"; without a known total, bytes and rate.
    static func figures(_ bytes: UInt64, _ total: UInt64?, _ rate: Double) -> String {
        var parts: [String] = []
        if let total, total > 0 {
            parts.append("\(ByteSize.format(bytes)) of \(ByteSize.format(total)) (\(Int(min(1, Double(bytes) / Double(total)) * 100))%)")
        } else {
            parts.append(ByteSize.format(bytes))
        }
        if rate > 0 {
            parts.append("\(ByteSize.format(UInt64(rate)))/s")
            if let total, total > 0 { parts.append("ETA \(TimeSpan(seconds: Int64(Double(total - min(total, bytes)) / rate)))") }
        }
        return parts.joined(separator: ", ")
    }

    /// One bar per transfer and one for all of them: bytes, rate, ETA.
    private func redraw() {
        clearBlock()
        guard !lastProgress.isEmpty else { return }
        var lines: [String] = []
        var bytes: UInt64 = 0, total: UInt64 = 0, rate = 0.0, totalKnown = true
        for transfer in lastProgress.prefix(8) {
            lines.append(transfer.receiving ? Self.bar(name(transfer.key), transfer.bytes, transfer.total, transfer.rate)
                                            : Self.label(name(transfer.key)) + Self.figures(transfer))
        }
        if lastProgress.count > 8 { lines.append("  … and \(lastProgress.count - 8) more") }
        for transfer in lastProgress where transfer.receiving {
            bytes += transfer.bytes
            rate += transfer.rate
            if let t = transfer.total { total += t } else { totalKnown = false }
        }
        lines.append(Self.bar(Self.summaryLabel(lastProgress), bytes, totalKnown ? total : nil, rate))
        console.out(lines.joined(separator: "\n") + "\n")
        drawnLines = lines.count
    }

    /// A bar's label column: 36 characters (longer names keep their end).
    static func label(_ label: String) -> String {
        "  " + (label.count > 36 ? "…" + label.suffix(35) : label.padding(toLength: 36, withPad: " ", startingAt: 0)) + " "
    }

    static func bar(_ label: String, _ bytes: UInt64, _ total: UInt64?, _ rate: Double) -> String {
        let width = 24
        var text = Self.label(label)
        if let total, total > 0 {
            let fraction = min(1, Double(bytes) / Double(total))
            let filled = Int(fraction * Double(width))
            text += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            text += String(format: "%3d%% ", Int(fraction * 100))
            text += "\(ByteSize.format(bytes))/\(ByteSize.format(total))"
            if rate > 0 { text += "  \(ByteSize.format(UInt64(rate)))/s  ETA \(TimeSpan(seconds: Int64(Double(total - min(total, bytes)) / rate)))" }
        } else {
            text += "\(ByteSize.format(bytes))"
            if rate > 0 { text += "  \(ByteSize.format(UInt64(rate)))/s" }
        }
        return text
    }

    /// The pass's last line (SPEC §7): placed, fresh (304), failed, held (resources held with
    /// their origins), pruned and paused; in JSON the same figures (`held` and `pruned` after
    /// the fields it always had). Returns whether it printed one (a daemon pass that did
    /// nothing prints nothing).
    @discardableResult
    func summary(_ summary: EngineSummary, seconds: Double, exit: ExitCode, notDue: Int) -> Bool {
        for (_, failures) in heldFailures.sorted(by: { $0.key < $1.key }) {
            for (key, message, retryAt) in failures { failedLine(key, message, retryAt) }
        }
        heldFailures = [:]
        flush()
        clearBlock()
        if silentWhenIdle, summary.placed + summary.fresh + summary.failed + summary.held + summary.pruned + summary.paused == 0,
           !summary.diskFull { return false }
        if mode == .json {
            var line = JSONObject()
            line.add("type", "summary")
            line.add("placed", Int64(summary.placed)); line.add("fresh", Int64(summary.fresh))
            line.add("failed", Int64(summary.failedAlone)); line.add("paused", Int64(summary.paused))
            line.add("not_due", Int64(notDue)); line.add("bytes", summary.bodyBytes); line.add("seconds", seconds)
            line.add("disk_full", summary.diskFull); line.add("exit", Int64(exit.rawValue))
            line.add("held", Int64(summary.held)); line.add("pruned", Int64(summary.pruned))
            line.add("from_cache", Int64(summary.fromCache))
            console.out(line.line + "\n")
            return true
        }
        if quiet && summary.failed == 0 && summary.held == 0 && !summary.diskFull { return false }
        var text = "run: \(summary.placed) placed, \(summary.fresh) fresh (304), \(summary.failedAlone) failed, \(summary.held) held, "
            + "\(summary.pruned) pruned, \(summary.paused) paused"
        if summary.fromCache > 0 { text += ", \(summary.fromCache) from the cache" }
        text += "; \(ByteSize.format(summary.bodyBytes)) in \(DecimalText.oneDecimal(seconds))s"
        if notDue > 0 { text += "; \(notDue) not due now (see prefetch plan)" }
        console.out(text + "\n")
        return true
    }
}
