import Foundation
import Glibc

// A fault-injecting HTTP/1.1 origin for end-to-end tests: real sockets on 127.0.0.1, one thread per
// connection, behaving like nginx (RFC 9110 §13 conditionals, §14 ranges, `multipart/byteranges` for
// two or more ranges: TestOrigin+Multipart.swift) unless a fault is queued.
//
// Lookup rules: a request target is first matched exactly (query included) against `serve`d paths
// and `inject`ed queues; when nothing is registered for the full target, its path without the query
// is used, so `serve("/a.bin")` also answers `/a.bin?sig=…` (signed URLs).
//
// Every wait is bounded: reads poll in short slices and give up after `idleTimeout`; writes give up
// after `sendTimeout` without progress; `stop()` (also run by deinit) shuts every socket down, which
// wakes any thread blocked on it, and sleeps inside faults (delay, stall, trickle) watch for it.

/// What a path serves.
struct OriginResource: Sendable {
    var body: [UInt8]
    /// The header value as sent, quotes included: `"\"v1\""` or `"W/\"v1\""`.
    var etag: String?
    /// An HTTP-date, e.g. "Sun, 29 Nov 2026 10:00:00 GMT".
    var lastModified: String?
    var contentType: String = "application/octet-stream"
    /// Sent with 200, 206 and 304 answers when set (`max-age=86400`, `no-cache`): what a
    /// shared cache in front of the origin may keep, and for how long.
    var cacheControl: String?
    /// `Content-Encoding` of 200 and 206 answers when set: `body` is then the encoded bytes as
    /// sent (Apache's `AddEncoding gzip .gz`, an S3 object with that metadata). Ranges refer
    /// to them, as on such servers.
    var contentEncoding: String?
    /// The `Date` its answers carry: now (as every server), none, or this many seconds after
    /// `lastModified` (how old the file looks; RFC 9110 §8.8.2.2 makes a Last-Modified strong
    /// for a client only 60 s before the Date).
    var date: OriginDate = .now
    /// Says `Accept-Ranges: none`, and answers every `Range` with the whole file (200).
    var acceptRangesNone = false
    /// Behaves as Apache httpd 2.4 does for a file last modified at that time: `Last-Modified`
    /// is its mtime, the ETag (`etag`) is weak while the file is at most a second old
    /// (`ap_make_etag`), and a date in `If-Range` holds only when it is the Last-Modified and
    /// the file is at least 60 s old (otherwise: 200, the whole file).
    var apache: ApacheFile?

    init(_ body: [UInt8], etag: String? = nil, lastModified: String? = nil, cacheControl: String? = nil, contentEncoding: String? = nil) {
        self.body = body
        self.etag = etag
        self.lastModified = lastModified
        self.cacheControl = cacheControl
        self.contentEncoding = contentEncoding
    }

    init(text: String, etag: String? = nil, lastModified: String? = nil) {
        self.init(Array(text.utf8), etag: etag, lastModified: lastModified)
    }
}

/// The `Date` header of a resource's answers.
enum OriginDate: Sendable, Equatable {
    case now
    case none
    /// `lastModified` plus this many seconds.
    case afterLastModified(Int)
}

/// When an Apache-served file (`OriginResource.apache`) was last modified.
enum ApacheFile: Sendable, Equatable {
    /// At this time (seconds since the epoch).
    case modified(time_t)
    /// In the second the origin first answers for it (a file published just now): its first
    /// answer has a weak ETag and a Last-Modified equal to its Date, however slow the client.
    case publishedAtFirstRequest
}

/// One misbehaviour, applied to one request.
enum OriginFault: Sendable {
    /// Send headers (real Content-Length/Content-Range), then only N body bytes, then close.
    case cutAfter(Int)
    /// Answer 200 with the full body even when Range is asked.
    case ignoreRange
    /// Answer with this status, body and extra headers (extra headers replace the defaults of the
    /// same name, e.g. a custom Content-Type or Content-Length).
    case status(Int, body: String = "", headers: [(String, String)] = [])
    /// Location: the given URL (may be file://, ftp://, another host, or a loop).
    case redirect(String, status: Int = 302)
    /// 200 with an HTML "captive portal" page (ETag "\"portal\""), whatever was asked.
    case htmlInsteadOfContent
    /// 200/206 body sent chunked (Transfer-Encoding: chunked), no Content-Length.
    case chunkedNoLength
    /// Content-Length says N, body is the real body, then close.
    case announceLength(Int)
    /// Send the body slowly, at about this rate.
    case trickle(bytesPerSecond: Int)
    /// Send N body bytes, stay silent for `seconds` (socket open), then close.
    case stallAfter(Int, seconds: Double)
    /// Wait before answering (normally).
    case delay(seconds: Double)
    /// Serve this response with W/ on the ETag (so If-Range never matches it).
    case weakETag
    /// Label this 200/206 answer `Content-Encoding: VALUE` (nil: none), whatever the resource says.
    case contentEncoding(String?)

