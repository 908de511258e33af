import Foundation

/// The conditions, kept current beside the transfers (SPEC §7): the network by a
/// `NetworkWatch` (NetworkManager's changes, signalled over D-Bus), power supplies and
/// free space read on a poller thread, each read bounded by the probes' timeout on a
/// `BoundedWorker`. Readers — the transfer loop, the daemon — only take the last
/// readings (`readings`, `snapshot`), never wait for a probe. `onChange` is called (on a
/// monitor thread) whenever a reading changed.
///
/// Power and free space have no change notification that the sandbox lets through
/// (udev's netlink is not an allowed address family), so they are read every
/// `pollSeconds` — but only while it matters: during a pass (`beginPass`), and after it
/// while waiting work depends on them (`endPass(keepPolling:)`). A daemon at rest whose
/// waiting work needs nothing but the network does not wake at all.
public final class ConditionMonitor: @unchecked Sendable {
    private let probes: ConditionProbes
    private let cache: String
    private let meteredDefault: Config.MeteredDefault
    private let pollSeconds: Double
    private let lock = NSCondition()
    private var power: Probed<PowerState>?
    private var network: Probed<Bool>?
    private var free: Probed<UInt64>?
    private var started = false
    private var stopping = false
    /// Poll power and free space every `pollSeconds` (else only when asked).
    private var polling = true
    /// A poll asked for now (`beginPass`), and how many polls have ended.
    private var pollNow = true
    private var polls = 0
    private var watch: NetworkWatch?
    private let pollerStopped = DispatchSemaphore(value: 0)
    private var change: (@Sendable () -> Void)?

    /// Power and free space are read this often (a change is then acted on within 5 s:
    /// the transfer loop looks at the readings every 2 s).
    public static let defaultPollSeconds = 2.0

    public init(probes: ConditionProbes, cache: String, meteredDefault: Config.MeteredDefault,
                pollSeconds: Double = ConditionMonitor.defaultPollSeconds) {
        self.probes = probes
        self.cache = cache
        self.meteredDefault = meteredDefault
        self.pollSeconds = pollSeconds
    }

