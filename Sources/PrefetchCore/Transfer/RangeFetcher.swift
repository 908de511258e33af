import Foundation

/// One ranged GET of a delta (SPEC §9 step 3), its body handed on as it arrives: the same
/// rules as every request (TLS verified, the config's proxies, redirects followed by hand up
/// to `max_redirects` with the manifest's headers only at the URL's own origin, identity
/// asked for, `connect_timeout`, `response_timeout`, `stall_timeout`), and a stop, a pause
/// or the window's end looked at every 100 ms (`keepGoing`).
final class RangeFetcher {
    struct Request {
        var url: ResourceURL
        /// The manifest's header lines, `${VAR}`s filled in: sent to the URL's own origin only.
        var headers: [String]
        var ranges: [Range<UInt64>]
        /// The strong ETag (or Last-Modified) the delta's 206s carried so far.
        var ifRange: String?
        var connectTimeout: TimeSpan
        var responseTimeout: TimeSpan
        var stallTimeout: TimeSpan
    }

    /// How the exchange ended: its final head (the body was handed on), or why not.
    enum Outcome: Equatable {
        case answered(ResponseRules.Head)
        /// No answer: a connection, TLS or timeout failure, in words.
        case failed(String)
        /// `keepGoing` said no (its reason), or `onBody` refused more.
        case interrupted(String)
        case refused
    }

    private let config: Config
    private var head = ResponseRules.Head(status: 0)
    private var headComplete = false
    /// Body bytes over the wire, every exchange of the fetch counted.
    private(set) var bodyBytes: UInt64 = 0
    private var onBody: (UnsafeRawBufferPointer, ResponseRules.Head) -> Bool = { _, _ in true }
    private var refused = false

    init(config: Config) {
        self.config = config
    }

    /// The `Range` header's value for `ranges` (half-open, non-empty, in order).
    static func rangeHeader(_ ranges: [Range<UInt64>]) -> String {
        "bytes=" + ranges.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
    }

    /// `onBody` gets each piece of a 2xx body with its head; false ends the exchange.
    /// `keepGoing` returns nil to go on, else why the exchange must end now.
    func fetch(_ request: Request, keepGoing: () -> String?, onBody: @escaping (UnsafeRawBufferPointer, ResponseRules.Head) -> Bool) -> Outcome {
        guard CurlGlobal.initialized else { return .failed("libcurl could not be set up") }
        self.onBody = onBody
        defer { self.onBody = { _, _ in true } }
        var url = request.url.text
        var visited: Set<String> = [url]
        var redirects = 0
        while true {
            guard let current = try? ResourceURL.parse(url) else { return .failed("a redirect to a URL that is not http or https") }
            var lines = ["Accept-Encoding: identity", "Range: " + Self.rangeHeader(request.ranges)]
            if current.origin == request.url.origin { lines += request.headers }
            if let ifRange = request.ifRange { lines.append("If-Range: \(ifRange)") }
            let exchange = perform(url: url, headers: lines, request: request, keepGoing: keepGoing)
            if let failure = exchange.failure { return failure }
            let status = head.status
            guard (300...399).contains(status), status != 304 else { return .answered(head) }
            guard let location = exchange.redirect else { return .answered(head) }
            redirects += 1
            if redirects > config.maxRedirects { return .failed("more than \(config.maxRedirects) redirects (max_redirects)") }
            if !visited.insert(location).inserted { return .failed("a redirect loop") }
            if request.url.scheme == "https", location.lowercased().hasPrefix("http:") {
                return .failed("a redirect from https to plain http")
            }
            url = location
        }
    }

    private func perform(url: String, headers: [String], request: Request, keepGoing: () -> String?) -> (failure: Outcome?, redirect: String?) {
        head = ResponseRules.Head(status: 0)
        headComplete = false
        refused = false
        let easy: CurlEasy, multi: CurlMulti
        do {
            easy = try CurlEasy()
            multi = try CurlMulti(totalConnections: 1, perHost: 1)
            let options = CurlRequestOptions(url: url, headers: headers, connectTimeout: Int(request.connectTimeout.seconds), bufferSize: 256 * 1024,
                                             clientCertificate: config.clientCertificate)
            let shared = CurlSharedOptions(caFile: config.caFile, userAgent: "prefetch/\(ProgramVersion.text)",
                                           proxy: config.proxy?.text, noProxy: config.noProxy?.text)
            try easy.prepare(options, shared: shared, receiver: Unmanaged.passUnretained(self).toOpaque(), body: Self.onBody, header: Self.onHeader)
            try multi.add(easy)
        } catch {
            return (.failed("libcurl: \(error.message)"), nil)
        }
        defer { _ = multi.remove(easy) }
        var timer = ResponseTimer(responseTimeout: Double(request.responseTimeout.seconds), stallTimeout: Double(request.stallTimeout.seconds))
        let started = Date()
        let before = bodyBytes
        var result: Int32?
        while result == nil {
            do {
                _ = try multi.perform()
                for (_, code) in multi.completed() { result = code }
                if result != nil { break }
                try multi.poll(milliseconds: 100)
            } catch {
                return (.failed("libcurl: \(error.message)"), nil)
            }
            if let reason = keepGoing() { return (.interrupted(reason), nil) }
            switch timer.check(now: Date().timeIntervalSince(started), sent: easy.requestSent, headComplete: headComplete, bytes: bodyBytes - before,
                               held: false) {
            case .goOn: break
            case .headTimedOut: return (.failed("no complete response head within \(request.responseTimeout) (response_timeout)"), nil)
            case .stalled: return (.failed("stalled: under 1 KiB/s for \(request.stallTimeout) (stall_timeout)"), nil)
            }
        }
        if refused { return (.refused, nil) }
        let code = result ?? CurlGlobal.ok
        if code != CurlGlobal.ok {
            if let cause = CurlGlobal.connectionFailure(code, osErrno: easy.osErrno) { return (.failed(cause), nil) }
            if let problem = CurlGlobal.malformedResponse(code) { return (.failed("an invalid response: \(problem)"), nil) }
            if CurlGlobal.tlsErrors.contains(code) { return (.failed("TLS: \(easy.describe(code))"), nil) }
            return (.failed(easy.describe(code)), nil)
        }
        return (nil, easy.redirectURL)
    }

    private static let onBody: CurlDataCallback = { data, size, count, user in
        guard let user, let data else { return 0 }
        let fetcher = Unmanaged<RangeFetcher>.fromOpaque(user).takeUnretainedValue()
        let length = size * count
        fetcher.bodyBytes += UInt64(length)
        guard (200...299).contains(fetcher.head.status) else { return length }  // a redirect's or an error's body: not kept
        guard fetcher.onBody(UnsafeRawBufferPointer(start: data, count: length), fetcher.head) else {
            fetcher.refused = true
            return 0  // libcurl ends the exchange with a write error
        }
        return length
    }

    private static let onHeader: CurlDataCallback = { data, size, count, user in
        guard let user, let data else { return 0 }
        let fetcher = Unmanaged<RangeFetcher>.fromOpaque(user).takeUnretainedValue()
        let length = size * count
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        if length >= 5, bytes.starts(with: "HTTP/".utf8) { fetcher.headComplete = false }
        if fetcher.head.take(line: bytes), fetcher.head.status >= 200 { fetcher.headComplete = true }
        if fetcher.head.size > ResponseRules.maxHeadBytes { return 0 }
        return length
    }
}
