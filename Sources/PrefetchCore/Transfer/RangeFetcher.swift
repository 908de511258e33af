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
        var timeouts: SingleExchange.Timeouts
        /// The feed's `max_rate`, kept across a delta's requests (nil: none).
        var pace: Pace? = nil
    }

    /// A feed's `max_rate` for a delta (SPEC §9: its bytes are what came over the wire): a
    /// delta runs alone in its round, so the feed's whole rate is its own. The bytes taken
    /// since the delta began may not run ahead of the rate: a body that does waits, a tenth of
    /// a second at a time, in its callback (libcurl's own limit measures first, and a body
    /// that arrives in one read is never slowed by it).
    final class Pace {
        let bytesPerSecond: Double
        private let started = Date()
        private var taken: Double = 0

        init(bytesPerSecond: UInt64) {
            self.bytesPerSecond = Double(max(1, bytesPerSecond))
        }

        /// Takes `count` bytes; the seconds to wait before more.
        func take(_ count: Int, now: Date = Date()) -> TimeInterval {
            taken += Double(count)
            return max(0, taken / bytesPerSecond - now.timeIntervalSince(started))
        }
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
    /// What the last exchange's failure says beyond its words (TLS, a hold of its origin).
    private(set) var trouble = SingleExchange.Trouble()
    private var onBody: (UnsafeRawBufferPointer, ResponseRules.Head) -> Bool = { _, _ in true }
    private var refused = false
    private var pace: Pace?
    private var keepGoing: () -> String? = { nil }

    init(config: Config) {
        self.config = config
    }

    /// The `Range` header's value for `ranges` (half-open, non-empty, in order).
    static func rangeHeader(_ ranges: [Range<UInt64>]) -> String {
        "bytes=" + ranges.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
    }

    /// `onBody` gets each piece of a 2xx body with its head; false ends the exchange.
    /// `keepGoing` returns nil to go on, else why the exchange must end now.
    func fetch(_ request: Request, keepGoing: @escaping () -> String?, onBody: @escaping (UnsafeRawBufferPointer, ResponseRules.Head) -> Bool) -> Outcome {
        guard CurlGlobal.initialized else { return .failed("libcurl could not be set up") }
        self.onBody = onBody
        self.pace = request.pace
        self.keepGoing = keepGoing
        defer {
            self.onBody = { _, _ in true }
            self.keepGoing = { nil }
        }
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
        trouble = SingleExchange.Trouble()
        refused = false
        let easy: CurlEasy
        do {
            easy = try CurlEasy()
            let options = CurlRequestOptions(url: url, headers: headers, connectTimeout: Int(request.timeouts.connect.seconds), bufferSize: 256 * 1024,
                                             clientCertificate: config.clientCertificate)
            try easy.prepare(options, shared: SingleExchange.shared(config), receiver: Unmanaged.passUnretained(self).toOpaque(),
                             body: Self.onBody, header: Self.onHeader)
        } catch {
            return (.failed("libcurl: \(error.message)"), nil)
        }
        let before = bodyBytes
        let end = SingleExchange.run(easy, responseTimeout: request.timeouts.response, stallTimeout: request.timeouts.stall,
                                     progress: { (headComplete, bodyBytes - before) }, check: keepGoing)
        let code: Int32
        switch end {
        case .completed(let result): code = result
        case .failed(let message): return (.failed(message), nil)
        case .headTimedOut(let message):
            trouble = SingleExchange.Trouble(holdsOrigin: "response timeout")
            return (.failed(message), nil)
        case .stopped(let reason): return (.interrupted(reason), nil)
        }
        if refused { return (.refused, nil) }
        if let failure = SingleExchange.failure(code, easy: easy) {
            trouble = SingleExchange.Trouble(code, easy: easy, headComplete: headComplete)
            return (.failed(failure), nil)
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
        if let pace = fetcher.pace {  // max_rate: wait here, a stop still looked at every 100 ms
            var wait = pace.take(length)
            while wait > 0 {
                if fetcher.keepGoing() != nil { return length }  // the loop sees it next and ends the exchange
                Thread.sleep(forTimeInterval: min(wait, 0.1))
                wait = pace.take(0)
            }
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
