import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §6 "The daemon speaks systemd", through the real binary and the real tools: the
/// daemon's datagrams on a real notify socket (a path's and an abstract name's), journal
/// priority prefixes on a stream `JOURNAL_STREAM` names, and the units in `etc/` through
/// `systemd-analyze verify` and `security`, with their system-call filter checked against
/// what prefetch calls under strace.
@Suite(.serialized) struct SystemdTests {
    static let etc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../etc").standardized
    static func tool(_ name: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/sbin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
    static let analyze = tool("systemd-analyze")
    static let strace = tool("strace")

    static func random(_ count: Int, seed: UInt64) -> [UInt8] { RunCommandTests.random(count, seed: seed) }

    /// Gaps between consecutive moments, in seconds.
    static func gaps(_ moments: [Date]) -> [Double] { zip(moments.dropFirst(), moments).map { $0.timeIntervalSince($1) } }

    /// READY=1 first; STATUS= while a slow file transfers, then the next wake-up; WATCHDOG=1 at
    /// half of WATCHDOG_USEC through the pass (the transfer loop pings) and the idle sleep
    /// (which ends for it); STOPPING=1 after SIGTERM, and exit 0.
    @Test func theDaemonTellsSystemdWhatItDoesAndPingsTheWatchdog() throws {
        let setup = try FaultHarness()
        let body = Self.random(300_000, seed: 61)
        setup.origin.serve("/big.bin", OriginResource(body, etag: "\"v1\""))
        setup.origin.inject("/big.bin", [.trickle(bytesPerSecond: 150_000)])  // about 2 s
        try setup.feed("resources:\n  - url: ORIGIN/big.bin\n")
        let listener = try NotifyListener(setup.dir.file("notify"))
        defer { listener.close() }
        let timeout = 1.2  // WATCHDOG_USEC: pinged every 0.6 s
        let (process, log) = try setup.startDaemon(environment: ["NOTIFY_SOCKET": listener.name, "WATCHDOG_USEC": "1200000"])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }

        let transferring = try #require(listener.waitFor { $0.hasPrefix("STATUS=transferring 1: t/big.bin ") }, "\(listener.messages)")
        let idle = try #require(listener.waitFor { $0.hasPrefix("STATUS=idle, next wake-up ") }, "\(listener.messages)")
        #expect(listener.messages.first?.message.hasPrefix("READY=1\nSTATUS=loaded 1 feed") == true, "\(listener.messages)")
        #expect(setup.cached("t/big.bin") == body)
        #expect(idle.line.hasSuffix("· last pass: 1 placed, 0 fresh, 0 failed, 0 paused"), "\(idle.line)")
        // Why it wakes then: the feed's next release (no schedule, no window: `refresh` after this one finished).
        #expect(idle.line.hasSuffix(" (release of t) · last pass: 1 placed, 0 fresh, 0 failed, 0 paused"), "\(idle.line)")
        Thread.sleep(forTimeInterval: 2)  // idle: the sleep ends for each ping
        // The journal says it too, after the pass's `run:` line.
        let journal = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        // (TimeFormat leaves the seconds out when they are 0: one wake-up in 60 fell on :00 and failed here.)
        #expect(journal.contains(try Regex(#"\nprefetch daemon: next wake-up \w{3} \d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? [+-]\d\d:\d\d \(release of t\)\n"#)), "\(journal)")
        let stopAt = Date()
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        let stopping = try #require(listener.waitFor(2) { $0 == "STOPPING=1" })
        #expect(stopping.at >= stopAt)

        let pings = listener.pings
        let gaps = Self.gaps(pings)
        #expect(pings.filter { $0 > transferring.at && $0 < idle.at }.count >= 2, "pings during the transfer: \(pings)")
        #expect(pings.filter { $0 > idle.at && $0 < stopAt }.count >= 3, "pings while idle: \(pings)")
        #expect((gaps.max() ?? .infinity) < timeout, "gaps between pings: \(gaps)")
        #expect((gaps.min() ?? 0) > timeout / 2 * 0.8, "pinged more often than half the timeout: \(gaps)")
    }

