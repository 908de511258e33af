import Foundation
import Glibc
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §7: every probe answers within 2 s whatever it does inside. The calls that hang
/// here are real ones: `open` of a FIFO that no one writes blocks in the kernel until a
/// writer comes, as a sysfs read behind a slow embedded controller or `statvfs` of an
/// unreachable NFS mount does. (A hung `statvfs` cannot be made here without root and a
/// dead server; the disk probe runs on the same `BoundedWorker` as the power probe.)
@Suite struct ProbeTimeoutTests {
    /// A FIFO at `path`, and a way to release whoever waits in `open` on it.
    struct Fifo {
        let path: String

        init(_ path: String) throws {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            guard mkfifo(path, 0o644) == 0 else { throw Errno.current }
            self.path = path
        }

        /// Opens the writing end (a reader waiting in `open` returns), writes `text`, closes
        /// (the reader then sees the end of the file).
        func release(writing text: String = "") {
            let fd = open(path, O_WRONLY | O_NONBLOCK)
            guard fd >= 0 else { return }  // nobody was waiting
            _ = text.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
    }

    static func blockingRead(_ path: String) -> Int32 {
        let fd = open(path, O_RDONLY)
        if fd >= 0 { close(fd) }
        return fd
    }

    @Test func aHungCallIsGivenUpAtItsDeadlineAndNeverPilesUpThreads() throws {
        let folder = try TemporaryFolder()
        let fifo = try Fifo(folder.file("fifo"))
        let worker = BoundedWorker(name: "test worker")
        defer { worker.finish() }
        let path = fifo.path
        let started = Date()
        let first = worker.run(within: 0.5) { Self.blockingRead(path) }
        let waited = Date().timeIntervalSince(started)
        #expect(first == nil, "a call blocked in open(2) answered")
        #expect(waited >= 0.45 && waited < 1.5, "waited \(waited) s for a 0.5 s deadline")
        // While it hangs, a new call is refused at once: no second thread waits behind it.
        let refusedAt = Date()
        #expect(worker.submit { 1 } == nil)
        #expect(Date().timeIntervalSince(refusedAt) < 0.1)
        #expect((worker.stuckFor ?? 0) >= 0.45)
        // Released, the worker takes calls again.
        fifo.release()
        var again: Int?
        for _ in 0..<100 where again == nil {
            again = worker.run(within: 0.5) { 7 }
            if again == nil { usleep(20_000) }
        }
        #expect(again == 7)
        #expect(worker.stuckFor == nil)
    }

    /// A power supply whose `type` file hangs: the reading is unknown within 2 s (+ 1 s for
    /// a loaded machine), counts as AC, and says why; the other probes still answer.
    @Test func aHungPowerSupplyReadsUnknownWithinTheBound() throws {
        let sysfs = try TemporaryFolder()
        let fifo = try Fifo(sysfs.file("BAT0/type"))
        defer { fifo.release() }
        let probes = ConditionProbes(power: PowerProbe(root: sysfs.path),
                                     network: NetworkProbe(bus: SystemBusAddress("unix:path=\(sysfs.file("no-bus"))")))
        let started = Date()
        let readings = probes.read(cache: sysfs.path)
        let took = Date().timeIntervalSince(started)
        #expect(took < 3, "the probes took \(took) s")
        #expect(readings.power == .unknown(reason: "power supplies: no answer within 2 s"))
        #expect(readings.free.value != nil)
        let snapshot = ConditionSnapshot(readings, meteredDefault: .unmetered)
        #expect(snapshot.onAC && snapshot.powerUnknown == "power supplies: no answer within 2 s")
    }

    /// The monitor beside a run: its first reading is bounded the same way, the transfer
    /// loop's `snapshot()` never waits, and once the supply answers the next poll has it,
    /// with `onChange` told.
    @Test func theMonitorKeepsTheLastReadingAndTakesTheNextWhenItComes() throws {
        let sysfs = try TemporaryFolder()
        try sysfs.write("AC/online", "0\n")
        try sysfs.write("BAT0/capacity", "35\n")
        try sysfs.write("BAT0/status", "Discharging\n")
        try sysfs.write("AC/type", "Mains\n")
        let fifo = try Fifo(sysfs.file("BAT0/type"))
        defer { fifo.release() }
        let monitor = ConditionMonitor(probes: ConditionProbes(power: PowerProbe(root: sysfs.path),
                                                               network: NetworkProbe(bus: SystemBusAddress("unix:path=\(sysfs.file("no-bus"))"))),
                                       cache: sysfs.path, meteredDefault: .unmetered, pollSeconds: 0.2)
        let changes = Counter()
        monitor.onChange = { changes.add() }
        let started = Date()
        monitor.start()
        defer { monitor.stop() }
        #expect(Date().timeIntervalSince(started) < 3)
        #expect(monitor.readings.power.unknownReason == "power supplies: no answer within 2 s")
        let asked = Date()
        for _ in 0..<1000 { _ = monitor.snapshot() }
        #expect(Date().timeIntervalSince(asked) < 0.5, "taking the last reading waited")
        // The hung read returns ("Battery"); the next poll reads the whole supply.
        fifo.release(writing: "Battery\n")
        try FileManager.default.removeItem(atPath: fifo.path)
        try sysfs.write("BAT0/type", "Battery\n")
        var power = monitor.readings.power
        for _ in 0..<150 where power.value == nil {
            usleep(20_000)
            power = monitor.readings.power
        }
        #expect(power == .known(PowerState(onAC: false, batteryLevel: 35), source: sysfs.path))
        #expect(changes.value >= 1)
    }

    /// A stopped monitor is freed with everything it read (LeakSanitizer, scripts/sanitize
    /// address: each daemon and run left the monitor, its poller thread and its last
    /// readings behind, held by the thread that held the monitor).
    @Test func aStoppedMonitorIsReleased() throws {
        let sysfs = try TemporaryFolder()
        try sysfs.write("AC/online", "1\n")
        try sysfs.write("AC/type", "Mains\n")
        weak var released: ConditionMonitor?
        do {
            let monitor = ConditionMonitor(probes: ConditionProbes(power: PowerProbe(root: sysfs.path),
                                                                   network: NetworkProbe(bus: SystemBusAddress("unix:path=\(sysfs.file("no-bus"))"))),
                                           cache: sysfs.path, meteredDefault: .unmetered, pollSeconds: 0.05)
            released = monitor
            monitor.start()
            monitor.beginPass()
            monitor.stop()
        }
        for _ in 0..<100 where released != nil { usleep(20_000) }  // the threads end after stop returns
        #expect(released == nil, "the monitor outlived its stop")
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.lock(); count += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return count }
    }
}
