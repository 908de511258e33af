import Foundation

/// Signals as events. SIGTERM/SIGINT also raise a flag the transfer loop checks: transfers
/// pause resumably and the run exits 0 (SPEC §2). Installed before any work starts, so none
/// is missed. The daemon also listens for SIGHUP (reload feeds) and SIGUSR1 (run now), takes
/// every arrival in order (`drain`) and sleeps until one comes (`wait`), without polling;
/// `nudge` wakes that sleep without a signal (a condition the daemon waits on changed).
final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var raised: Int32?
    private var arrivals: [Int32] = []
    private var nudged = false
    private let arrived = DispatchSemaphore(value: 0)
    private var sources: [DispatchSourceSignal] = []

    init(signals: [Int32] = [SIGTERM, SIGINT], also others: [Int32] = []) {
        for number in others + signals {
            let stops = signals.contains(number)
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.note(number, stops: stops) }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }

    private func note(_ number: Int32, stops: Bool) {
        lock.lock()
        if stops, raised == nil { raised = number }
        arrivals.append(number)
        lock.unlock()
        arrived.signal()
    }

    /// Every signal that arrived since the last call, oldest first.
    func drain() -> [Int32] {
        lock.lock()
        defer { lock.unlock() }
        let taken = arrivals
        arrivals.removeAll()
        return taken
    }

    /// Sleeps until a signal arrives or `nudge` is called (true; the signal is left for
    /// `drain`, the nudge for `takeNudge`) or `seconds` pass (false).
    func wait(seconds: Double) -> Bool {
        let deadline = DispatchTime.now() + max(0, seconds)
        while true {
            if hasArrivals { return true }
            // A count left by an arrival drained earlier wakes this once; it waits on.
            if arrived.wait(timeout: deadline) == .timedOut { return hasArrivals }
        }
    }

    /// Wakes `wait` (from any thread).
    func nudge() {
        lock.lock()
        nudged = true
        lock.unlock()
        arrived.signal()
    }

    /// Whether `nudge` was called since the last call.
    func takeNudge() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let was = nudged
        nudged = false
        return was
    }

    private var hasArrivals: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !arrivals.isEmpty || nudged
    }

    /// The stop signal received, if any.
    var received: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return raised
    }
}