    /// Another writer holds the lock: READY=1, then STATUS=waiting for the cache lock, the
    /// watchdog pinged through the wait; the pass once the lock is free.
    @Test func theLockWaitIsToldAndTheWatchdogPingedThroughIt() throws {
        let setup = try FaultHarness()
        setup.origin.serve("/one.bin", OriginResource(Self.random(1000, seed: 62)))
        try setup.feed("resources:\n  - url: ORIGIN/one.bin\n")
        try FileManager.default.createDirectory(at: setup.cache.appendingPathComponent(".prefetch"), withIntermediateDirectories: true)
        let lock = open(setup.cache.path + "/.prefetch/lock", O_RDWR | O_CREAT, 0o644)
        #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
        let listener = try NotifyListener(setup.dir.file("notify"))
        defer { listener.close() }
        let (process, _) = try setup.startDaemon(environment: ["NOTIFY_SOCKET": listener.name, "WATCHDOG_USEC": "2000000"])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }

        let waiting = try #require(listener.waitFor { $0 == "STATUS=waiting for the cache lock" }, "\(listener.messages)")
        let ready = try #require(listener.waitFor { $0 == "READY=1" })
        #expect(ready.at <= waiting.at)
        Thread.sleep(forTimeInterval: 2.6)
        #expect(setup.cached("t/one.bin") == nil)
        let released = Date()
        close(lock)
        let running = try #require(listener.waitFor { $0 == "STATUS=running a pass" })
        #expect(running.at >= released)
        #expect(listener.waitFor { $0.hasPrefix("STATUS=idle, next wake-up ") } != nil)
        #expect(setup.cached("t/one.bin") != nil)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(listener.waitFor(2) { $0 == "STOPPING=1" } != nil)
        let pings = listener.pings
        #expect(pings.filter { $0 > waiting.at && $0 < released }.count >= 2, "pings during the wait: \(pings)")
        #expect((Self.gaps(pings).max() ?? .infinity) < 2, "gaps between pings: \(Self.gaps(pings))")
    }

    /// `NOTIFY_SOCKET=@name` (the abstract namespace, as systemd itself uses); a WATCHDOG_PID
    /// naming another process means no watchdog for this one.
    @Test func anAbstractSocketAndAWatchdogMeantForAnotherProcess() throws {
        let setup = try FaultHarness()
        setup.origin.serve("/one.bin", OriginResource(Self.random(1000, seed: 63)))
        try setup.feed("resources:\n  - url: ORIGIN/one.bin\n")
        let listener = try NotifyListener("@prefetch-test-" + UUID().uuidString)
        defer { listener.close() }
        let (process, _) = try setup.startDaemon(environment: ["NOTIFY_SOCKET": listener.name, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"])
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(listener.waitFor { $0 == "READY=1" } != nil)
        #expect(listener.waitFor { $0.hasPrefix("STATUS=idle, next wake-up ") } != nil, "\(listener.messages)")
        Thread.sleep(forTimeInterval: 1)  // ten pings, were the watchdog this process's
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(listener.waitFor(2) { $0 == "STOPPING=1" } != nil)
        #expect(listener.pings.isEmpty, "\(listener.messages)")
    }

    // MARK: The journal

    /// Where a journaled run's stdout and stderr go, and which of them `JOURNAL_STREAM` names.
    enum Journal { case both, out, err, elsewhere }

    /// Runs `prefetch arguments` in `dir` with stdout and stderr to files (one file when
    /// `.both`, as systemd connects both to one journal stream) and `JOURNAL_STREAM` naming
    /// the device and inode of the one(s) `journal` says.
    static func journaled(_ arguments: [String], in dir: TemporaryFolder, journal: Journal) throws -> (status: Int32, out: String, err: String) {
        let outPath = try dir.write("stdout-\(UUID().uuidString)", "")
        let errPath = journal == .both ? outPath : try dir.write("stderr-\(UUID().uuidString)", "")
        let other = try dir.write("elsewhere", "")
        func identity(_ path: String) -> String {
            var info = stat()
            _ = stat(path, &info)
            return "\(info.st_dev):\(info.st_ino)"
        }
        let named = switch journal {
        case .both, .out: identity(outPath)
        case .err: identity(errPath)
        case .elsewhere: identity(other)
        }
        let process = Process()
        process.executableURL = BinaryRunner.executable
        process.arguments = arguments
        process.currentDirectoryURL = dir.url
        process.environment = ["PATH": "/usr/bin:/bin", "TZ": "UTC", "HOME": dir.path, "JOURNAL_STREAM": named]
        let outHandle = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let errHandle = journal == .both ? outHandle : try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardOutput = outHandle
        process.standardError = errHandle
        try process.run()
        process.waitUntilExit()
        try outHandle.close()
        if journal != .both { try errHandle.close() }
        return (process.terminationStatus, try String(contentsOfFile: outPath, encoding: .utf8),
                journal == .both ? "" : try String(contentsOfFile: errPath, encoding: .utf8))
    }

    static func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    /// `<3>` errors, `<4>` warnings, `<6>` information on the stream the journal reads; only
    /// there; and never before a `--json` line.
    @Test func linesToTheJournalCarryTheirPriority() throws {
        let setup = try FaultHarness()
        setup.origin.serve("/a.bin", OriginResource(Self.random(2000, seed: 64)))
        try setup.feed("resources:\n  - url: ORIGIN/a.bin\n  - url: ORIGIN/gone.bin\n")
        try setup.dir.write("bad/b.yaml", "resources:\n  - urll: ORIGIN/x.bin\n")
        try FileManager.default.createDirectory(at: setup.dir.url.appendingPathComponent("empty"), withIntermediateDirectories: true)
        let run = ["run", "--feeds", "feeds", "--config", "/dev/null", "--cache"]

        // stdout and stderr both the journal's, as under StandardOutput=journal.
        let both = try Self.journaled(run + ["cache1"], in: setup.dir, journal: .both)
        #expect(both.status == 1)
        let lines = Self.lines(both.out)
        #expect(lines.contains { $0.hasPrefix("<6>placed  t/a.bin  ") }, "\(both.out)")
        #expect(lines.contains { $0.hasPrefix("<3>failed  t/gone.bin  HTTP 404") }, "\(both.out)")
        #expect(lines.contains { $0.hasPrefix("<6>run: 1 placed, 0 fresh (304), 1 failed, 0 held, 0 pruned, 0 paused") }, "\(both.out)")
        #expect(lines.allSatisfy { $0.hasPrefix("<3>") || $0.hasPrefix("<4>") || $0.hasPrefix("<6>") }, "\(both.out)")

        // Only the descriptor JOURNAL_STREAM names: stderr here, not stdout.
        let errOnly = try Self.journaled(run + ["cache2"], in: setup.dir, journal: .err)
        #expect(Self.lines(errOnly.err) == ["<3>failed  t/gone.bin  HTTP 404"], "\(errOnly.err)")
        #expect(Self.lines(errOnly.out).contains { $0.hasPrefix("placed  t/a.bin  ") }, "\(errOnly.out)")

        // --json on the journal's stdout: the JSON lines as they are.
        let json = try Self.journaled(run + ["cache3", "--json"], in: setup.dir, journal: .out)
        let jsonLines = Self.lines(json.out)
        #expect(jsonLines.count >= 3 && jsonLines.allSatisfy { $0.hasPrefix("{\"type\":") }, "\(json.out)")

        // Diagnostics: each line of an error (source and caret too), a warning, the count.
        let validate = try Self.journaled(["validate", "bad", "empty", "--config", "/dev/null"], in: setup.dir, journal: .err)
        #expect(validate.status == 2)
        #expect(Self.lines(validate.err) == [
            "<4>empty: warning: no feed manifests (*.yaml, *.yml) in this folder",
            "<3>bad/b.yaml:2:5: error: unknown key 'urll' in a resource (did you mean 'url'?)",
            "<3>  - urll: ORIGIN/x.bin",
            "<3>    ^",
            "<3>bad/b.yaml:2:5: error: a resource needs a 'url'",
            "<3>  - urll: ORIGIN/x.bin",
            "<3>    ^",
            "<3>prefetch: 2 errors, 1 warning in 1 file",
        ], "\(validate.err)")

        // A JOURNAL_STREAM inherited by a process whose streams go elsewhere: no prefixes.
        let elsewhere = try Self.journaled(["validate", "bad", "--config", "/dev/null"], in: setup.dir, journal: .elsewhere)
        #expect(!elsewhere.err.isEmpty && !elsewhere.err.contains("<3>") && !elsewhere.out.contains("<"), "\(elsewhere.err)")
    }

    // MARK: The units

    /// The units of `etc/`, each as `[section: [(key, value)]]`, in file order.
    static func unit(_ name: String) throws -> [String: [(key: String, value: String)]] {
        var sections: [String: [(key: String, value: String)]] = [:]
        var section = ""
        for line in try String(contentsOf: etc.appendingPathComponent(name), encoding: .utf8).split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            if text.hasPrefix("[") { section = String(text.dropFirst().dropLast()); continue }
            guard let equals = text.firstIndex(of: "=") else { continue }
            sections[section, default: []].append((String(text[..<equals]), String(text[text.index(after: equals)...])))
        }
        return sections
    }

    static func values(_ unit: [String: [(key: String, value: String)]], _ section: String, _ key: String) -> [String] {
        (unit[section] ?? []).filter { $0.key == key }.map(\.value)
    }

    /// What SPEC §6 asks of the units, line by line (the tools below check that they load).
    @Test(arguments: ["prefetch-run.service", "prefetch-daemon.service"])
    func theServicesAreSandboxedAsTheSpecSays(name: String) throws {
        let unit = try Self.unit(name)
        let service = unit["Service"] ?? []
        let one = { (key: String) in Self.values(unit, "Service", key).last }
        #expect(one("ExecStart")?.hasPrefix("/usr/bin/prefetch ") == true)
        #expect(one("ProtectSystem") == "strict")
        #expect(one("NoNewPrivileges") == "yes" && one("PrivateTmp") == "yes")
        #expect(one("User") == "prefetch" && one("Group") == "prefetch")
        #expect(Self.values(unit, "Service", "ReadWritePaths").joined(separator: " ").split(separator: " ")
            == ["/var/cache/prefetch", "-/var/lib/prometheus/node-exporter"])
        #expect(Self.values(unit, "Unit", "After").joined(separator: " ").split(separator: " ").sorted()
            == ["network-online.target", "time-sync.target"])
        #expect(Self.values(unit, "Unit", "Wants") == ["network-online.target"])
        #expect(service.contains { $0.key == "CapabilityBoundingSet" && $0.value.isEmpty })
        if name == "prefetch-daemon.service" {
            #expect(one("Type") == "notify" && one("NotifyAccess") == "main")
            #expect(one("WatchdogSec") != nil)
        } else {
            #expect(one("Type") == "oneshot")
        }
    }

    @Test func theTimerCatchesUpAndLeavesTheSpreadToJitter() throws {
        let timer = try Self.unit("prefetch-run.timer")
        #expect(Self.values(timer, "Timer", "Persistent") == ["true"])
        #expect(Self.values(timer, "Timer", "RandomizedDelaySec") == ["0"])
        #expect(Self.values(timer, "Timer", "Unit") == ["prefetch-run.service"])
        #expect(!Self.values(timer, "Timer", "OnCalendar").isEmpty)
    }

    /// The units in a folder, pointing at the built binary (which `verify` checks exists), and
    /// the binary's man page in `man/man1/` beside them (their `Documentation=man:prefetch(1)`:
    /// `verify` runs `man` on it; `manPath` is the MANPATH that finds it).
    static func unitsForTheBuiltBinary(in dir: TemporaryFolder) throws -> [String] {
        let page = try BinaryRunner.run(["help", "--man"])
        try #require(page.status == 0 && !page.stdout.isEmpty, "\(page.diagnostics)")
        _ = try dir.write("man/man1/prefetch.1", page.stdout)
        return try ["prefetch-run.service", "prefetch-run.timer", "prefetch-daemon.service"].map { name in
            let text = try String(contentsOf: etc.appendingPathComponent(name), encoding: .utf8)
            return try dir.write(name, text.replacingOccurrences(of: "=/usr/bin/prefetch ", with: "=\(BinaryRunner.executable.path) "))
        }
    }

    @Test(.enabled(if: SystemdTests.analyze != nil, "systemd-analyze is not installed"))
    func theUnitsPassSystemdAnalyzeVerify() throws {
        let dir = try TemporaryFolder()
        let units = try Self.unitsForTheBuiltBinary(in: dir)
        let result = try BinaryRunner.run(["verify"] + units, environment: ["MANPATH": dir.file("man")],
                                          executable: URL(fileURLWithPath: Self.analyze!))
        #expect(result.status == 0, "\(result.diagnostics)")
        #expect(result.stdout.isEmpty && result.stderr.isEmpty, "\(result.diagnostics)")  // no warning either
    }

    /// `systemd-analyze security` scores each service's exposure, 0 (locked down) to 10: both
    /// are at most 1.1 (6.3 before the sandbox was tightened; docs/installing.md, "The sandbox", says why the rest stays).
    @Test(.enabled(if: SystemdTests.analyze != nil, "systemd-analyze is not installed"),
          arguments: ["prefetch-run.service", "prefetch-daemon.service"])
    func theServicesScoreLowOnSystemdAnalyzeSecurity(name: String) throws {
        let dir = try TemporaryFolder()
        _ = try Self.unitsForTheBuiltBinary(in: dir)
        let result = try BinaryRunner.run(["security", "--offline=yes", "--no-pager", dir.file(name)],
                                          executable: URL(fileURLWithPath: Self.analyze!))
        let marker = "Overall exposure level for \(name): "
        let line = try #require(result.stdout.split(separator: "\n").first { $0.contains(marker) }, "\(result.diagnostics)")
        let score = try #require(Double(line.components(separatedBy: marker)[1].split(separator: " ")[0]), "\(line)")
        #expect(score <= 1.1, "\(line)")
    }

    // MARK: libdispatch's worker threads under the units' Nice= and system-call filter

    /// A Python program (ctypes, nothing installed) that installs a seccomp filter answering
    /// `setpriority` with EPERM, as the units' `SystemCallFilter=~@resources` with
    /// `SystemCallErrorNumber=EPERM` does, checks that it holds, and runs its arguments.
    static let withoutSetpriority = #"""
    import ctypes, errno, os, platform, struct, sys
    arch, number = {"x86_64": (0xC000003E, 141), "aarch64": (0xC00000B7, 140)}[platform.machine()]
    def op(code, k, jt=0, jf=0): return struct.pack("HBBI", code, jt, jf, k)
    LOAD, JEQ, RET, ALLOW, EPERM = 0x20, 0x15, 0x06, 0x7FFF0000, 0x00050000 | errno.EPERM
    program = b"".join([op(LOAD, 4), op(JEQ, arch, 1, 0), op(RET, ALLOW),
                        op(LOAD, 0), op(JEQ, number, 0, 1), op(RET, EPERM), op(RET, ALLOW)])
    class Filter(ctypes.Structure): _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(Filter(len(program) // 8, program)), 0, 0) != 0:
        sys.exit("seccomp: errno %d" % ctypes.get_errno())
    try:
        os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0))
        sys.exit("seccomp: setpriority was not refused")
    except PermissionError:
        pass
    os.execv(sys.argv[1], sys.argv[1:])
    """#

    static let python = tool("python3")

    /// Issue 19: under systemd 252 every pass and start wrote 5–8 `Failed to set thread
    /// priority for worker thread … errno=1` lines to the journal. Each worker thread
    /// libdispatch starts (signal sources, queues, Foundation's `Process`) sets its own nice
    /// value from its QoS with `setpriority` (swift-corelibs-libdispatch,
    /// `_dispatch_worker_thread`), which the units' filter refuses with EPERM; libdispatch
    /// logs each refusal (to syslog, here to stderr with `LIBDISPATCH_LOG=stderr`). prefetch
    /// now starts no libdispatch worker: its signals and its hashing run on threads of its
    /// own. Run here under `nice -n 10` and a seccomp filter refusing `setpriority` (no PID-1
    /// systemd needed): a `run` (hashed bodies, a 404, the NetworkManager probe on a real
    /// private bus), a daemon's start, first pass and a second pass on SIGUSR1, and its stop —
    /// and no such line.
    @Test(.enabled(if: SystemdTests.python != nil && PrivateBus.daemon != nil, "needs python3 and dbus-daemon"))
    func libdispatchSetsNoThreadPriority() throws {
        let setup = try FaultHarness()
        var yaml = "retry: { attempts: 1, backoff: 1s }\nresources:\n  - url: ORIGIN/gone.bin\n"
        for index in 0..<6 {
            let body = Self.random(700_000, seed: 80 + UInt64(index))
            setup.origin.serve("/h\(index).bin", OriginResource(body, etag: "\"h\(index)\""))
            yaml += "  - url: ORIGIN/h\(index).bin\n    sha256: \(FaultTests.sha(body))\n"
        }
        try setup.feed(yaml)
        let wrapper = try setup.dir.write("without-setpriority.py", Self.withoutSetpriority)
        let bus = try PrivateBus(in: setup.dir)  // a system bus without NetworkManager: the probe connects and asks
        let environment = ["LIBDISPATCH_LOG": "stderr", "DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        func confined(_ arguments: [String]) -> [String] {
            ["-n", "10", Self.python!, wrapper, BinaryRunner.executable.path] + arguments + ["--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
        }
        let nice = URL(fileURLWithPath: Self.tool("nice") ?? "/usr/bin/nice")
        let run = try BinaryRunner.run(confined(["run"]), in: setup.dir.url, environment: environment, executable: nice)
        #expect(run.status == 1 && run.stdout.contains("placed  t/h5.bin") && run.stderr.contains("failed  t/gone.bin  HTTP 404"),
                "\(run.diagnostics)")
        #expect(!run.stderr.contains("thread priority") && !run.stderr.contains("seccomp"), "\(run.stderr)")

        try FileManager.default.removeItem(at: setup.cache)
        let listener = try NotifyListener(setup.dir.file("notify"))
        defer { listener.close() }
        let daemon = try BinaryRunner.start(confined(["daemon"]), in: setup.dir.url,
                                            environment: environment.merging(["NOTIFY_SOCKET": listener.name]) { $1 }, executable: nice)
        defer { if daemon.process.isRunning { kill(daemon.process.processIdentifier, SIGKILL) } }
        #expect(listener.waitFor(30) { $0.hasPrefix("STATUS=idle") } != nil, "\(listener.messages)")
        let first = listener.messages.count
        kill(daemon.process.processIdentifier, SIGUSR1)  // a second pass
        #expect(listener.waitFor(30) { _ in listener.messages.count > first + 1 && listener.messages.last?.message.hasPrefix("STATUS=idle") == true }
                != nil, "\(listener.messages)")
        kill(daemon.process.processIdentifier, SIGTERM)
        let stopped = try daemon.finish(timeout: 30)
        #expect(stopped.status == 0 && stopped.stdout.contains("placed  t/h0.bin"), "\(stopped.diagnostics)")
        #expect(!stopped.stderr.contains("thread priority") && !stopped.stderr.contains("seccomp"), "\(stopped.stderr)")
    }

    // MARK: The sandbox against what prefetch calls

    /// The system calls a `SystemCallFilter=` group holds, with its nested groups, as this
    /// systemd's `systemd-analyze syscall-filter` lists them.
    static func syscallGroups() throws -> [String: Set<String>] {
        let listing = try BinaryRunner.run(["syscall-filter", "--no-pager"], executable: URL(fileURLWithPath: analyze!)).stdout
        var direct: [String: [String]] = [:]
        var current: String?
        for line in listing.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { current = nil; continue }
            if !line.hasPrefix(" ") && text.hasPrefix("@") { current = text; continue }
            if let current, !text.hasPrefix("#") { direct[current, default: []].append(text) }
        }
        func expand(_ group: String, _ seen: Set<String> = []) -> Set<String> {
            Set((direct[group] ?? []).flatMap { $0.hasPrefix("@") && !seen.contains($0) ? expand($0, seen.union([group])) : [$0] })
        }
        return Dictionary(uniqueKeysWithValues: direct.keys.map { ($0, expand($0)) })
    }

    /// Calls outside the filter that the trace saw failing already for an unprivileged user,
    /// and why they may: the filter changes only their errno (EPERM). (`setpriority` was one,
    /// libdispatch's worker threads setting their nice value, until prefetch stopped starting
    /// any: `libdispatchSetsNoThreadPriority`.)
    static let refusedAnyway: [String: String] = [:]

    /// A `run` (one resource by name through the resolver, one 404, the NetworkManager probe
    /// loading libsystemd and talking sd-bus to a real dbus-daemon) and a daemon with a
    /// notify socket (its monitor connected to the same bus for its life), traced with
    /// strace as an unprivileged user at nice 10, as `User=prefetch` and `Nice=10` run it:
    /// every call that succeeded is one the units' `SystemCallFilter=` lines allow, every
    /// socket of an allowed family, and no memory both writable and executable
    /// (`MemoryDenyWriteExecute=`).
    @Test(.enabled(if: SystemdTests.analyze != nil && SystemdTests.strace != nil && getuid() == 0 && PrivateBus.daemon != nil,
                   "needs systemd-analyze, strace, dbus-daemon, and root to run prefetch as nobody"))
    func theSandboxAllowsWhatPrefetchCalls() throws {
        let setup = try FaultHarness()
        setup.origin.serve("/a.bin", OriginResource(Self.random(5000, seed: 65), etag: "\"a\""))
        let byName = setup.origin.url("").replacingOccurrences(of: "127.0.0.1", with: "localhost")
        try setup.dir.write("feeds/t.yaml", "resources:\n  - url: \(byName)/a.bin\n  - url: \(byName)/gone.bin\n")
        _ = chown(setup.dir.path, 65534, 65534)
        _ = chown(setup.dir.file("feeds"), 65534, 65534)
        let listener = try NotifyListener(setup.dir.file("notify"))
        defer { listener.close() }
        _ = chmod(listener.name, 0o777)
        // A real system bus (without NetworkManager on it): the probe connects, authenticates as
        // nobody and asks, through sd-bus in libsystemd, as it does on a kiosk.
        let bus = try PrivateBus(in: setup.dir)
        let environment = BinaryRunner.traced(["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
        func traced(_ arguments: [String], trace: String) -> [String] {
            ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/nice", "-n", "10", Self.strace!, "-f", "-qq", "-o", setup.dir.file(trace),
             BinaryRunner.executable.path] + arguments + ["--feeds", "feeds", "--cache", "cache", "--config", "/dev/null"]
        }
        let setpriv = URL(fileURLWithPath: Self.tool("setpriv") ?? "/usr/bin/setpriv")
        let run = try BinaryRunner.run(traced(["run"], trace: "run.trace"), in: setup.dir.url, environment: environment, executable: setpriv)
        #expect(run.status == 1 && run.stdout.contains("placed  t/a.bin"), "\(run.diagnostics)")

        let daemon = try BinaryRunner.start(traced(["daemon"], trace: "daemon.trace"), in: setup.dir.url,
                                            environment: environment.merging(["NOTIFY_SOCKET": listener.name, "WATCHDOG_USEC": "400000"]) { $1 },
                                            executable: setpriv)
        #expect(listener.waitFor(20) { $0.hasPrefix("STATUS=idle") } != nil, "\(listener.messages)")
        let first = try String(contentsOfFile: setup.dir.file("daemon.trace"), encoding: .utf8).prefix { $0 != " " }
        kill(try #require(Int32(first)), SIGTERM)  // the daemon, not strace
        let stopped = try daemon.finish(timeout: 20)
        #expect(stopped.status == 0, "\(stopped.diagnostics)")
        #expect(listener.waitFor(2) { $0 == "STOPPING=1" } != nil)

        let groups = try Self.syscallGroups()
        let unit = try Self.unit("prefetch-daemon.service")
        #expect(try Self.unit("prefetch-run.service")["Service"]?.filter { $0.key == "SystemCallFilter" }.map(\.value)
            == unit["Service"]?.filter { $0.key == "SystemCallFilter" }.map(\.value))
        var allowed = Set<String>()
        for line in Self.values(unit, "Service", "SystemCallFilter") {
            let deny = line.hasPrefix("~")
            let names = (deny ? String(line.dropFirst()) : line).split(separator: " ").map(String.init)
            let calls = names.reduce(into: Set<String>()) { $0.formUnion($1.hasPrefix("@") ? groups[$1] ?? [] : [$1]) }
            if deny { allowed.subtract(calls) } else { allowed.formUnion(calls) }
        }
        #expect(allowed.count > 300 && !allowed.contains("setpriority") && !allowed.contains("mount"), "\(allowed.count)")
        let families = Set(Self.values(unit, "Service", "RestrictAddressFamilies").joined(separator: " ").split(separator: " ").map(String.init))

        let call = try Regex(#"^\d+ +(?:<\.\.\. )?([a-z0-9_]+)[( ]"#)
        var succeeded = Set<String>(), failed = Set<String>(), socketFamilies = Set<String>(), writableExecutable: [String] = []
        var probed = false
        var busConnects = Set<Substring>()  // pids whose bus connect was interrupted
        for trace in ["run.trace", "daemon.trace"] {
            for line in try String(contentsOfFile: setup.dir.file(trace), encoding: .utf8).split(separator: "\n") {
                guard let match = line.firstMatch(of: call), let name = match.output[1].substring.map(String.init) else { continue }
                // A connect another thread interrupts is split: `connect(…sun_path=… <unfinished ...>`,
                // then `<... connect resumed>) = 0` on a line of its own (strace -f, one file).
                let pid = line.prefix { $0 != " " }
                if name == "connect" && line.contains("sun_path=\"\(bus.socket)\"") {
                    if line.hasSuffix(" = 0") { probed = true } else if line.hasSuffix("<unfinished ...>") { busConnects.insert(pid) }
                } else if name == "connect" && line.contains("resumed>") && busConnects.remove(pid) != nil && line.hasSuffix(" = 0") {
                    probed = true
                }
                if line.contains("<unfinished ...>") { continue }  // its "resumed" line has the result
                if line.range(of: #"= -1 E[A-Z]+"#, options: .regularExpression) != nil { failed.insert(name) } else { succeeded.insert(name) }
                if name == "socket", let family = line.firstMatch(of: try Regex(#"socket\((AF_[A-Z0-9]+)"#))?.output[1].substring {
                    socketFamilies.insert(String(family))
                }
                if (name == "mmap" && line.contains("PROT_WRITE|PROT_EXEC")) || ((name == "mprotect" || name == "pkey_mprotect") && line.contains("PROT_EXEC")) {
                    writableExecutable.append(String(line))
                }
            }
        }
        #expect(succeeded.contains("sendto") && succeeded.contains("connect") && succeeded.contains("sendmsg"), "\(succeeded.sorted())")
        #expect(probed, "the NetworkManager probe did not connect to the system bus under the trace")
        // (An open of another thread may split the line: `<unfinished ...>`, then its result.)
        #expect(try String(contentsOfFile: setup.dir.file("run.trace"), encoding: .utf8).split(separator: "\n")
                    .contains { $0.contains("libsystemd.so.0\", O_RDONLY|O_CLOEXEC") && !$0.contains("ENOENT") },
                "the run did not load libsystemd")
        #expect(succeeded.subtracting(allowed).isEmpty, "calls the filter would refuse: \(succeeded.subtracting(allowed).sorted())")
        let refused = failed.subtracting(allowed).subtracting(Self.refusedAnyway.keys)
        #expect(refused.isEmpty, "failing calls outside the filter, not known to be refused anyway: \(refused.sorted())")
        #expect(socketFamilies.isSubset(of: families) && socketFamilies.contains("AF_INET"), "\(socketFamilies.sorted()) not in \(families.sorted())")
        #expect(writableExecutable.isEmpty, "\(writableExecutable)")
    }
}
