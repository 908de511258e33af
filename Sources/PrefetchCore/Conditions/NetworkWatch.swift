import Foundation

/// Keeps the network reading current for as long as it runs (a `run`, the daemon's life),
/// on a thread of its own: one connection to the system bus, subscribed to
/// NetworkManager's changes (`NetworkManagerClient.matches`), read again `settle` after a
/// change is signalled, `retry` after a reading that was unknown, and every `refresh`
/// besides. Every read is bounded by `timeout`; a connection that fails is made again
/// after a growing pause. No process is spawned and nothing polls: between changes the
/// thread sleeps in `poll` on the connection.
final class NetworkWatch: @unchecked Sendable {
    private let probe: NetworkProbe
    private let timeout: Double
    private let publish: @Sendable (Probed<Bool>) -> Void
    private let stopPipe = WakePipe()
    private let stopped = DispatchSemaphore(value: 0)

    static let settle = 0.1
    static let retry = 5.0
    static let refresh = 60.0
    static let maxBackoff = 60.0
    /// Without a bus socket, how often it looks for one again.
    static let absentRecheck = 30.0

    init(probe: NetworkProbe, timeout: Double, publish: @escaping @Sendable (Probed<Bool>) -> Void) {
        self.probe = probe
        self.timeout = timeout
        self.publish = publish
    }

    func start() {
        let thread = Thread { [self] in
            loop()
            stopped.signal()
        }
        thread.name = "prefetch network watch"
        thread.start()
    }

    /// Ends the thread (it is waiting on the bus or sleeping: it wakes at once), waiting
    /// for it at most `timeout`.
    func stop() {
        stopPipe.raise()
        _ = stopped.wait(timeout: .now() + timeout)
    }

    private static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(seconds * 1e9) }

    /// Sleeps until `deadline` or a stop; true when stopped.
    private func sleep(until deadline: UInt64) -> Bool { stopPipe.sleep(until: deadline) }

    private var isStopped: Bool { stopPipe.isRaised }

    private func loop() {
        var backoff = Self.retry
        while !isStopped {
            if let absence = probe.bus.absence {
                publish(.unknown(reason: absence))
                if sleep(until: Clock.monotonicNanoseconds() + Self.nanoseconds(Self.absentRecheck)) { return }
                continue
            }
            let connection: BusConnection
            do {
                connection = try BusConnection(address: probe.bus.address)
                for rule in NetworkManagerClient.matches { _ = try connection.send(NetworkManagerClient.addMatch(rule)) }
            } catch {
                publish(.unknown(reason: error.description))
                if sleep(until: Clock.monotonicNanoseconds() + Self.nanoseconds(backoff)) { return }
                backoff = min(backoff * 2, Self.maxBackoff)
                continue
            }
            switch watch(connection) {
            case .stopped: return
            case .lost(let failure):
                publish(.unknown(reason: failure.description))
                if sleep(until: Clock.monotonicNanoseconds() + Self.nanoseconds(backoff)) { return }
                backoff = min(backoff * 2, Self.maxBackoff)
            case .fine:
                backoff = Self.retry
                if sleep(until: Clock.monotonicNanoseconds() + Self.nanoseconds(1)) { return }
            }
        }
    }

    private enum End {
        case stopped
        case lost(BusFailure)
        /// It worked a while, then the connection ended: make a new one at once.
        case fine
    }

    /// Reads and re-reads over one connection until it fails or a stop.
    private func watch(_ connection: BusConnection) -> End {
        var nextRead = Clock.monotonicNanoseconds()
        var everRead = false
        while true {
            if Clock.monotonicNanoseconds() >= nextRead {
                var changed = false
                do {
                    let state = try NetworkManagerClient.read(connection, until: Clock.monotonicNanoseconds() + Self.nanoseconds(timeout),
                                                              signal: { if NetworkManagerClient.isChange($0) { changed = true } })
                    let reading = MeteredRule.reading(state)
                    publish(reading)
                    everRead = true
                    let pause = changed ? Self.settle : reading.value == nil ? Self.retry : Self.refresh
                    nextRead = Clock.monotonicNanoseconds() + Self.nanoseconds(pause)
                } catch {
                    guard error.serviceOnly else { return .lost(error) }
                    publish(.unknown(reason: error.description))
                    // Not running: its start is signalled (NameOwnerChanged); a hung one is asked again.
                    nextRead = Clock.monotonicNanoseconds() + Self.nanoseconds(error.timedOut ? Self.retry : Self.refresh)
                }
            }
            do {
                let outcome = try connection.run(until: nextRead, wake: stopPipe.readEnd) { message in
                    NetworkManagerClient.isChange(message)
                }
                switch outcome {
                case .woken: return .stopped
                case .handled: nextRead = min(nextRead, Clock.monotonicNanoseconds() + Self.nanoseconds(Self.settle))
                case .deadline: break
                }
            } catch {
                return everRead ? .fine : .lost(error)
            }
        }
    }
}
