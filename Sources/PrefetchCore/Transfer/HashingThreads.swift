import Foundation

/// The threads a run hashes bodies on: each body has a lane whose blocks run in order, one
/// at a time, on whichever of at most one thread per core (up to 4) is free; lanes take turns
/// a block each. A thread starts when work comes and none is free, and ends after a second
/// without work (a daemon keeps none between passes).
///
/// Not a libdispatch queue: every libdispatch worker thread sets its own nice value with
/// `setpriority` when it starts, which the units' `Nice=10` and `SystemCallFilter=~@resources`
/// refuse, and libdispatch logs each refusal to the journal (issue 19).
final class HashingThreads: @unchecked Sendable {
    /// One body's work, in order.
    final class Lane: @unchecked Sendable {
        fileprivate var blocks: [() -> Void] = []
        fileprivate var head = 0
        /// In the ready list or running: never both, never twice.
        fileprivate var scheduled = false
    }

    private let condition = NSCondition()
    private var ready: [Lane] = []
    private var readyHead = 0
    private var threads = 0
    private var idle = 0
    /// Blocks queued and not yet run, in every lane.
    private var queued = 0
    private var suspended = false
    private let maxThreads: Int
    static let idleSeconds = 1.0

    init(maxThreads: Int = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount))) {
        self.maxThreads = max(1, maxThreads)
    }

    /// Queues `block` on `lane`, after the lane's earlier blocks.
    func async(_ lane: Lane, _ block: @escaping () -> Void) {
        condition.lock()
        defer { condition.unlock() }
        lane.blocks.append(block)
        queued += 1
        guard !lane.scheduled else { return }
        lane.scheduled = true
        ready.append(lane)
        if idle > 0 {
            condition.signal()
        } else if threads < maxThreads {
            threads += 1
            let thread = Thread { [self] in work() }
            thread.name = "prefetch.sha256"
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    /// Waits until every block queued on `lane` has run.
    func drain(_ lane: Lane) {
        condition.lock()
        while lane.scheduled { condition.wait() }
        condition.unlock()
    }

    /// Waits until no block is queued in any lane, or `seconds` pass; whether none is.
    func waitForAll(seconds: Double = .infinity) -> Bool {
        let deadline = seconds.isFinite ? Date().addingTimeInterval(seconds) : nil
        condition.lock()
        defer { condition.unlock() }
        while queued > 0 {
            if let deadline {
                if !condition.wait(until: deadline) { return queued == 0 }
            } else {
                condition.wait()  // (`wait(until: .distantFuture)` traps in Foundation)
            }
        }
        return true
    }

    /// Holds every block from running until `resume` (tests).
    func suspend() {
        condition.lock()
        suspended = true
        condition.unlock()
    }

    func resume() {
        condition.lock()
        suspended = false
        condition.broadcast()
        condition.unlock()
    }

    private func work() {
        condition.lock()
        while true {
            while suspended || readyHead == ready.count {
                idle += 1
                let woken = condition.wait(until: Date().addingTimeInterval(Self.idleSeconds))
                idle -= 1
                if !woken && !suspended && readyHead == ready.count {
                    threads -= 1
                    condition.unlock()
                    return
                }
            }
            let lane = ready[readyHead]
            readyHead += 1
            if readyHead == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyHead = 0
            }
            let block = lane.blocks[lane.head]
            lane.head += 1
            condition.unlock()
            block()
            condition.lock()
            queued -= 1
            if lane.head < lane.blocks.count {
                ready.append(lane)  // its next block waits its turn behind the other lanes
            } else {
                lane.blocks.removeAll(keepingCapacity: true)
                lane.head = 0
                lane.scheduled = false
            }
            condition.broadcast()  // `drain` and `waitForAll` look again
        }
    }
}