    /// Called after a reading changed (set before `start`).
    public var onChange: (@Sendable () -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return change }
        set { lock.lock(); change = newValue; lock.unlock() }
    }

    /// Starts the watch and the poller (once) and waits for their first readings, at most
    /// the probes' timeout: a kind still without one reads unknown.
    public func start() {
        lock.lock()
        guard !started else { lock.unlock(); return }
        started = true
        lock.unlock()
        let deadline = Clock.monotonicNanoseconds() + UInt64(probes.timeout * 1e9)
        let watch = NetworkWatch(probe: probes.network, timeout: max(0.1, probes.timeout - 0.1)) { [weak self] reading in
            self?.store { $0.network = reading }
        }
        self.watch = watch
        watch.start()
        // The thread holds the monitor only while it polls: a Thread keeps its block, so a
        // block holding the monitor that holds the thread would keep both forever.
        let poller = Thread { [weak self, pollerStopped] in
            self?.pollLoop()
            pollerStopped.signal()
        }
        poller.name = "prefetch condition poller"
        poller.start()
        lock.lock()
        while power == nil || network == nil || free == nil {
            let now = Clock.monotonicNanoseconds()
            guard now < deadline else { break }
            _ = lock.wait(until: Date(timeIntervalSinceNow: Double(deadline - now) / 1e9))
        }
        let late = "no answer within \(ConditionProbes.seconds(probes.timeout))"
        if power == nil { power = .unknown(reason: "power supplies: \(late)") }
        if network == nil { network = .unknown(reason: "NetworkManager probe: \(late)") }
        if free == nil { free = .unknown(reason: "statvfs of \(cache): \(late)") }
        lock.unlock()
    }

    /// Ends the watch and the poller (waiting for each at most the probes' timeout).
    public func stop() {
        lock.lock()
        guard started, !stopping else { lock.unlock(); return }
        stopping = true
        lock.broadcast()
        lock.unlock()
        watch?.stop()
        _ = pollerStopped.wait(timeout: .now() + probes.timeout)
    }

    /// A pass begins: power and free space are read now (waiting at most the probes'
    /// timeout, so the pass plans with fresh readings) and every `pollSeconds` from now on.
    public func beginPass() {
        start()
        lock.lock()
        defer { lock.unlock() }
        polling = true
        pollNow = true
        let before = polls
        lock.broadcast()
        let deadline = Date(timeIntervalSinceNow: probes.timeout + 0.1)
        while polls == before, !stopping, Date() < deadline { _ = lock.wait(until: deadline) }
    }

    /// A pass ended: poll on only when waiting work depends on power or free space.
    public func endPass(keepPolling: Bool) {
        lock.lock()
        polling = keepPolling
        lock.broadcast()
        lock.unlock()
    }

    /// The last readings (unknown before `start`).
    public var readings: ConditionReadings {
        lock.lock()
        defer { lock.unlock() }
        return ConditionReadings(power: power ?? .unknown(reason: "not probed yet"), network: network ?? .unknown(reason: "not probed yet"),
                                 free: free ?? .unknown(reason: "not probed yet"))
    }

    /// The last readings as a snapshot (unknown readings counting as SPEC §7 says).
    public func snapshot() -> ConditionSnapshot {
        ConditionSnapshot(readings, meteredDefault: meteredDefault)
    }

    private struct Slots {
        var power: Probed<PowerState>?
        var network: Probed<Bool>?
        var free: Probed<UInt64>?
    }

    /// Stores what `update` sets, and tells `onChange` when something changed.
    private func store(_ update: (inout Slots) -> Void) {
        lock.lock()
        var slots = Slots(power: power, network: network, free: free)
        update(&slots)
        let changed = slots.power != power || slots.network != network || slots.free != free
        let first = power == nil || network == nil || free == nil
        (power, network, free) = (slots.power, slots.network, slots.free)
        let notify = changed && !first && !stopping ? change : nil
        lock.broadcast()
        lock.unlock()
        notify?()
    }

    private func pollLoop() {
        let powerWorker = BoundedWorker(name: "prefetch power probe")
        let freeWorker = BoundedWorker(name: "prefetch disk probe")
        defer {
            powerWorker.finish()
            freeWorker.finish()
        }
        let powerProbe = probes.power, cache = self.cache
        let late = "no answer within \(ConditionProbes.seconds(probes.timeout))"
        // Stable words while a read stays hung: the reading does not change at every poll.
        func stuck(_ worker: BoundedWorker, _ what: String) -> String {
            "\(what): \(late) (the last read has not returned yet)"
        }
        while true {
            lock.lock()
            while !stopping && !polling && !pollNow { lock.wait() }
            let done = stopping
            pollNow = false
            lock.unlock()
            if done { return }
            let deadline = Clock.monotonicNanoseconds() + UInt64(probes.timeout * 1e9)
            let pendingPower = powerWorker.submit { powerProbe.read() }
            let pendingFree = freeWorker.submit { DiskProbe.read(at: cache) }
            let power = pendingPower.map { $0.wait(until: deadline) ?? .unknown(reason: "power supplies: \(late)") }
                ?? .unknown(reason: stuck(powerWorker, "power supplies"))
            let free = pendingFree.map { $0.wait(until: deadline) ?? .unknown(reason: "statvfs of \(cache): \(late)") }
                ?? .unknown(reason: stuck(freeWorker, "statvfs of \(cache)"))
            store {
                $0.power = power
                $0.free = free
            }
            lock.lock()
            polls += 1
            lock.broadcast()
            let next = Date(timeIntervalSinceNow: pollSeconds)
            while !stopping, polling, !pollNow, Date() < next { _ = lock.wait(until: next) }
            lock.unlock()
        }
    }
}