    // Hostile responses (SPEC §7 "Responses", FAULTS 24 and 26), kept together.
    /// These bytes as the whole answer: no status line, no head; then close.
    case raw([UInt8])
    /// A `status` response whose head is exactly these header lines (only the status line,
    /// `Connection: close` and the blank line added), then `body`, then close: a lying or
    /// doubled Content-Length, an impossible Content-Range.
    case rawHead(status: Int, lines: [String], body: [UInt8])
    /// The resource's 200 with its head padded to about `bytes` by header lines (`oneLine`:
    /// by one header line that long).
    case hugeHead(bytes: Int, oneLine: Bool)
    /// A 200 status line, then a header line every `interval` seconds, never the blank line
    /// (until the client hangs up).
    case endlessHead(interval: Double)
    /// A 302 to this path with a query twice as long as the request's (at least 512 bytes):
    /// each hop's Location is longer than the last.
    case longerRedirect

    // Multi-range answers (SPEC §9 deltas): a multi-range request has 2+ satisfiable ranges (TestOrigin+Multipart.swift).
    /// Multi-range: the parts in the reverse of the order asked.
    case partsReversed
    /// Multi-range: a range starting at most 80 bytes after the part before it ends (adjacent, overlapping) merged into it.
    case partsCoalesced
    /// Multi-range: every part but the first starts 10 bytes before its range (not before 0), so parts overlap.
    case partsOverlapping
    /// Multi-range: each range of 4 bytes or more sent as two parts that overlap inside it (its first half and 2 bytes
    /// more, then its second half from 2 bytes before): overlapping parts that stay inside the ranges asked for.
    case partsSplitOverlapping
    /// Multi-range: an extra first part of bytes 0-9, or of the last 10 bytes when an asked range touches bytes 0-9.
    case partNotAskedFor
    /// Single or multi-range: the last part's data 5 bytes shorter than its Content-Range says (Content-Length true).
    case partCutShort
    /// Single or multi-range: the 206 says `ETag: VALUE` instead of the resource's (conditionals still use the resource's).
    case rangeETag(String)
    /// Single or multi-range: every Content-Range of the 206 says this complete length after the `/`.
    case rangeCompleteLength(Int)
    /// Multi-range: 200 with the whole body, as some CDNs answer (a single range is still honoured).
    case wholeForMulti
    /// Multi-range: a plain 206 (Content-Range header, no multipart) for the first range only, as lighttpd answers.
    case onlyFirstRange
}

/// A request as the origin received it.
struct RecordedRequest: Sendable {
    let method: String
    /// As requested, including the query.
    let path: String
    /// Names lowercased; repeated headers joined with ", ".
    let headers: [String: String]
    /// Serial number of the TCP connection it arrived on (1, 2, …): equal numbers mean reuse.
    let connection: Int

    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A fault-injecting HTTP/1.1 origin on 127.0.0.1 (ephemeral port), one thread per connection.
final class TestOrigin: @unchecked Sendable {
    let port: Int
    private let engine: OriginEngine

    /// Binds 127.0.0.1:0 and starts accepting on a background thread.
    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw OriginError.system("socket", errno) }
        do {
            var one: Int32 = 1
            guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                throw OriginError.system("setsockopt(SO_REUSEADDR)", errno)
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else { throw OriginError.system("bind", errno) }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else { throw OriginError.system("getsockname", errno) }
            guard listen(fd, 128) == 0 else { throw OriginError.system("listen", errno) }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            port = Int(UInt16(bigEndian: address.sin_port))
        } catch {
            close(fd)
            throw error
        }
        engine = OriginEngine(listenFD: fd)
        let engine = self.engine
        let thread = Thread { engine.acceptLoop() }
        thread.name = "TestOrigin.accept:\(port)"
        thread.start()
    }

    deinit {
        engine.stop()
    }

    /// "http://127.0.0.1:\(port)\(path)"
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Sets (or replaces) what `path` serves. Thread-safe.
    func serve(_ path: String, _ resource: OriginResource) {
        engine.locked { engine.resources[path] = resource }
    }

    /// Stops serving `path` (it answers 404 again).
    func remove(_ path: String) {
        engine.locked { _ = engine.resources.removeValue(forKey: path) }
    }

    /// Queues faults for `path`: each request to the path takes the next queued fault; when the
    /// queue is empty the path behaves normally.
    func inject(_ path: String, _ faults: [OriginFault]) {
        engine.locked { engine.faults[path, default: []].append(contentsOf: faults) }
    }

    /// How many injected faults for `path` no request has taken yet.
    func pendingFaults(_ path: String) -> Int {
        engine.locked { engine.faults[path]?.count ?? 0 }
    }

    /// Every request received so far, in order (thread-safe snapshot).
    var requests: [RecordedRequest] { engine.locked { engine.recorded } }

    /// The requests whose target is `path`, or whose target without its query is `path`.
    func requests(to path: String) -> [RecordedRequest] {
        requests.filter { $0.path == path || OriginEngine.stripQuery($0.path) == path }
    }

    /// TCP connections accepted so far.
    var connectionsAccepted: Int { engine.locked { engine.connectionSerial } }

    /// Bytes the origin has written to sockets (heads and bodies) in answer to requests for
    /// `path` (the query left out): what a client made it send, whether or not it kept them.
    func bytesSent(to path: String) -> Int { engine.locked { engine.bytesSent[OriginEngine.stripQuery(path)] ?? 0 } }

    /// The most connections that were open at the same time.
    var peakOpenConnections: Int { engine.locked { engine.peakOpen } }

    /// The most requests that were being answered at the same time.
    var peakActiveRequests: Int { engine.locked { engine.peakActive } }

    /// Closes the listener and all connections. Idempotent; also run by deinit.
    func stop() {
        engine.stop()
    }

    /// While set, connections are accepted and read from, and never answered: a hung server,
    /// or a TLS server that never answers the ClientHello (for an `https://` URL to this port).
    func answerNothing(_ silent: Bool) {
        engine.locked { engine.silent = silent }
    }
}

