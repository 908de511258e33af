import Foundation

/// What one fetch of a feed source's manifest (or its signature) asks for (SPEC §8).
struct SourceRequest {
    var url: ResourceURL
    /// The source's header lines, `${VAR}`s filled in: sent to the URL's own origin only.
    var headers: [String]
    /// The copy in force's validators (a revalidation); nil: fetched whole.
    var validators: Validators?
    /// The most bytes the body may have (`max_manifest_size`), and its name in the error.
    var limit: Int
    var limitName: String
    /// What is fetched, for messages: "manifest", "signature".
    var what: String
    /// Whether a redirect may go from https to plain http (only a signed source's may:
    /// its signature, not the connection, is what is trusted).
    var allowsDowngrade: Bool
    /// The source's own client certificate, else the config's (nil: none).
    var clientCertificate: ClientCertificate?
    /// A tighter limit learnt from the body's first bytes (a zsync control file's header
    /// declares its exact length): asked as the body grows until it answers; nil: not yet.
    var refineLimit: (([UInt8]) -> Int?)? = nil
    /// A feed's timeouts (a delta's control file); nil: the config's.
    var timeouts: SingleExchange.Timeouts? = nil
}

/// How a fetch ended.
enum SourceResponse: Equatable {
    /// A 200 with its whole body and the validators it carried.
    case body([UInt8], Validators)
    /// A 304: the copy in force is current.
    case notModified
    /// Why not, in words (`cannot fetch …: HTTP 503`).
    case failed(String)
}

/// Fetches a manifest into memory through libcurl with the downloader's own rules: TLS
/// verified (`ca_file`), the config's proxies, redirects followed by hand up to
/// `max_redirects` (headers only to the URL's own origin, never across a redirect to
/// another), `If-None-Match` / `If-Modified-Since`, identity asked for and a coded body
/// refused, `connect_timeout`, `response_timeout` for the head and `stall_timeout` for the
/// body, and the body cut off past its limit. One request at a time: a manifest is small,
/// and sources are checked before the transfers start.
final class SourceFetcher {
    private let config: Config
    private var head = ResponseRules.Head(status: 0)
    /// The last exchange's status (0: no response), and its body bytes over the wire.
    var status: Int { head.status }
    /// The last exchange's `Retry-After`, as sent.
    var retryAfter: String? { head.retryAfter }
    /// What the last exchange's failure says beyond its words (TLS, a hold of its origin).
    private(set) var trouble = SingleExchange.Trouble()
    private(set) var bodyBytes: UInt64 = 0
    private var headComplete = false
    private var body: [UInt8] = []
    private var limit = 0
    private var overLimit = false
    private var refineLimit: (([UInt8]) -> Int?)?

    init(config: Config) {
        self.config = config
    }

    func fetch(_ request: SourceRequest, stopRequested: () -> Bool = { false }) -> SourceResponse {
        guard CurlGlobal.initialized else { return .failed("libcurl could not be set up") }
        var url = request.url.text
        var visited: Set<String> = [url]
        var redirects = 0
        while true {
            let current: ResourceURL
            do { current = try ResourceURL.parse(url) } catch { return .failed("a redirect to a URL that is not http or https") }
            let sameOrigin = current.origin == request.url.origin
            var lines = ["Accept-Encoding: identity"]
            if sameOrigin { lines += request.headers }
            if let validators = request.validators {
                if let etag = validators.etag { lines.append("If-None-Match: \(etag)") }
                if let lastModified = validators.lastModified { lines.append("If-Modified-Since: \(lastModified)") }
            }
            let exchange = perform(url: url, headers: lines, limit: request.limit, request: request, stopRequested: stopRequested)
            if let failure = exchange.failure { return .failed(failure) }
            let status = head.status
            if (300...399).contains(status), status != 304 {
                guard let location = exchange.redirect else { return .failed("HTTP \(status) without a Location") }
                redirects += 1
                if redirects > config.maxRedirects { return .failed("more than \(config.maxRedirects) redirects (max_redirects)") }
                if !visited.insert(location).inserted { return .failed("a redirect loop") }
                if request.url.scheme == "https", location.lowercased().hasPrefix("http:"), !request.allowsDowngrade {
                    return .failed("a redirect from https to plain http, which an unsigned source may not follow")
                }
                url = location
                continue
            }
            if status == 304 {
                return request.validators == nil ? .failed("HTTP 304 to a request that revalidated nothing") : .notModified
            }
            guard status == 200 else { return .failed("HTTP \(status)") }
            if let problem = head.invalid { return .failed("an invalid response: \(problem)") }
            if let coding = head.contentEncoding, coding.lowercased() != "identity" {
                return .failed("the response is encoded (Content-Encoding: \(coding)) although identity was asked for")
            }
            if let length = head.contentLength, length != UInt64(body.count) {
                return .failed("the body ended after \(body.count) of \(length) bytes")
            }
            return .body(body, Validators(etag: head.etag, lastModified: head.lastModified))
        }
    }

