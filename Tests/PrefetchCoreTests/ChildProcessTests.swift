import Foundation
import Glibc
import Testing
@testable import PrefetchCore

/// The probes' tools run through `posix_spawn` (not Foundation's `Process`, whose libdispatch
/// threads set their nice value, issue 19): stdout taken, a failure or a child that outlives
/// its timeout is nil, and the child starts with no signal blocked.
@Suite struct ChildProcessTests {
    @Test func theOutputOfAToolThatExitsZero() {
        #expect(ChildProcess.output("/bin/echo", ["u", "4"], timeout: 5) == "u 4\n")
        #expect(ChildProcess.output("/bin/false", [], timeout: 5) == nil)
        #expect(ChildProcess.output("/nonexistent/tool", [], timeout: 5) == nil)
        // Nothing on stdin (it is /dev/null), stderr not taken.
        #expect(ChildProcess.output("/bin/sh", ["-c", "cat; echo done; echo noise >&2"], timeout: 5) == "done\n")
    }

    /// A tool that hangs is killed at its timeout, whether it keeps its stdout open or not.
    @Test(arguments: ["sleep 30", "exec >/dev/null; sleep 30"])
    func aToolThatHangsIsKilledAtItsTimeout(script: String) {
        let started = Date()
        #expect(ChildProcess.output("/bin/sh", ["-c", script], timeout: 0.3) == nil)
        #expect(Date().timeIntervalSince(started) < 5, "took \(Date().timeIntervalSince(started)) s")
    }

    /// `StopSignal` blocks signals in this process; a child must not inherit that.
    @Test func theChildStartsWithNoSignalBlocked() throws {
        var set = sigset_t(), old = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGUSR2)
        pthread_sigmask(SIG_BLOCK, &set, &old)
        defer { pthread_sigmask(SIG_SETMASK, &old, nil) }
        let status = try #require(ChildProcess.output("/bin/grep", ["^SigBlk", "/proc/self/status"], timeout: 5))
        #expect(status == "SigBlk:\t0000000000000000\n", "\(status)")
    }
}
