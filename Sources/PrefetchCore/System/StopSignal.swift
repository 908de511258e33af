import Foundation

/// SIGTERM/SIGINT turned into a flag the transfer loop checks: transfers pause resumably
/// and the run exits 0 (SPEC §2). Installed before any work starts, so none is missed.
/// The daemon also counts SIGHUP (reload feeds) and SIGUSR1 (run now).
final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var raised: Int32?
    private var pending: Set<Int32> = []
    private var sources: [DispatchSourceSignal] = []

    init(signals: [Int32] = [SIGTERM, SIGINT], also others: [Int32] = []) {
        for number in others {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.note(number) }
            source.resume()
            sources.append(source)
        }
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in self?.raise(number) }
            source.resume()
            sources.append(source)
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }

    private func note(_ number: Int32) {
        lock.lock()
        pending.insert(number)
        lock.unlock()
    }

    /// True once for each arrival of `number` (SIGHUP, SIGUSR1) since the last call.
    func take(_ number: Int32) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return pending.remove(number) != nil
    }

    /// Whether `number` arrived and was not taken yet.
    func has(_ number: Int32) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return pending.contains(number)
    }

    func raise(_ number: Int32) {
        lock.lock()
        if raised == nil { raised = number }
        lock.unlock()
    }

    /// The signal received, if any.
    var received: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return raised
    }
}