enum OriginError: Error, CustomStringConvertible {
    case system(String, Int32)

    var description: String {
        switch self {
        case .system(let call, let code): return "\(call): \(String(cString: strerror(code)))"
        }
    }
}

// MARK: - Engine (shared by the listener and connection threads; the façade above owns it, so the
// origin deinitialises — and stops — as soon as a test lets go of it)

private final class OriginEngine: @unchecked Sendable {
    static let idleTimeout: Double = 30       // waiting for (the rest of) a request
    static let sendTimeout: Double = 30       // a write that makes no progress for this long fails
    static let maxHeadBytes = 64 * 1024

    private let lock = NSLock()
    // Everything below is guarded by `lock`.
    var resources: [String: OriginResource] = [:]
    var faults: [String: [OriginFault]] = [:]
    var recorded: [RecordedRequest] = []
    var bytesSent: [String: Int] = [:]
    /// When each `ApacheFile.publishedAtFirstRequest` path was first answered.
    var published: [String: time_t] = [:]
    var clients: Set<Int32> = []
    var stopped = false
    var silent = false
    var connectionSerial = 0
    var openConnections = 0
    var peakOpen = 0
    var activeRequests = 0
    var peakActive = 0
    private var listenFD: Int32

    private let acceptExited = DispatchSemaphore(value: 0)

    init(listenFD: Int32) {
        self.listenFD = listenFD
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    var isStopped: Bool { locked { stopped } }

    static func stripQuery(_ target: String) -> String {
        if let mark = target.firstIndex(where: { $0 == "?" || $0 == "#" }) { return String(target[..<mark]) }
        return target
    }

    func stop() {
        let wasRunning: Bool = locked {
            if stopped { return false }
            stopped = true
            _ = shutdown(listenFD, Int32(SHUT_RDWR))
            for fd in clients { _ = shutdown(fd, Int32(SHUT_RDWR)) }
            return true
        }
        if wasRunning { _ = acceptExited.wait(timeout: .now() + 2) }
    }

    // MARK: Listener

    func acceptLoop() {
        defer {
            locked {
                close(listenFD)
                listenFD = -1
            }
            acceptExited.signal()
        }
        while !isStopped {
            var entry = pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, 100)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready == 0 { continue }
            let fd = Self.acceptCloseOnExec(listenFD)
            if fd < 0 {
                let code = errno
                if isStopped { return }
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK || code == ECONNABORTED { continue }
                usleep(10_000)
                continue
            }
            let serial: Int? = locked {
                if stopped { return nil }
                clients.insert(fd)
                connectionSerial += 1
                openConnections += 1
                peakOpen = max(peakOpen, openConnections)
                return connectionSerial
            }
            guard let serial else {
                close(fd)
                return
            }
            let thread = Thread { [self] in
                OriginConnection(fd: fd, serial: serial, engine: self).run()
                locked {
                    clients.remove(fd)
                    openConnections -= 1
                }
                OriginConnection.closeGracefully(fd)
            }
            thread.name = "TestOrigin.connection.\(serial)"
            thread.start()
        }
    }

    /// accept4(SOCK_CLOEXEC): the Glibc module does not export accept4, so it is looked up once.
    /// Close-on-exec from the start matters: tests spawn curl while connections are open, and a
    /// client socket inherited by a child would outlive our close (no EOF for cutAfter).
    private typealias Accept4 = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?,
                                                UnsafeMutablePointer<socklen_t>?, Int32) -> Int32
    private static let accept4: Accept4? = dlsym(nil, "accept4").map { unsafeBitCast($0, to: Accept4.self) }

    private static func acceptCloseOnExec(_ listener: Int32) -> Int32 {
        if let accept4 { return accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue)) }
        let fd = accept(listener, nil, nil)
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fd
    }

    // MARK: Shared state used by connections

    func record(_ request: RecordedRequest) -> (OriginFault?, OriginResource?) {
        locked {
            recorded.append(request)
            activeRequests += 1
            peakActive = max(peakActive, activeRequests)
            var fault: OriginFault?
            let faultKey = faults[request.path]?.isEmpty == false ? request.path : Self.stripQuery(request.path)
            if var queue = faults[faultKey], !queue.isEmpty {
                fault = queue.removeFirst()
                faults[faultKey] = queue
            }
            let resource = resources[request.path] ?? resources[Self.stripQuery(request.path)]
            return (fault, resource)
        }
    }

    func finished() {
        locked { activeRequests -= 1 }
    }
}

// MARK: - One connection

private struct ParsedRequest {
    var method: String
    var target: String
    var version: String
    var headers: [String: String]

    func header(_ name: String) -> String? { headers[name] }
}

private final class OriginConnection {
    let fd: Int32
    let serial: Int
    let engine: OriginEngine
    private var buffer: [UInt8] = []
    /// The path (no query) of the request being answered, which `sendAll` counts bytes for.
    private var answering = ""

