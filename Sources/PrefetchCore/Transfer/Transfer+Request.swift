import Foundation

// MARK: Requests

/// How a `Transfer` asks: the first request, and each one after it (a redirect's, a
/// resume's) set up on its easy handle with the manifest's headers, the range or the
/// validators, the timeouts and the read size.
extension Transfer {
    /// Sends the first request.
    func start(config: Config, environment: [String: String]) throws(TransferFailure) {
        guard case .send(let request) = machine.request() else { preconditionFailure("the first request is not sent") }
        try send(request, config: config, environment: environment)
    }

    /// Sets up the easy handle for `request`. Throws for a missing `${VAR}`, or an option
    /// libcurl refused.
    func send(_ request: TransferStateMachine.Request, config: Config, environment: [String: String]) throws(TransferFailure) {
        // Ranges must refer to the stored bytes (FAULTS 15): identity is asked for, unless the
        // resource says `encoding: decode` (SPEC §7), which offers what libcurl decodes.
        let decode = job.resource.encoding == .decode
        var lines = decode ? [] : ["Accept-Encoding: identity"]
        if request.sameOrigin {
            do {
                // `${VAR}`s filled in and checked here, at request time (SPEC §7).
                lines += try job.resource.headerLines(environment: environment)
            } catch {
                throw machine.failing(TransferFailure(kind: .permanent, message: error.message,
                                                      retryAfter: nil, discardPartial: false, httpStatus: nil))
            }
        }
        if request.rangeFrom > 0 {
            lines.append("Range: bytes=\(request.rangeFrom)-")
            if let ifRange = request.ifRange { lines.append("If-Range: \(ifRange)") }
        } else if let validators = request.revalidating {
            if let etag = validators.etag { lines.append("If-None-Match: \(etag)") }
            if let lastModified = validators.lastModified { lines.append("If-Modified-Since: \(lastModified)") }
        }
        connectTimeout = job.feed.limits.connectTimeout ?? config.connectTimeout
        let options = CurlRequestOptions(url: request.url, headers: lines, connectTimeout: Int(connectTimeout.seconds),
                                         bufferSize: Self.bufferSize(job, limiter: limiter),
                                         acceptEncoding: decode ? ContentCodings.acceptEncoding : nil,
                                         clientCertificate: config.clientCertificate)
        responseTimeout = job.feed.limits.responseTimeout ?? config.responseTimeout
        stallTimeout = job.feed.limits.stallTimeout ?? config.stallTimeout
        timer = ResponseTimer(responseTimeout: Double(responseTimeout.seconds), stallTimeout: Double(stallTimeout.seconds))
        do {
            try easy.prepare(options, shared: CurlSharedOptions(caFile: config.caFile, userAgent: Self.userAgent,
                                                                 proxy: config.proxy?.text, noProxy: config.noProxy?.text),
                             receiver: Unmanaged.passUnretained(self).toOpaque(), body: Self.onBody, header: Self.onHeader)
        } catch {
            // libcurl refused an option: a fault of this handle, not of the resource. The
            // handle is dropped (the engine does not reuse it) and the transfer is retried.
            throw machine.failing(.libcurl(error))
        }
    }

    /// Large reads mean fewer callbacks and writes; a capped feed reads less at a time: about
    /// an eighth of a second of one transfer's share of the rate, so shares stay even.
    /// A decoded body reads at most 32 KiB at a time: when its writer pauses libcurl (rate,
    /// budget), libcurl keeps the rest of the read's decoded bytes in memory, up to 64 MiB
    /// (7.88's pause buffer; past it the transfer fails), and gzip expands at most about
    /// 1,030-fold, so one read's worth stays under 34 MiB.
    static func bufferSize(_ job: TransferJob, limiter: RateLimiter?) -> Int {
        let size = limiter == nil ? 512 * 1024
            : RateLimiter.bufferSize(for: (job.feed.limits.maxRate?.bytes ?? 0) / UInt64(max(1, job.feed.limits.concurrency)))
        return job.resource.encoding == .decode ? min(size, decodedReadSize) : size
    }

    /// The most a decoded body reads at a time (`bufferSize` says why).
    static let decodedReadSize = 32 * 1024

    private static let userAgent = "prefetch/\(ProgramVersion.text)"
}
