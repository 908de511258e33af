import Foundation

/// The daemon's side of systemd's notification protocol: tells `DaemonNotifications` what
/// happens and sends the datagrams it decides on through `NotifySocket`. Without
/// `NOTIFY_SOCKET` (not started by systemd, or not `Type=notify`) it does nothing and costs
/// nothing. Called from the daemon's thread and from the transfer threads, one at a time.
final class SystemdNotifier: @unchecked Sendable {
    private let socket: NotifySocket?
    private let lock = NSLock()
    private var rules: DaemonNotifications
    private let console: Console
    private var saidSendError = false

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`. A
    /// `NOTIFY_SOCKET` that is neither a path nor `@name` is said once, as a warning.
    init(environment: [String: String], console: Console, clock: ZoneClock = ZoneClock(TimeZone.current)) {
        self.console = console
        let named = environment["NOTIFY_SOCKET"]
        var opened: NotifySocket?
        if let address = NotifySocket.Address.parse(named) {
            switch NotifySocket.open(address) {
            case .success(let notifySocket): opened = notifySocket
            case .failure(let error): console.err("prefetch: warning: cannot open a socket to notify systemd: \(error)\n")
            }
        } else if let named, !named.isEmpty {
            console.err("prefetch: warning: NOTIFY_SOCKET '\(named)' is neither an absolute path nor @name; systemd is not notified\n")
        }
        socket = opened
        let watchdog = opened == nil ? nil : SystemdEnvironment.watchdogMicroseconds(environment, pid: SystemdEnvironment.processID)
        rules = DaemonNotifications(watchdogMicroseconds: watchdog, clock: clock)
    }

    /// Tells systemd what `event` calls for (nothing without a socket).
    func tell(_ event: DaemonNotifications.Event) {
        guard let socket else { return }
        lock.lock()
        defer { lock.unlock() }
        guard let message = rules.handle(event, monotonic: Clock.monotonicNanoseconds()) else { return }
        if case .failure(let error) = socket.send(message), !saidSendError {
            saidSendError = true
            console.err("prefetch: warning: cannot notify systemd: \(error)\n")
        }
    }

    /// Seconds until the next watchdog ping is due; nil without a watchdog (a sleep need not
    /// wake for it).
    var untilPing: Double? {
        guard socket != nil else { return nil }
        lock.lock()
        defer { lock.unlock() }
        return rules.untilPing(monotonic: Clock.monotonicNanoseconds())
    }
}
