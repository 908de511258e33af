import Foundation

/// Runs `fsync` on worker threads, so the transfer loop keeps its sockets serviced while
/// the disk catches up. On a real disk every fsync of a small file waits for the device;
/// several waiting together let the kernel merge their cache flushes.
///
/// Results are taken back on the engine's thread (`takeFinished`), where state.db is
/// written: nothing here touches SQLite. `onFinished` runs on a worker, under the lock,
/// after each result is queued (the engine passes `curl_multi_wakeup`, to end its poll
/// early); it must be quick.
///
/// Idle workers wait on `condition`, the engine's `waitForAny` on `results`: a finished
/// fsync wakes the engine alone. (With one condition for both, each result's broadcast would
/// wake every idle worker too, only to find nothing queued: a wake-up per worker per file.)
final class Syncer: @unchecked Sendable {
    struct Finished {
        let id: Int
        let result: Result<Void, Errno>
    }

    private let condition = NSCondition()
    /// Counts results queued, under its own lock; `waitForAny` waits on it for a change.
    private let results = NSCondition()
    private var resultCount = 0
    private var pending: [(id: Int, file: FileDescriptor)] = []
    private var pendingHead = 0
    private var finished: [Finished] = []
    private var inFlight = 0
    private var workers = 0
    private var idle = 0
    private var stopping = false
    private let maxWorkers: Int
    private let onFinished: @Sendable () -> Void

    init(maxWorkers: Int, onFinished: @escaping @Sendable () -> Void) {
        self.maxWorkers = max(1, maxWorkers)
        self.onFinished = onFinished
    }

    /// Queues an fsync of `file`; its result comes back from `takeFinished` under `id`.
    func submit(id: Int, file: FileDescriptor) {
        condition.lock()
        pending.append((id, file))
        inFlight += 1
        if idle == 0 && workers < maxWorkers {
            workers += 1
            let thread = Thread { [self] in work() }
            thread.name = "prefetch.fsync"
            thread.stackSize = 256 * 1024
            thread.start()
        }
        condition.signal()
        condition.unlock()
    }

    /// Results ready so far (maybe none).
    func takeFinished() -> [Finished] {
        condition.lock()
        defer { condition.unlock() }
        let done = finished
        finished = []
        inFlight -= done.count
        return done
    }

    /// Submitted and not yet taken back.
    var outstanding: Int {
        condition.lock()
        defer { condition.unlock() }
        return inFlight
    }

    /// Waits until a result is ready or `seconds` pass.
    func waitForAny(seconds: Double) {
        results.lock()
        let seen = resultCount  // read before looking, so a result queued meanwhile is not missed
        results.unlock()
        condition.lock()
        let wait = finished.isEmpty && inFlight > 0
        condition.unlock()
        guard wait else { return }
        let deadline = Date().addingTimeInterval(seconds)
        results.lock()
        while resultCount == seen, results.wait(until: deadline) {}
        results.unlock()
    }

    /// Lets the workers end once the queue is empty (they hold the syncer until then).
    func shutDown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        condition.lock()
        while true {
            if pendingHead < pending.count {
                let next = pending[pendingHead]
                pendingHead += 1
                if pendingHead == pending.count { pending.removeAll(keepingCapacity: true); pendingHead = 0 }
                condition.unlock()
                let result = next.file.sync()
                condition.lock()
                finished.append(Finished(id: next.id, result: result))
                // Under the lock: the engine takes results only under it, so it cannot have
                // finished its run (and freed the multi handle `onFinished` wakes) meanwhile.
                onFinished()
                results.lock()
                resultCount += 1
                results.broadcast()  // a `waitForAny`
                results.unlock()
            } else if stopping {
                workers -= 1
                condition.unlock()
                return
            } else {
                idle += 1
                condition.wait()
                idle -= 1
            }
        }
    }
}