    init(fd: Int32, serial: Int, engine: OriginEngine) {
        self.fd = fd
        self.serial = serial
        self.engine = engine
    }

    static func closeGracefully(_ fd: Int32) {
        // FIN rather than RST: send our side's end, drop whatever the client already sent, close.
        _ = shutdown(fd, Int32(SHUT_WR))
        var scratch = [UInt8](repeating: 0, count: 4096)
        while recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT)) > 0 {}
        close(fd)
    }

    func run() {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var slice = timeval(tv_sec: 0, tv_usec: 200_000)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &slice, socklen_t(MemoryLayout<timeval>.size))
        if engine.locked({ engine.silent }) {
            // Read whatever comes (an HTTP request, a ClientHello) and never answer, until the client hangs up.
            while receiveMore(until: Date().addingTimeInterval(OriginEngine.idleTimeout)) { buffer.removeAll(keepingCapacity: true) }
            return
        }

        while !engine.isStopped {
            guard let head = readHead() else { return }
            guard let request = parse(head) else {
                _ = sendSimple(400, method: "GET", body: Array("bad request\n".utf8), contentType: "text/plain",
                               extra: [], close: true)
                return
            }
            var close = wantsClose(request)
            if request.headers["transfer-encoding"] != nil {
                close = true     // a chunked request body we do not parse: answer, then hang up
            } else if let text = request.headers["content-length"] {
                guard let length = Int(text.trimmingCharacters(in: .whitespaces)), length >= 0,
                      discard(length) else { return }
            }
            let recordedRequest = RecordedRequest(method: request.method, path: request.target,
                                                  headers: request.headers, connection: serial)
            let (fault, resource) = engine.record(recordedRequest)
            answering = OriginEngine.stripQuery(request.target)
            let keepAlive = respond(to: request, fault: fault, resource: resource, close: close)
            engine.finished()
            if !keepAlive { return }
        }
    }

    // MARK: Reading

    /// Bytes of the next request head (up to and including the blank line), or nil when the
    /// connection ended, timed out, the origin stopped, or the head is too large (431 sent).
    private func readHead() -> [UInt8]? {
        let deadline = Date().addingTimeInterval(OriginEngine.idleTimeout)
        var scanFrom = 0
        while true {
            if let end = headEnd(from: scanFrom) {
                let head = Array(buffer[..<end])
                buffer.removeFirst(end)
                return head
            }
            scanFrom = max(0, buffer.count - 3)
            if buffer.count > OriginEngine.maxHeadBytes {
                _ = sendSimple(431, method: "GET", body: Array("request header too large\n".utf8),
                               contentType: "text/plain", extra: [], close: true)
                return nil
            }
            guard receiveMore(until: deadline) else { return nil }
        }
    }

    /// The index just past the blank line ending the head (CRLFCRLF, or bare LFLF), if present.
    private func headEnd(from start: Int) -> Int? {
        var index = start
        while index < buffer.count {
            if buffer[index] == 0x0A {
                if index + 1 < buffer.count, buffer[index + 1] == 0x0A { return index + 2 }
                if index + 2 < buffer.count, buffer[index + 1] == 0x0D, buffer[index + 2] == 0x0A { return index + 3 }
            }
            index += 1
        }
        return nil
    }

    /// Appends whatever arrives to `buffer`; false on end of stream, error, timeout or stop.
    private func receiveMore(until deadline: Date) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if engine.isStopped || Date() >= deadline { return false }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, 100)
            if ready < 0 {
                if errno == EINTR { continue }
                return false
            }
            if ready == 0 { continue }
            let count = recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                buffer.append(contentsOf: chunk[..<count])
                return true
            }
            if count < 0, errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue }
            return false
        }
    }

    /// Reads and drops a request body of `length` bytes.
    private func discard(_ length: Int) -> Bool {
        var remaining = length
        let deadline = Date().addingTimeInterval(OriginEngine.idleTimeout)
        while true {
            let take = min(remaining, buffer.count)
            buffer.removeFirst(take)
            remaining -= take
            if remaining == 0 { return true }
            guard receiveMore(until: deadline) else { return false }
        }
    }

    private func parse(_ head: [UInt8]) -> ParsedRequest? {
        // Split the bytes, not a String: Swift treats CRLF as one Character, so "\n" never matches it.
        var lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).map { raw -> Substring in
            let line = raw.last == 0x0D ? raw.dropLast() : raw
            return Substring(String(decoding: line, as: UTF8.self))
        }
        while let first = lines.first, first.isEmpty { lines.removeFirst() }   // stray CRLFs between requests
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/") else { return nil }
        var target = String(parts[1])
        if target.hasPrefix("http://") || target.hasPrefix("https://") {   // absolute form
            let afterScheme = target[target.index(target.firstIndex(of: ":")!, offsetBy: 3)...]
            target = afterScheme.firstIndex(of: "/").map { String(afterScheme[$0...]) } ?? "/"
        }
        var headers: [String: String] = [:]
        var lastName: String?
        for line in lines.dropFirst() where !line.isEmpty {
            if line.first == " " || line.first == "\t" {            // obsolete line folding
                guard let name = lastName else { return nil }
                headers[name, default: ""] += " " + line.trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            guard !name.isEmpty else { return nil }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
            if let existing = headers[name] {
                headers[name] = existing + ", " + value
            } else {
                headers[name] = value
            }
            lastName = name
        }
        return ParsedRequest(method: String(parts[0]), target: target, version: String(parts[2]), headers: headers)
    }

    private func wantsClose(_ request: ParsedRequest) -> Bool {
        let tokens = (request.headers["connection"] ?? "").lowercased()
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if tokens.contains("close") { return true }
        if request.version == "HTTP/1.0" { return !tokens.contains("keep-alive") }
        return false
    }

    // MARK: Answering

    /// Answers one request; returns whether the connection stays open.
    private func respond(to request: ParsedRequest, fault: OriginFault?, resource: OriginResource?,
                         close: Bool) -> Bool {
        if case .delay(let seconds) = fault {
            guard pause(seconds) else { return false }
        }
        let method = request.method
        switch fault {
        case .status(let code, let body, let headers):
            return sendSimple(code, method: method, body: Array(body.utf8), contentType: "text/plain; charset=utf-8",
                              extra: headers, close: close)
        case .redirect(let location, let code):
            let body = "<html>\r\n<head><title>\(code) \(Self.reason(code))</title></head>\r\n<body>\r\n"
                + "<center><h1>\(code) \(Self.reason(code))</h1></center>\r\n<hr><center>prefetch-test-origin</center>\r\n"
                + "</body>\r\n</html>\r\n"
            return sendSimple(code, method: method, body: Array(body.utf8), contentType: "text/html",
                              extra: [("Location", location)], close: close)
        case .htmlInsteadOfContent:
            return sendSimple(200, method: method, body: Array(Self.portalPage.utf8), contentType: "text/html; charset=utf-8",
                              extra: [("ETag", "\"portal\""), ("Cache-Control", "no-store")], close: close)
        case .raw, .rawHead, .hugeHead, .endlessHead, .longerRedirect:
            return hostile(fault!, request: request, resource: resource, close: close)
        default:
            break
        }
        guard method == "GET" || method == "HEAD" else {
            return sendSimple(405, method: method, body: Array("method not allowed\n".utf8), contentType: "text/plain",
                              extra: [("Allow", "GET, HEAD")], close: close)
        }
        guard let resource else {
            let body = "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
                + "<center><h1>404 Not Found</h1></center>\r\n<hr><center>prefetch-test-origin</center>\r\n"
                + "</body>\r\n</html>\r\n"
            return sendSimple(404, method: method, body: Array(body.utf8), contentType: "text/html",
                              extra: [], close: close)
        }
        return serve(resource, request: request, fault: fault, close: close)
    }

    private func serve(_ resource: OriginResource, request: ParsedRequest, fault: OriginFault?, close: Bool) -> Bool {
        var etag = resource.etag
        var lastModified = resource.lastModified
        let now = time(nil)
        let publishedAt: time_t? = switch resource.apache {
        case .modified(let time): time
        case .publishedAtFirstRequest: engine.locked { engine.published[answering] ?? { engine.published[answering] = now; return now }() }
        case nil: nil
        }
        if let published = publishedAt {  // Apache's file: its mtime, and a weak ETag while it is this second's
            lastModified = HTTPDate.format(published)
            if let tag = etag, now - published <= 1, !tag.hasPrefix("W/") { etag = "W/" + tag }
        }
        if case .weakETag = fault, let strong = etag, !strong.hasPrefix("W/") { etag = "W/" + strong }
        let date: String? = switch resource.date {
        case .now: HTTPDate.format(now)
        case .none: nil
        case .afterLastModified(let seconds): lastModified.flatMap(HTTPDate.parse).map { HTTPDate.format(time_t($0 + seconds)) }
        }
        let total = resource.body.count
        var validators: [(String, String)] = []
        if let etag { validators.append(("ETag", etag)) }
        if let lastModified { validators.append(("Last-Modified", lastModified)) }
        if let cacheControl = resource.cacheControl { validators.append(("Cache-Control", cacheControl)) }

        // Forced hang-ups: these faults end the connection after the (short, or lying) body.
        var hangUp = false
        switch fault {
        case .cutAfter, .announceLength, .stallAfter: hangUp = true
        default: break
        }

        // RFC 9110 §13.2.2: If-None-Match first; If-Modified-Since only without it.
        var notModified = false
        if let condition = request.header("if-none-match") {
            notModified = HTTPValidators.noneMatchFails(condition, etag: etag)
        } else if let since = request.header("if-modified-since"), let lastModified,
                  let sinceTime = HTTPDate.parse(since), let modifiedTime = HTTPDate.parse(lastModified) {
            notModified = modifiedTime <= sinceTime
        }
        if notModified {
            let head = responseHead(304, headers: validators, close: close, date: date)
            guard sendAll(head[...]) else { return false }
            return !(close || hangUp)
        }

        // Ranges (§14.2): a false If-Range means the Range is ignored.
        var shape = MultipartAnswer.Shape.whole
        var ignoreRange = false
        if case .ignoreRange = fault { ignoreRange = true }
        if resource.acceptRangesNone { ignoreRange = true }
        // Apache: a date in If-Range is a strong validator only once the file is 60 s old.
        let ifRange = request.header("if-range")
        let youngDate = publishedAt.map { now - $0 < 60 } == true && ifRange.map { !$0.hasPrefix("\"") && !$0.hasPrefix("W/") } == true
        if !ignoreRange, !youngDate, let rangeHeader = request.header("range"),
           HTTPValidators.ifRangeHolds(ifRange, etag: etag, lastModified: lastModified) {
            switch HTTPValidators.parseRanges(rangeHeader, length: total) {
            case .ignore:
                break
            case .satisfiable(let ranges):    // 2+: multipart/byteranges, as nginx (TestOrigin+Multipart.swift)
                shape = MultipartAnswer.shape(for: ranges, length: total, fault: fault)
            case .unsatisfiable:
                let body = "<html>\r\n<head><title>416 Requested Range Not Satisfiable</title></head>\r\n<body>\r\n"
                    + "<center><h1>416 Requested Range Not Satisfiable</h1></center>\r\n</body>\r\n</html>\r\n"
                return sendSimple(416, method: request.method, body: Array(body.utf8), contentType: "text/html",
                                  extra: [("Content-Range", "bytes */\(total)")], close: close || hangUp)
            }
        }

        let content = MultipartAnswer.content(shape, of: resource.body, contentType: resource.contentType, fault: fault)
        let body = content.body
        var headers: [(String, String)] = [("Content-Type", content.contentType)]
        var chunked = false
        switch fault {
        case .chunkedNoLength:
            chunked = true
            headers.append(("Transfer-Encoding", "chunked"))
        case .announceLength(let claimed):
            headers.append(("Content-Length", String(claimed)))
        default:
            headers.append(("Content-Length", String(body.count)))
        }
        var coding = resource.contentEncoding
        if case .contentEncoding(let value) = fault { coding = value }
        if let coding { headers.append(("Content-Encoding", coding)) }
        headers += (shape == .whole) ? validators : MultipartAnswer.partialValidators(validators, fault: fault)
        headers.append(("Accept-Ranges", resource.acceptRangesNone ? "none" : "bytes"))
        if let contentRange = content.contentRange { headers.append(("Content-Range", contentRange)) }

        let head = responseHead(shape == .whole ? 200 : 206, headers: headers, close: close,
                                announceKeepAlive: !hangUp, date: date)
        guard sendAll(head[...]) else { return false }
        if request.method == "HEAD" { return !(close || hangUp) }
        return sendBody(body, fault: fault, chunked: chunked, close: close)
    }

    /// Sends a 200/206 body whole, or as `fault` has it (cut, stalled, trickled, chunked); returns
    /// whether the connection stays open.
    private func sendBody(_ body: ArraySlice<UInt8>, fault: OriginFault?, chunked: Bool, close: Bool) -> Bool {
        switch fault {
        case .cutAfter(let count):
            _ = sendAll(body.prefix(max(0, count)))
            return false
        case .stallAfter(let count, let seconds):
            guard sendAll(body.prefix(max(0, count))) else { return false }
            _ = pause(seconds)
            return false
        case .announceLength:
            _ = sendAll(body)
            return false
        case .trickle(let rate):
            guard sendPaced(body, bytesPerSecond: max(1, rate)) else { return false }
        default:
            if chunked {
                guard sendChunked(body) else { return false }
            } else {
                guard sendAll(body) else { return false }
            }
        }
        return !close
    }

    /// The hostile responses (SPEC §7): returns whether the connection stays open.
    private func hostile(_ fault: OriginFault, request: ParsedRequest, resource: OriginResource?, close: Bool) -> Bool {
        switch fault {
        case .raw(let bytes):
            _ = sendAll(bytes[...])
            return false
        case .rawHead(let status, let lines, let body):
            let head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n" + lines.map { $0 + "\r\n" }.joined() + "Connection: close\r\n\r\n"
            _ = sendAll((Array(head.utf8) + body)[...])
            return false
        case .hugeHead(let bytes, let oneLine):
            let body = resource?.body ?? []
            var padding: [(String, String)] = []
            if oneLine {
                padding.append(("X-Padding", String(repeating: "a", count: bytes)))
            } else {
                for index in 0..<max(1, bytes / 1024) { padding.append(("X-Padding-\(index)", String(repeating: "a", count: 1000))) }
            }
            let head = responseHead(200, headers: padding + [("Content-Length", String(body.count))], close: true)
            _ = sendAll((head + body)[...])
            return false
        case .endlessHead(let interval):
            guard sendAll(Array("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n".utf8)[...]) else { return false }
            var index = 0
            while pause(interval) {
                index += 1
                guard sendAll(Array("X-Still-Coming-\(index): \(index)\r\n".utf8)[...]) else { return false }
            }
            return false
        case .longerRedirect:
            let path = OriginEngine.stripQuery(request.target)
            let asked = request.target.count - path.count
            let location = path + "?pad=" + String(repeating: "a", count: max(512, 2 * asked))
            return sendSimple(302, method: request.method, body: [], contentType: "text/plain", extra: [("Location", location)], close: close)
        default:
            return false
        }
    }

    /// A complete response with a small body; `extra` headers replace defaults of the same name.
    private func sendSimple(_ status: Int, method: String, body: [UInt8], contentType: String,
                            extra: [(String, String)], close: Bool) -> Bool {
        let given = Set(extra.map { $0.0.lowercased() })
        var headers: [(String, String)] = []
        let bodiless = status == 204 || status == 304 || (100..<200).contains(status)
        if !bodiless {
            if !given.contains("content-type"), !body.isEmpty { headers.append(("Content-Type", contentType)) }
            if !given.contains("content-length"), !given.contains("transfer-encoding") {
                headers.append(("Content-Length", String(body.count)))
            }
        }
        headers += extra
        var bytes = responseHead(status, headers: headers, close: close)
        if method != "HEAD", !bodiless { bytes += body }
        guard sendAll(bytes[...]) else { return false }
        return !close
    }

    /// `date`: the `Date` to send (nil: none).
    private func responseHead(_ status: Int, headers: [(String, String)], close: Bool,
                              announceKeepAlive: Bool = true, date: String? = HTTPDate.format(time(nil))) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        text += "Server: prefetch-test-origin\r\n"
        if let date { text += "Date: \(date)\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if close {
            text += "Connection: close\r\n"
        } else if announceKeepAlive {
            text += "Connection: keep-alive\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
    }

    // MARK: Writing

    /// Sends every byte; false when the peer is gone, the origin stopped, or nothing moved for
    /// `sendTimeout` (SO_SNDTIMEO makes each send return within 200 ms).
    private func sendAll(_ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        var lastProgress = Date()
        while offset < bytes.endIndex {
            if engine.isStopped { return false }
            let sent = bytes[offset...].withUnsafeBytes { raw in
                send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                offset += sent
                lastProgress = Date()
                engine.locked { engine.bytesSent[answering, default: 0] += sent }
                continue
            }
            if sent < 0, errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK {
                if Date().timeIntervalSince(lastProgress) > OriginEngine.sendTimeout { return false }
                continue
            }
            return false
        }
        return true
    }

    private func sendChunked(_ body: ArraySlice<UInt8>) -> Bool {
        var offset = body.startIndex
        while offset < body.endIndex {
            let end = min(offset + 16 * 1024, body.endIndex)
            var piece = Array((String(end - offset, radix: 16) + "\r\n").utf8)
            piece += body[offset..<end]
            piece += [0x0D, 0x0A]
            guard sendAll(piece[...]) else { return false }
            offset = end
        }
        return sendAll(Array("0\r\n\r\n".utf8)[...])
    }

    private func sendPaced(_ body: ArraySlice<UInt8>, bytesPerSecond rate: Int) -> Bool {
        let piece = max(1, rate / 10)
        let start = Date()
        var offset = body.startIndex
        while offset < body.endIndex {
            let due = start.addingTimeInterval(Double(offset - body.startIndex) / Double(rate))
            let wait = due.timeIntervalSinceNow
            if wait > 0, !pause(wait) { return false }
            let end = min(offset + piece, body.endIndex)
            guard sendAll(body[offset..<end]) else { return false }
            offset = end
        }
        return true
    }

    /// Sleeps up to `seconds`; false early when the origin stops or the client hangs up.
    private func pause(_ seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var watchPeer = true
        while true {
            if engine.isStopped { return false }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return true }
            let slice = Int32(max(1, min(50, left * 1000)))
            if watchPeer {
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&entry, 1, slice)
                if ready > 0 {
                    if entry.revents & Int16(POLLERR | POLLHUP) != 0 { return false }
                    var probe: UInt8 = 0
                    let peeked = recv(fd, &probe, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
                    if peeked == 0 { return false }                 // client hung up
                    if peeked < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR { return false }
                    if peeked > 0 { watchPeer = false }             // pipelined bytes: just sleep
                }
            } else {
                usleep(UInt32(slice) * 1000)
            }
        }
    }

    // MARK: Constants

    static let portalPage = """
        <!DOCTYPE html>
        <html><head><title>Welcome to Guest Wi-Fi</title></head>
        <body><h1>Guest Wi-Fi</h1><p>Please accept the terms of use to continue.</p>
        <form method="post" action="/portal/accept"><button>Accept</button></form></body></html>

        """

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 410: return "Gone"
        case 412: return "Precondition Failed"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status \(status)"
        }
    }
}

