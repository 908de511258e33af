import Foundation

/// A feed's `max_rate` as a token bucket shared fairly by its transfers: the cap holds for
/// the feed as a whole, however many transfers it runs and however small its files are, and
/// each running transfer gets an equal share of it.
///
/// libcurl's own per-transfer limit (CURLOPT_MAX_RECV_SPEED_LARGE) cannot do this: it
/// throttles a transfer only after measuring it, so a feed of small files, each received
/// in one read, is never slowed, and a share per transfer has to be re-balanced whenever
/// one starts or ends. Here every received chunk takes tokens; when a transfer has none
/// left it pauses (CURL_WRITEFUNC_PAUSE) until the engine refills, and no new transfer of
/// the feed starts while the feed is in debt.
///
/// Fairness (deficit round robin): each refill is dealt out in equal parts to the feed's
/// running transfers (`join`/`leave`), each keeping at most its part of the burst. A part
/// that a transfer does not use (its server is slower than its share) overflows into a
/// common pool that any transfer may draw on once its own is spent, so the feed still
/// moves at its cap. A single bucket, taken by whichever chunk came first, let one fast
/// transfer take the whole budget while the others sat at 0 B.
final class RateLimiter {
    /// Bytes per second, for the feed as a whole.
    let rate: Double
    /// How many bytes may pass at once after a quiet spell: a quarter second's worth.
    let burst: Double
    /// Each running transfer's tokens (may go into debt by one chunk, which later refills pay back).
    private var shares: [ObjectIdentifier: Double] = [:]
    /// Tokens no transfer had room for: drawn on by any transfer whose own share is spent.
    private(set) var pool: Double
    private var last: TimeInterval

    init(bytesPerSecond: UInt64, now: TimeInterval) {
        rate = Double(max(1, bytesPerSecond))
        burst = max(rate / 4, 1)
        pool = burst
        last = now
    }

    /// A transfer of the feed starts: from now on it gets its share of each refill.
    func join(_ member: AnyObject) {
        shares[ObjectIdentifier(member)] = shares[ObjectIdentifier(member)] ?? 0
    }

    /// A transfer ended: its unspent tokens go back to the pool, its debt stays the feed's.
    func leave(_ member: AnyObject) {
        guard let left = shares.removeValue(forKey: ObjectIdentifier(member)) else { return }
        pool = min(burst, pool + left)
    }

    /// Adds what the rate allows since the last refill, in equal parts to the running
    /// transfers (each up to its part of the burst), the rest to the pool (up to the burst).
    func refill(now: TimeInterval) {
        var added = max(0, now - last) * rate
        last = now
        if !shares.isEmpty {
            let part = added / Double(shares.count)
            let cap = burst / Double(shares.count)
            added = 0
            for (member, tokens) in shares {
                let room = max(0, cap - tokens)
                let given = min(part, room)
                shares[member] = tokens + given
                added += part - given
            }
        }
        pool = min(burst, pool + added)
    }

    /// Takes `count` bytes for `member` if it has tokens of its own left, else from the pool
    /// (either may go into debt by one chunk); false means "pause until refilled".
    func take(_ count: Int, for member: AnyObject) -> Bool {
        let id = ObjectIdentifier(member)
        if let own = shares[id], own > 0 {
            shares[id] = own - Double(count)
            return true
        }
        guard pool > 0 else { return false }
        pool -= Double(count)
        return true
    }

    /// Whether `member` could take a chunk now.
    func canTake(_ member: AnyObject) -> Bool {
        (shares[ObjectIdentifier(member)] ?? 0) > 0 || pool > 0
    }

    /// True while the feed is in debt or has nothing to give: no new transfer starts.
    var exhausted: Bool { pool <= 0 && !shares.values.contains { $0 > 0 } }

    /// Seconds until `member` (or, without one, any transfer) has tokens again.
    func secondsUntilAvailable(for member: AnyObject? = nil) -> Double {
        let members = max(1, shares.count)
        if let member {
            let own = shares[ObjectIdentifier(member)] ?? 0
            if own > 0 || pool > 0 { return 0 }
            return (-own + 1) / (rate / Double(members))
        }
        if !exhausted { return 0 }
        let deepest = shares.values.max() ?? pool
        return (-max(deepest, pool) + 1) / rate
    }

    /// The libcurl receive buffer for a capped feed: about an eighth of a second's worth
    /// (16 KiB to 512 KiB), so one chunk never overshoots the cap by much.
    static func bufferSize(for bytesPerSecond: UInt64) -> Int {
        Int(min(512 * 1024, max(16 * 1024, bytesPerSecond / 8)))
    }
}
