/// One shard's fsyncs in flight on the `Syncer` and what each one waits to do: place a
/// complete file, or record a running transfer's partial offset once it is durable.
///
/// On tmpfs and ramfs fsync does nothing (`inline`): files are placed at once and a
/// partial kept for resume is fsynced in place; nothing comes here.
final class PendingSyncs {
    /// A complete, verified file waiting for its fsync before the rename.
    struct Placement {
        let transfer: Transfer
        let bytes: UInt64
        let validators: Validators
        let sha256: String?
    }

    /// A periodic fsync of a running transfer's partial: what to record once it is durable.
    struct PartialOffset {
        let transfer: Transfer
        let offset: UInt64
        /// The body this offset belongs to (a restart from zero begins a new one).
        let epoch: Int
        let validators: Validators
        let total: UInt64?
    }

    enum Finished {
        case placement(Placement, Result<Void, Errno>)
        case partial(PartialOffset, Result<Void, Errno>)
    }

    let inline: Bool
    private let syncer: Syncer
    private var nextID = 0
    private var placements: [Int: Placement] = [:]
    private var partials: [Int: PartialOffset] = [:]

    private let faults: FaultPoints
    /// Results a fault point gave instead of an fsync, returned by the next `takeFinished`.
    private var injected: [Finished] = []

    init(inline: Bool, waker: CurlMulti.Waker, faults: FaultPoints) {
        self.inline = inline
        self.faults = faults
        syncer = Syncer(maxWorkers: Self.workers, onFinished: { waker.wake() })
    }

    /// fsyncs of one shard that run at once: as many as it lets complete files wait for
    /// (`EngineShard.placementBacklog` is at least 32). The device merges the cache flushes
    /// of fsyncs that wait together, so more in flight means fewer flushes per file and,
    /// for many small files, less time waiting on the device (docs/BENCHMARKS.md, "On disk:
    /// what durability costs", compares 8 with 32). A worker waiting in fsync costs no CPU,
    /// and workers start only when every one is busy.
    static let workers = 32

    var isEmpty: Bool { placements.isEmpty && partials.isEmpty && injected.isEmpty }
    var placementCount: Int { placements.count }

    func awaitPlacement(_ file: FileDescriptor, _ placement: Placement) {
        if let error = faults.reach(.fileFsync) { return injected.append(.placement(placement, .failure(error))) }
        placements[submit(file)] = placement
    }

    func awaitPartial(_ file: FileDescriptor, _ partial: PartialOffset) {
        if let error = faults.reach(.partialFsync) { return injected.append(.partial(partial, .failure(error))) }
        partials[submit(file)] = partial
    }

    /// Whether a partial fsync of `transfer` is already in flight (one at a time).
    func isSyncingPartial(of transfer: Transfer) -> Bool {
        partials.values.contains { $0.transfer === transfer }
    }

    /// The fsyncs that ended since the last call, with what each waited to do.
    func takeFinished() -> [Finished] {
        guard !inline else { return [] }
        defer { injected = [] }
        return injected + syncer.takeFinished().compactMap { done in
            if let placement = placements.removeValue(forKey: done.id) { return .placement(placement, done.result) }
            if let partial = partials.removeValue(forKey: done.id) { return .partial(partial, done.result) }
            return nil
        }
    }

    func waitForAny(seconds: Double) { syncer.waitForAny(seconds: seconds) }

    func shutDown() { syncer.shutDown() }

    private func submit(_ file: FileDescriptor) -> Int {
        nextID += 1
        syncer.submit(id: nextID, file: file)
        return nextID
    }
}