// MARK: - RFC 9110 validators and ranges

private enum HTTPValidators {
    enum RangeAnswer: Equatable {
        case ignore                        // not a single byte range we honour: send 200
        case satisfiable(ClosedRange<Int>)
        case unsatisfiable                 // 416
    }

    enum RangesAnswer: Equatable {
        case ignore                        // malformed: send 200
        case satisfiable([ClosedRange<Int>])   // the satisfiable ones, in the order asked, each clamped
        case unsatisfiable                 // none is satisfiable: 416
    }

    /// `Range` against a representation of `length` bytes. Multi-range and malformed values are
    /// ignored (200, as RFC 9110 §14.2 allows).
    static func parseRange(_ header: String, length: Int) -> RangeAnswer {
        guard let spec = rangeSet(header), !spec.contains(",") else { return .ignore }
        return parseRangeSpec(spec, length: length)
    }

    /// `Range` with a list of ranges (§14.1.2: `bytes=0-9,20-29,-5,90-`) against a representation
    /// of `length` bytes: each range read as `parseRange` reads a lone one, unsatisfiable ones
    /// dropped, empty list elements skipped; one malformed range, or none at all, and the whole
    /// header is ignored. A header without a comma gets `parseRange`'s answer exactly.
    static func parseRanges(_ header: String, length: Int) -> RangesAnswer {
        guard let list = rangeSet(header) else { return .ignore }
        if !list.contains(",") {
            switch parseRange(header, length: length) {
            case .ignore: return .ignore
            case .satisfiable(let range): return .satisfiable([range])
            case .unsatisfiable: return .unsatisfiable
            }
        }
        let specs = list.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard !specs.isEmpty else { return .ignore }
        var ranges: [ClosedRange<Int>] = []
        for spec in specs {
            switch parseRangeSpec(spec, length: length) {
            case .ignore: return .ignore
            case .satisfiable(let range): ranges.append(range)
            case .unsatisfiable: continue
            }
        }
        return ranges.isEmpty ? .unsatisfiable : .satisfiable(ranges)
    }

