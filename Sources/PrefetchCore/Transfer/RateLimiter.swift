import Foundation

/// A feed's `max_rate` as a token bucket shared by all of its transfers: the cap holds for
/// the feed as a whole, however many transfers it runs and however small its files are.
///
/// libcurl's own per-transfer limit (CURLOPT_MAX_RECV_SPEED_LARGE) cannot do this: it
/// throttles a transfer only after measuring it, so a feed of small files, each received
/// in one read, is never slowed, and a share per transfer has to be re-balanced whenever
/// one starts or ends. Here every received chunk takes tokens; when the bucket is empty
/// the transfer pauses (CURL_WRITEFUNC_PAUSE) until the engine refills it, and no new
/// transfer of the feed starts while it is in debt.
final class RateLimiter {
    /// Bytes per second.
    let rate: Double
    /// How many bytes may pass at once after a quiet spell: a quarter second's worth.
    let burst: Double
    private(set) var tokens: Double
    private var last: TimeInterval

    init(bytesPerSecond: UInt64, now: TimeInterval) {
        rate = Double(max(1, bytesPerSecond))
        burst = max(rate / 4, 1)
        tokens = burst
        last = now
    }

    /// Adds what the rate allows since the last refill (never above `burst`).
    func refill(now: TimeInterval) {
        tokens = min(burst, tokens + (now - last) * rate)
        last = now
    }

    /// Takes `count` bytes if any tokens are left (the bucket may go into debt by one chunk,
    /// which later chunks pay back); false means "pause until refilled".
    func take(_ count: Int) -> Bool {
        guard tokens > 0 else { return false }
        tokens -= Double(count)
        return true
    }

    /// True while the bucket is empty or in debt.
    var exhausted: Bool { tokens <= 0 }

    /// Seconds until tokens are available again.
    var secondsUntilAvailable: Double { tokens > 0 ? 0 : (-tokens + 1) / rate }

    /// The libcurl receive buffer for a capped feed: about an eighth of a second's worth
    /// (16 KiB to 512 KiB), so one chunk never overshoots the cap by much.
    static func bufferSize(for bytesPerSecond: UInt64) -> Int {
        Int(min(512 * 1024, max(16 * 1024, bytesPerSecond / 8)))
    }
}