    /// One request: its failure in words, or the redirect's target (for a 3xx).
    private func perform(url: String, headers: [String], limit: Int, request: SourceRequest,
                         stopRequested: () -> Bool) -> (failure: String?, redirect: String?) {
        head = ResponseRules.Head(status: 0)
        headComplete = false
        trouble = SingleExchange.Trouble()
        body = []
        self.limit = limit
        overLimit = false
        refineLimit = request.refineLimit
        let timeouts = request.timeouts ?? SingleExchange.Timeouts(config)
        let easy: CurlEasy
        do {
            easy = try CurlEasy()
            let options = CurlRequestOptions(url: url, headers: headers, connectTimeout: Int(timeouts.connect.seconds), bufferSize: 64 * 1024,
                                             clientCertificate: request.clientCertificate)
            try easy.prepare(options, shared: SingleExchange.shared(config), receiver: Unmanaged.passUnretained(self).toOpaque(),
                             body: Self.onBody, header: Self.onHeader)
        } catch {
            return ("libcurl: \(error.message)", nil)
        }
        let end = SingleExchange.run(easy, responseTimeout: timeouts.response, stallTimeout: timeouts.stall,
                                     progress: { (headComplete, UInt64(body.count)) }, check: { stopRequested() ? "stopped" : nil })
        let code: Int32
        switch end {
        case .completed(let result): code = result
        case .failed(let message), .stopped(let message): return (message, nil)
        case .headTimedOut(let message):
            trouble = SingleExchange.Trouble(holdsOrigin: "response timeout")
            return (message, nil)
        }
        if overLimit {
            // SPEC §7's words: the size when the head announced it, else "more than".
            let announced = head.contentLength.flatMap { $0 > UInt64(limit) ? Int(exactly: $0) : nil }
            return (InputLimits.tooLarge(request.what, size: announced ?? limit + 1, exact: announced != nil, limit: request.limitName)
                        .replacingOccurrences(of: "; it is not read", with: ""), nil)
        }
        if let failure = SingleExchange.failure(code, easy: easy) {
            trouble = SingleExchange.Trouble(code, easy: easy, headComplete: headComplete)
            return (failure, nil)
        }
        return (nil, easy.redirectURL)
    }

    private static let onBody: CurlDataCallback = { data, size, count, user in
        guard let user, let data else { return 0 }
        let fetcher = Unmanaged<SourceFetcher>.fromOpaque(user).takeUnretainedValue()
        let length = size * count
        fetcher.bodyBytes += UInt64(length)
        if fetcher.head.status != 200 { return length }  // a redirect's or an error's body: not kept
        if let refine = fetcher.refineLimit {
            // The bytes seen so far may say how many there are to be: never more than the limit.
            let seen = fetcher.body + UnsafeRawBufferPointer(start: data, count: length).prefix(max(0, fetcher.limit - fetcher.body.count))
            if let refined = refine(seen) {
                fetcher.limit = min(fetcher.limit, refined)
                fetcher.refineLimit = nil
            }
        }
        if fetcher.body.count + length > fetcher.limit || fetcher.head.contentLength.map({ $0 > UInt64(fetcher.limit) }) == true {
            fetcher.overLimit = true
            return 0  // libcurl ends the exchange with a write error
        }
        data.withMemoryRebound(to: UInt8.self, capacity: length) { fetcher.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
        return length
    }

    private static let onHeader: CurlDataCallback = { data, size, count, user in
        guard let user, let data else { return 0 }
        let fetcher = Unmanaged<SourceFetcher>.fromOpaque(user).takeUnretainedValue()
        let length = size * count
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        if length >= 5, bytes.starts(with: "HTTP/".utf8) { fetcher.headComplete = false }  // an interim head's successor
        if fetcher.head.take(line: bytes), fetcher.head.status >= 200 { fetcher.headComplete = true }
        if fetcher.head.size > ResponseRules.maxHeadBytes { return 0 }
        return length
    }
}