    /// What follows `bytes=` (trimmed), or nil when the unit is not `bytes`.
    private static func rangeSet(_ header: String) -> String? {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard let equals = value.firstIndex(of: "="),
              value[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == "bytes" else { return nil }
        return value[value.index(after: equals)...].trimmingCharacters(in: .whitespaces)
    }

    /// One range (`a-b`, `a-`, `-n`), trimmed, with no comma.
    private static func parseRangeSpec(_ spec: String, length: Int) -> RangeAnswer {
        guard let dash = spec.firstIndex(of: "-") else { return .ignore }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        func number(_ text: String) -> Int? {
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(text) ?? Int.max           // absurdly large values are just "past the end"
        }
        if first.isEmpty {                        // suffix: bytes=-N
            guard let suffix = number(last) else { return .ignore }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, length - suffix)...(length - 1))
        }
        guard let start = number(first) else { return .ignore }
        if last.isEmpty {
            return start < length ? .satisfiable(start...(length - 1)) : .unsatisfiable
        }
        guard let end = number(last), end >= start else { return .ignore }
        return start < length ? .satisfiable(start...min(end, length - 1)) : .unsatisfiable
    }

    /// §13.1.5: a strong entity tag equal to the current (strong) one, or an HTTP-date equal to
    /// Last-Modified. No If-Range at all also holds.
    static func ifRangeHolds(_ condition: String?, etag: String?, lastModified: String?) -> Bool {
        guard let condition = condition?.trimmingCharacters(in: .whitespaces) else { return true }
        if condition.hasPrefix("\"") || condition.hasPrefix("W/") {
            guard let etag, !etag.hasPrefix("W/"), !condition.hasPrefix("W/") else { return false }
            return condition == etag
        }
        guard let lastModified, let asked = HTTPDate.parse(condition),
              let current = HTTPDate.parse(lastModified) else { return false }
        return asked == current
    }

    /// §13.1.2: true when If-None-Match matches (weak comparison), i.e. the answer is 304.
    static func noneMatchFails(_ condition: String, etag: String?) -> Bool {
        let trimmed = condition.trimmingCharacters(in: .whitespaces)
        if trimmed == "*" { return true }
        guard let etag else { return false }
        let current = opaque(etag)
        return entityTags(in: trimmed).contains { opaque($0) == current }
    }

    private static func opaque(_ tag: String) -> String {
        tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
    }

    /// The entity tags of a comma-separated list (commas inside quotes kept).
    private static func entityTags(in list: String) -> [String] {
        var tags: [String] = []
        var current = ""
        var quoted = false
        for character in list {
            if character == "\"" { quoted.toggle() }
            if character == ",", !quoted {
                tags.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
        }
        tags.append(current.trimmingCharacters(in: .whitespaces))
        return tags.filter { !$0.isEmpty }
    }
}

