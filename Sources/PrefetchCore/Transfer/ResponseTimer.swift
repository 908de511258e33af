/// The two clocks of one request after it is sent (SPEC §5, §7): its response head must be
/// whole within `response_timeout` of the send, and from the head's end, under 1 KiB/s for
/// `stall_timeout` aborts. (The TCP connect and the TLS handshake before the send are
/// libcurl's, bounded by `connect_timeout`.) libcurl's own low-speed check counts from the
/// request's start, so it would cut a site cache that takes a minute to start answering; and
/// it cannot be told a head from a body. So the engine's loop keeps these instead.
///
/// Pure: the loop tells it the time (monotonic seconds), whether the request is out, whether
/// the final head is whole, the body bytes received so far, and whether prefetch itself
/// holds the transfer (its rate, its budget, its record: a hold of its own is no stall); it
/// answers whether the exchange must end.
struct ResponseTimer {
    enum Verdict: Equatable {
        case goOn
        /// The head was not whole `responseTimeout` seconds after the request was sent.
        case headTimedOut
        /// The body came under the minimum rate for `stallTimeout` seconds.
        case stalled
    }

    let responseTimeout: Double
    let stallTimeout: Double
    /// Bytes per second below which a body counts as stalled (SPEC §5: 1 KiB/s).
    let minimumRate: Double

    /// When the request was seen sent (nil: not yet).
    private var sentAt: Double?
    /// Samples of the body's progress, oldest first, a quarter of `stallTimeout` apart: the
    /// rate is judged over the newest window at least `stallTimeout` long. Empty until the
    /// head is whole, and again after a hold of prefetch's own.
    private var samples: [(time: Double, bytes: UInt64)] = []

    init(responseTimeout: Double, stallTimeout: Double, minimumRate: Double = 1024) {
        self.responseTimeout = responseTimeout
        self.stallTimeout = stallTimeout
        self.minimumRate = minimumRate
    }

    /// Whether the caller still has to find out if the request was sent (it costs a look).
    var awaitsSend: Bool { sentAt == nil }

    /// A new request (the next of a redirect chain): both clocks start again.
    mutating func restart() {
        sentAt = nil
        samples.removeAll(keepingCapacity: true)
    }

    /// The state at `now`: `sent`, the request is out (looked at only until it is);
    /// `headComplete`, the final head is whole; `bytes`, body bytes so far (never less
    /// than before); `held`, prefetch itself holds the transfer.
    mutating func check(now: Double, sent: Bool, headComplete: Bool, bytes: UInt64, held: Bool) -> Verdict {
        if sentAt == nil, sent || headComplete { sentAt = now }
        guard headComplete else {
            guard let sentAt else { return .goOn }
            return now - sentAt >= responseTimeout ? .headTimedOut : .goOn
        }
        if held {
            samples.removeAll(keepingCapacity: true)
            return .goOn
        }
        guard let last = samples.last else {
            samples.append((now, bytes))
            return .goOn
        }
        if now - last.time >= stallTimeout / 4 { samples.append((now, bytes)) }
        // The oldest sample kept is the newest one at least `stallTimeout` old.
        while samples.count >= 2, now - samples[1].time >= stallTimeout { samples.removeFirst() }
        let base = samples[0]
        let span = now - base.time
        guard span >= stallTimeout else { return .goOn }
        let moved = bytes >= base.bytes ? bytes - base.bytes : 0
        return Double(moved) < minimumRate * span ? .stalled : .goOn
    }
}

extension TransferFailure {
    /// The head did not arrive whole in time: a connection-level failure that holds the
    /// origin (SPEC §6).
    static func headTimeout(_ timeout: TimeSpan) -> TransferFailure {
        TransferFailure(kind: .transient, message: "no complete response head within \(timeout) (response_timeout)", retryAfter: nil,
                        discardPartial: false, httpStatus: nil, holdsOrigin: "response timeout")
    }

    /// The body stalled after its head: transient, the partial kept for a resume.
    static func stalled(_ timeout: TimeSpan, status: Int) -> TransferFailure {
        TransferFailure(kind: .transient, message: "stalled: under 1 KiB/s for \(timeout) (stall_timeout)", retryAfter: nil,
                        discardPartial: false, httpStatus: status)
    }
}
