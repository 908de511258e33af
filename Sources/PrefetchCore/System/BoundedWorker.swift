import Foundation

/// A thread of its own for a call that can hang in the kernel (a sysfs read behind a slow
/// embedded controller, `statvfs` of an unreachable network filesystem, a library that
/// blocks): the caller waits for the answer only until its deadline. A call that hangs
/// cannot be cancelled; it keeps the thread, and until it returns every later `submit`
/// is refused at once, so hung calls never pile up threads.
final class BoundedWorker: @unchecked Sendable {
    private let condition = NSCondition()
    private var job: (() -> Void)?
    private var busy = false
    private var busySince: UInt64 = 0
    private var finished = false

    init(name: String) {
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// Ends the thread once it is idle (at once when it is).
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// The answer of one call.
    final class Pending<Value: Sendable>: @unchecked Sendable {
        private let condition = NSCondition()
        private var value: Value?

        fileprivate func fulfil(_ value: Value) {
            condition.lock()
            self.value = value
            condition.broadcast()
            condition.unlock()
        }

        /// The value, or nil when `deadline` (`Clock.monotonicNanoseconds`) came first.
        func wait(until deadline: UInt64) -> Value? {
            condition.lock()
            defer { condition.unlock() }
            while value == nil {
                let now = Clock.monotonicNanoseconds()
                guard now < deadline else { break }
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(deadline - now) / 1e9))
            }
            return value
        }
    }

    /// Starts `body` on the thread, or refuses (nil) while an earlier call has not
    /// returned; `stuckFor` then says for how long it has not.
    func submit<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> Pending<Value>? {
        let pending = Pending<Value>()
        condition.lock()
        defer { condition.unlock() }
        guard !busy, !finished else { return nil }
        busy = true
        busySince = Clock.monotonicNanoseconds()
        // Idle before the answer is handed over: a caller woken by it finds the worker free
        // (it was still busy for a moment: the next call refused, `stuckFor` not nil).
        job = { [self] in
            let value = body()
            condition.lock()
            busy = false
            condition.unlock()
            pending.fulfil(value)
        }
        condition.broadcast()
        return pending
    }

    /// Seconds the running call has taken so far; nil when idle.
    var stuckFor: Double? {
        condition.lock()
        defer { condition.unlock() }
        return busy ? Double(Clock.monotonicNanoseconds() - busySince) / 1e9 : nil
    }

    /// Runs `body` and waits at most `seconds`: its value, or nil.
    func run<Value: Sendable>(within seconds: Double, _ body: @escaping @Sendable () -> Value) -> Value? {
        submit(body)?.wait(until: Clock.monotonicNanoseconds() + UInt64(seconds * 1e9))
    }

    private func loop() {
        while true {
            condition.lock()
            while job == nil && !finished { condition.wait() }
            guard let next = job else {
                condition.unlock()
                return
            }
            job = nil
            condition.unlock()
            next()
        }
    }
}
