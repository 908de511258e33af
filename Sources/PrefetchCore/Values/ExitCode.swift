/// The exit statuses of SPEC §2.
public enum ExitCode: Int32, Sendable, Error, CaseIterable {
    /// Success, including "nothing due".
    case success = 0
    /// Some transfers failed, the metrics file could not be written, or the cache cannot be written.
    case failure = 1
    /// A usage or manifest error.
    case usage = 2
    /// Another writer holds the cache lock.
    case locked = 75

    /// What the status means, as the man page says it.
    public var meaning: String {
        switch self {
        case .success:
            "Success, including nothing due, and a run stopped by SIGTERM or SIGINT after pausing its transfers resumably."
        case .failure:
            "A transfer attempted in this run failed (state.db records when it is retried), a verified file mismatched, the metrics file could not be written, or the cache cannot be written."
        case .usage:
            "A usage, configuration or manifest error, including a missing feeds folder; nothing was touched."
        case .locked:
            "Another writer holds the cache lock (run, gc, verify; a daemon waits instead)."
        }
    }
}
