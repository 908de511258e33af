import Foundation

/// One request on an easy handle of its own, run to its end on the calling thread — a feed
/// source's manifest (`SourceFetcher`), a delta's control file and ranges (`RangeFetcher`):
/// a multi handle of one, polled every 100 ms; after each poll `check` (a stop, a pause, the
/// window's end) and the timeouts (`response_timeout` for the head, `stall_timeout` for the
/// body) are looked at.
enum SingleExchange {
    enum End: Equatable {
        /// libcurl finished the exchange with this result code.
        case completed(Int32)
        /// libcurl itself failed, or the body stalled: in words.
        case failed(String)
        /// No complete head came within `response_timeout`: in words (it holds the origin, SPEC §6).
        case headTimedOut(String)
        /// `check` ended it: its reason.
        case stopped(String)
    }

    /// Runs `easy` (prepared) to its end. `progress` says whether the head is complete and how
    /// many body bytes came.
    static func run(_ easy: CurlEasy, responseTimeout: TimeSpan, stallTimeout: TimeSpan,
                    progress: () -> (headComplete: Bool, bytes: UInt64), check: () -> String?) -> End {
        let multi: CurlMulti
        do {
            multi = try CurlMulti(totalConnections: 1, perHost: 1)
            try multi.add(easy)
        } catch {
            return .failed("libcurl: \(error.message)")
        }
        defer { _ = multi.remove(easy) }
        var timer = ResponseTimer(responseTimeout: Double(responseTimeout.seconds), stallTimeout: Double(stallTimeout.seconds))
        let started = Date()
        while true {
            do {
                _ = try multi.perform()
                if let (_, code) = multi.completed().first { return .completed(code) }
                try multi.poll(milliseconds: 100)
            } catch {
                return .failed("libcurl: \(error.message)")
            }
            if let reason = check() { return .stopped(reason) }
            let (headComplete, bytes) = progress()
            switch timer.check(now: Date().timeIntervalSince(started), sent: easy.requestSent, headComplete: headComplete, bytes: bytes, held: false) {
            case .goOn: break
            case .headTimedOut: return .headTimedOut("no complete response head within \(responseTimeout) (response_timeout)")
            case .stalled: return .failed("stalled: under 1 KiB/s for \(stallTimeout) (stall_timeout)")
            }
        }
    }

    /// libcurl's result `code` for `easy` in words (a connection failure, an invalid response,
    /// TLS), or nil for success.
    static func failure(_ code: Int32, easy: CurlEasy) -> String? {
        guard code != CurlGlobal.ok else { return nil }
        if let cause = CurlGlobal.connectionFailure(code, osErrno: easy.osErrno) { return cause }
        if let problem = CurlGlobal.malformedResponse(code) { return "an invalid response: \(problem)" }
        if CurlGlobal.tlsErrors.contains(code) { return "TLS: \(easy.describe(code))" }
        return easy.describe(code)
    }

    /// The three timeouts of a request (SPEC §7): `connect_timeout`, `response_timeout` for
    /// the head, `stall_timeout` for the body — a feed's `limits`, else the config's.
    struct Timeouts: Equatable {
        var connect: TimeSpan
        var response: TimeSpan
        var stall: TimeSpan

        /// The config's.
        init(_ config: Config) {
            (connect, response, stall) = (config.connectTimeout, config.responseTimeout, config.stallTimeout)
        }

        /// A feed's `limits`, each falling back to the config's.
        init(_ limits: FeedLimits, config: Config) {
            (connect, response, stall) = (limits.connectTimeout ?? config.connectTimeout, limits.responseTimeout ?? config.responseTimeout,
                                          limits.stallTimeout ?? config.stallTimeout)
        }
    }

    /// What a failed exchange says beyond its words, as SPEC §6 and §7 judge a transfer's:
    /// a TLS failure is permanent; a connection libcurl could not make, one that broke before
    /// a whole head, or a head that did not come in time holds the origin.
    struct Trouble: Equatable {
        /// The cause that holds the origin ("connection refused", "response timeout"), or nil.
        var holdsOrigin: String?
        var tls = false

        /// The trouble of an exchange libcurl ended with `code` (0: none).
        init(_ code: Int32, easy: CurlEasy, headComplete: Bool) {
            tls = CurlGlobal.tlsErrors.contains(code)
            holdsOrigin = headComplete || tls ? nil : CurlGlobal.connectionFailure(code, osErrno: easy.osErrno)
        }

        init(holdsOrigin: String? = nil) {
            self.holdsOrigin = holdsOrigin
        }
    }

    /// The options every such request shares.
    static func shared(_ config: Config) -> CurlSharedOptions {
        CurlSharedOptions(caFile: config.caFile, userAgent: "prefetch/\(ProgramVersion.text)", proxy: config.proxy?.text, noProxy: config.noProxy?.text)
    }
}
