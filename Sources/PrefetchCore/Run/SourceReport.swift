import Foundation

/// How `status` and `plan` show a feed source (SPEC §8): as text, one line and its details,
/// or as one `{"type":"source",…}` JSON line.
enum SourceReport {
    /// `source`, `url`, `feed`, `state`, `in_force_since`, `stale_since`, `last_check`,
    /// `key_id`, `error`: `feed`, `in_force_since` and `key_id` null for `none` (`key_id`
    /// also for an unsigned source), `stale_since` null unless stale, `error` null when ok,
    /// `last_check` null before the first check.
    static func json(_ status: SourceStatus, clock: ZoneClock) -> String {
        let none = status.state == .none
        var line = JSONObject()
        line.add("type", "source")
        line.add("source", status.label)
        line.add("url", status.view.source.url.redacted)
        line.add("feed", none ? nil : status.view.feedName)
        line.add("state", status.state.rawValue)
        line.add("in_force_since", none ? nil : status.view.copy.map { TimeFormat.rfc3339($0.fetchedAt, clock: clock) })
        line.add("stale_since", status.state == .stale ? status.staleSince.map { TimeFormat.rfc3339($0, clock: clock) } : nil)
        line.add("last_check", status.record?.lastCheck.map { TimeFormat.rfc3339($0, clock: clock) })
        line.add("key_id", none ? nil : status.view.copy?.keyID)
        line.add("error", status.state == .ok ? nil : status.error)
        return line.line + "\n"
    }

    /// `source LABEL: feed NAME, ok` (or `stale since T: reason`, or `none: reason`), then
    /// the copy in force and the last check.
    static func text(_ status: SourceStatus, clock: ZoneClock) -> String {
        let state: String
        switch status.state {
        case .ok: state = "ok"
        case .stale: state = "stale since \(status.staleSince.map { TimeFormat.local($0, clock: clock) } ?? "?"): \(status.error ?? "")"
        case .none: state = "none (never applied): \(status.error ?? "")"
        }
        let feed = status.state == .none ? "" : status.view.feedName.map { "feed \($0), " } ?? ""
        var out = "source \(status.label): \(feed)\(state)\n"
        if status.state != .none, let copy = status.view.copy {
            out += "  in force since: \(TimeFormat.local(copy.fetchedAt, clock: clock))"
                + (copy.keyID.map { ", signed by key \($0)" } ?? ", unsigned (https)") + "\n"
        }
        out += "  last check: " + (status.record?.lastCheck.map { TimeFormat.local($0, clock: clock) } ?? "never") + "\n"
        return out
    }
}
