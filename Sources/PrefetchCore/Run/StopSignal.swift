import Foundation

/// SIGTERM/SIGINT turned into a flag the transfer loop checks: transfers pause resumably
/// and the run exits 0 (SPEC §2). Installed before any work starts, so none is missed.
final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var raised: Int32?
    private var sources: [DispatchSourceSignal] = []

    init(signals: [Int32] = [SIGTERM, SIGINT]) {
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
