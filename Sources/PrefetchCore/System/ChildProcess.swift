import Foundation

/// Runs a tool and takes its standard output, with `posix_spawn`: stdin and stderr on
/// /dev/null, every signal unblocked and at its default in the child (`StopSignal` blocks a
/// few in this process), and the child killed when it outlives `timeout`.
///
/// Not Foundation's `Process`: it watches its children with a libdispatch signal source,
/// whose manager and worker threads each set their nice value with `setpriority` when they
/// start, which the units' `Nice=10` and `SystemCallFilter=~@resources` refuse, and
/// libdispatch logs each refusal to the journal (issue 19).
enum ChildProcess {
    /// The tool's standard output when it exited 0 within `timeout` seconds; nil otherwise
    /// (it could not start, failed, or was killed for taking too long).
    static func output(_ path: String, _ arguments: [String], timeout: Double) -> String? {
        var pipe: [Int32] = [-1, -1]
        guard Glibc.pipe(&pipe) == 0 else { return nil }
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // the child keeps only its dup2'd stdout
        let reading = pipe[0]
        defer { close(reading) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        close(pipe[1])
        guard spawned == 0 else { return nil }

        let deadline = Clock.monotonicNanoseconds() &+ UInt64(max(0, timeout) * 1e9)
        func left() -> Int32 {
            let now = Clock.monotonicNanoseconds()
            return now >= deadline ? 0 : Int32(min(Double(Int32.max), Double(deadline - now) / 1e6).rounded(.up))
        }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var open = true
        while open {
            var watched = pollfd(fd: reading, events: Int16(POLLIN), revents: 0)
            let ready = poll(&watched, 1, left())
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }  // timed out (or poll failed): the child is killed below
            let count = buffer.withUnsafeMutableBytes { read(reading, $0.baseAddress, $0.count) }
            if count > 0 { output += buffer[0..<count] } else if count == 0 || errno != EINTR { open = false }
        }
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { return nil }
            if left() == 0 {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                return nil
            }
            usleep(2_000)
        }
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else { return nil }  // exited, with 0
        return open ? nil : String(decoding: output, as: UTF8.self)
    }
}
