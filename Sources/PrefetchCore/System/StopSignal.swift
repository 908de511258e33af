import Foundation

/// Signals as events. SIGTERM/SIGINT also raise a flag the transfer loop checks: transfers
/// pause resumably and the run exits 0 (SPEC §2). Installed before any work starts, so none
/// is missed. The daemon also listens for SIGHUP (reload feeds) and SIGUSR1 (run now), takes
/// every arrival in order (`drain`) and sleeps until one comes (`wait`), without polling;
/// `nudge` wakes that sleep without a signal (a condition the daemon waits on changed).
///
/// The signals are blocked in the thread that makes it (and so in every thread started
/// after: the transfer threads, libcurl's resolver's, the fsync workers) and taken by one
/// thread of its own in `sigwaitinfo`; they are ignored too, so one that reached a thread
/// started before is dropped rather than ending the process. Children start with every
/// signal unblocked and at its default.
///
/// Not libdispatch's signal sources: each of their handlers runs on a libdispatch worker
/// thread, and every such thread sets its own nice value with `setpriority`, which the
/// units' `Nice=10` and `SystemCallFilter=~@resources` refuse, and libdispatch logs each
/// refusal to the journal (issue 19; `SystemdTests.libdispatchSetsNoThreadPriority`).
final class StopSignal: @unchecked Sendable {
    /// What the waiting thread and the callers share (the thread keeps it, not the signal:
    /// `deinit` ends the thread).
    private final class Arrivals: @unchecked Sendable {
        let lock = NSLock()
        var raised: Int32?
        var list: [Int32] = []
        var nudged = false
        let arrived = DispatchSemaphore(value: 0)
        var waiter: pthread_t?
        var closing = false

        func note(_ number: Int32, stops: Bool) {
            lock.lock()
            if stops, raised == nil { raised = number }
            list.append(number)
            lock.unlock()
            arrived.signal()
        }
    }

    private let shared = Arrivals()
    private let numbers: [Int32]

    init(signals: [Int32] = [SIGTERM, SIGINT], also others: [Int32] = []) {
        numbers = others + signals
        var set = sigset_t()
        sigemptyset(&set)
        for number in numbers {
            signal(number, SIG_IGN)
            sigaddset(&set, number)
        }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let stops = Set(signals)
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [shared, set] in
            shared.lock.withLock { shared.waiter = pthread_self() }
            started.signal()
            var waited = set
            while true {
                let number = sigwaitinfo(&waited, nil)
                if number < 0 { continue }  // EINTR
                if shared.lock.withLock({ shared.closing }) { return }
                shared.note(number, stops: stops.contains(number))
            }
        }
        thread.name = "prefetch.signals"
        thread.stackSize = 64 * 1024
        thread.start()
        started.wait()
    }

    deinit {
        let waiter = shared.lock.withLock { () -> pthread_t? in
            shared.closing = true
            return shared.waiter
        }
        if let waiter, let first = numbers.first { pthread_kill(waiter, first) }  // ends its wait; the thread returns
    }

    /// Every signal that arrived since the last call, oldest first.
    func drain() -> [Int32] {
        shared.lock.lock()
        defer { shared.lock.unlock() }
        let taken = shared.list
        shared.list.removeAll()
        return taken
    }

    /// Sleeps until a signal arrives or `nudge` is called (true; the signal is left for
    /// `drain`, the nudge for `takeNudge`) or `seconds` pass (false).
    func wait(seconds: Double) -> Bool {
        let deadline = DispatchTime.now() + max(0, seconds)
        while true {
            if hasArrivals { return true }
            // A count left by an arrival drained earlier wakes this once; it waits on.
            if shared.arrived.wait(timeout: deadline) == .timedOut { return hasArrivals }
        }
    }

    /// Wakes `wait` (from any thread).
    func nudge() {
        shared.lock.lock()
        shared.nudged = true
        shared.lock.unlock()
        shared.arrived.signal()
    }

    /// Whether `nudge` was called since the last call.
    func takeNudge() -> Bool {
        shared.lock.lock()
        defer { shared.lock.unlock() }
        let was = shared.nudged
        shared.nudged = false
        return was
    }

    private var hasArrivals: Bool {
        shared.lock.lock()
        defer { shared.lock.unlock() }
        return !shared.list.isEmpty || shared.nudged
    }

    /// The stop signal received, if any.
    var received: Int32? {
        shared.lock.lock()
        defer { shared.lock.unlock() }
        return shared.raised
    }
}
