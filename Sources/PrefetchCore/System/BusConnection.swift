internal import CShims
import Foundation

/// A D-Bus method call to send.
struct BusCall: Sendable, Equatable {
    var destination: String?
    var path: String
    var interface: String?
    var member: String
    /// String arguments, in order (all the probes need).
    var arguments: [String] = []
    /// False: the bus must not start the destination's service to answer (a NetworkManager
    /// that is installed but not running stays so: prefetch only asks).
    var autoStart = true
}

/// One connection to a D-Bus bus through sd-bus, driven by its owner without blocking:
/// connecting, authenticating, `Hello` and every call progress only inside `run`, which
/// polls the connection's descriptor (`sd_bus_get_fd`, `sd_bus_get_events`,
/// `sd_bus_get_timeout`) until the caller's deadline and lets `sd_bus_process` do one step
/// at a time. So a bus that accepts a connection and never answers costs the deadline,
/// not sd-bus's authentication timeout nor its 25 s method timeout (`busctl --timeout=2`
/// waited 40 s for the authentication alone). Calls are sent with `sd_bus_send` and their
/// replies picked out by cookie; signals come out of `sd_bus_process` as the messages no
/// callback took. One thread uses a connection at a time (sd-bus objects are not shared).
final class BusConnection {
    enum Outcome: Equatable {
        /// The handler said it had what it waited for.
        case handled
        /// The deadline came first.
        case deadline
        /// The other descriptor became readable.
        case woken
    }

    private let api: CShims_sdbus
    private let bus: OpaquePointer

    /// Starts connecting to `address` (D-Bus address syntax); nothing waits here. Fails
    /// when sd-bus cannot be loaded or the socket refuses at once (it does not exist, or
    /// nothing listens).
    init(address: String) throws(BusFailure) {
        switch SDBus.shared {
        case .success(let library): api = library.api
        case .failure(let failure): throw failure
        }
        var created: OpaquePointer?
        let made = api.bus_new(&created)
        guard made >= 0, let created else { throw BusFailure.errno("sd_bus_new", made) }
        for (call, result) in [("sd_bus_set_address", api.bus_set_address(created, address)),
                               ("sd_bus_set_bus_client", api.bus_set_bus_client(created, 1))] where result < 0 {
            _ = api.bus_unref(created)
            throw BusFailure.errno(call, result)
        }
        let started = api.bus_start(created)
        guard started >= 0 else {
            _ = api.bus_unref(created)
            throw BusFailure("cannot connect to the system bus (\(address)): \(String(cString: strerror(-started)))")
        }
        bus = created
    }

    deinit {
        api.bus_close(bus)
        _ = api.bus_unref(bus)
    }

    /// Queues `call` (it leaves as soon as the connection is ready); the cookie its reply
    /// will carry.
    func send(_ call: BusCall) throws(BusFailure) -> UInt64 {
        var created: OpaquePointer?
        var result = api.message_new_method_call(bus, &created, call.destination, call.path, call.interface, call.member)
        guard result >= 0, let message = created else { throw BusFailure.errno("sd_bus_message_new_method_call", result) }
        defer { _ = api.message_unref(message) }
        if !call.autoStart { _ = api.message_set_auto_start(message, 0) }
        for argument in call.arguments {
            result = argument.withCString { api.message_append_basic(message, CChar(bitPattern: UInt8(ascii: "s")), $0) }
            guard result >= 0 else { throw BusFailure.errno("sd_bus_message_append_basic", result) }
        }
        var cookie: UInt64 = 0
        result = api.bus_send(bus, message, &cookie)
        guard result >= 0 else { throw BusFailure("the system bus connection failed: \(String(cString: strerror(-result)))") }
        return cookie
    }

    /// Drives the connection until `deadline` (`Clock.monotonicNanoseconds`): every
    /// message that arrives goes to `handle`, which returns true when the wait is over.
    /// `wake`, when given, is another descriptor whose readability ends the wait. A closed
    /// connection throws.
    func run(until deadline: UInt64, wake: Int32? = nil,
             _ handle: (BusMessage) throws(BusFailure) -> Bool) throws(BusFailure) -> Outcome {
        while true {
            // Everything sd-bus can do now, one step at a time.
            while true {
                var received: OpaquePointer?
                let progress = api.bus_process(bus, &received)
                guard progress >= 0 else {
                    throw BusFailure("the system bus connection failed: \(String(cString: strerror(-progress)))")
                }
                if let received {
                    defer { _ = api.message_unref(received) }
                    let message = BusMessage(api: api, message: received)
                    if message.kind == .signal, message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                        throw BusFailure("the system bus closed the connection")
                    }
                    if try handle(message) { return .handled }
                }
                if progress == 0 { break }
            }
            let now = Clock.monotonicNanoseconds()
            guard now < deadline else { return .deadline }
            var wait = deadline - now
            var until: UInt64 = 0
            if api.bus_get_timeout(bus, &until) > 0 {  // sd-bus's own next timeout, CLOCK_MONOTONIC µs
                let ownNanoseconds = until > UInt64.max / 1000 ? UInt64.max : until * 1000
                wait = min(wait, ownNanoseconds > now ? ownNanoseconds - now : 0)
            }
            let events = api.bus_get_events(bus)
            let fd = api.bus_get_fd(bus)
            guard events >= 0, fd >= 0 else { throw BusFailure("the system bus connection failed") }
            var fds = [pollfd(fd: fd, events: Int16(truncatingIfNeeded: events), revents: 0)]
            if let wake { fds.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
            let milliseconds = Int32(min((wait + 999_999) / 1_000_000, 60_000))
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0 && errno != EINTR { throw BusFailure("poll: \(String(cString: strerror(errno)))") }
            if fds.count > 1, fds[1].revents != 0 { return .woken }
        }
    }

    /// Sends `calls` together and waits until each has its reply (or error) or `deadline`
    /// comes: each answer goes to `reply` with its call's index, signals meanwhile to
    /// `signal`. True when every call was answered.
    func callAll(_ calls: [BusCall], until deadline: UInt64,
                 reply: (Int, BusMessage) throws(BusFailure) -> Void,
                 signal: (BusMessage) -> Void = { _ in }) throws(BusFailure) -> Bool {
        var waiting: [UInt64: Int] = [:]
        for (index, call) in calls.enumerated() { waiting[try send(call)] = index }
        if waiting.isEmpty { return true }
        let outcome = try run(until: deadline) { (message) throws(BusFailure) -> Bool in
            switch message.kind {
            case .methodReturn, .methodError:
                guard let cookie = message.replyCookie, let index = waiting.removeValue(forKey: cookie) else { return false }
                try reply(index, message)
                return waiting.isEmpty
            case .signal:
                signal(message)
                return false
            default:
                return false
            }
        }
        return outcome == .handled
    }
}