// MARK: - HTTP-date (RFC 9110 §5.6.7)

private enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]

    /// IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT".
    static func format(_ seconds: time_t) -> String {
        var value = seconds
        var parts = tm()
        gmtime_r(&value, &parts)
        func two(_ number: Int32) -> String { number < 10 ? "0\(number)" : "\(number)" }
        return "\(weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// Seconds since the epoch for IMF-fixdate, RFC 850 and asctime forms; nil when invalid.
    static func parse(_ text: String) -> Int? {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: String?
        if tokens.count == 6, tokens[0].hasSuffix(","), tokens[5] == "GMT" {            // IMF-fixdate
            day = Int(tokens[1]); month = months.firstIndex(of: tokens[2]); year = Int(tokens[3]); clock = tokens[4]
        } else if tokens.count == 4, tokens[0].hasSuffix(","), tokens[3] == "GMT" {     // RFC 850
            let pieces = tokens[1].split(separator: "-").map(String.init)
            guard pieces.count == 3, let short = Int(pieces[2]) else { return nil }
            day = Int(pieces[0]); month = months.firstIndex(of: pieces[1])
            year = pieces[2].count == 2 ? (short >= 70 ? 1900 + short : 2000 + short) : short
            clock = tokens[2]
        } else if tokens.count == 5 {                                                      // asctime
            month = months.firstIndex(of: tokens[1]); day = Int(tokens[2]); clock = tokens[3]; year = Int(tokens[4])
        }
        guard let day, let month, let year, let clock, (1...31).contains(day), year >= 1970 else { return nil }
        let hms = clock.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (0...23).contains(hms[0]), (0...59).contains(hms[1]), (0...60).contains(hms[2]) else {
            return nil
        }
        return daysFromCivil(year: year, month: month + 1, day: day) * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
