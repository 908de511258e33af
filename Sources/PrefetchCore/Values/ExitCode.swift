/// The exit statuses of SPEC §2.
public enum ExitCode: Int32, Sendable, Error {
    /// Success, including "nothing due".
    case success = 0
    /// Some transfers failed, or the cache cannot be written.
    case failure = 1
    /// A usage or manifest error.
    case usage = 2
    /// Another writer holds the cache lock.
    case locked = 75
}
