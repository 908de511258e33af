/// When a feed source is checked (SPEC §8): `refresh` after its last check, less a
/// per-machine offset, so that a fleet started together drifts apart; after a failed check
/// 30 s, doubling up to `refresh`, or the end of its origin's hold if that is later. Pure:
/// the caller gives the clock and the record.
public enum SourceTiming {
    /// The first wait after a failed check.
    public static let firstBackoff: Int64 = 30

    /// The per-machine offset in whole seconds, in `[0, refresh/10)`: SHA-256 of
    /// `ID + "\n" + URL` (the URL as written, query included), first 8 bytes as an unsigned
    /// big-endian integer, modulo `refresh / 10` in whole seconds (0 when that is under 1 s,
    /// and without a usable machine id).
    public static func offset(machineID: String?, url: String, refresh: TimeSpan) -> Int64 {
        let modulus = refresh.seconds / 10
        guard let machineID, modulus > 0 else { return 0 }
        let digest = SHA256.digest(Array((machineID + "\n" + url).utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int64(value % UInt64(modulus))
    }

    /// The wait after `failures` failed checks in a row (1 or more): 30 s, 60 s, 120 s …,
    /// never more than `refresh`.
    public static func backoff(failures: Int, refresh: TimeSpan) -> Int64 {
        guard failures > 0 else { return refresh.seconds }
        var wait = firstBackoff
        var step = 1
        while step < failures, wait < refresh.seconds {
            wait *= 2
            step += 1
        }
        return min(wait, refresh.seconds)
    }

    /// When the source is next due. No check recorded: now (at once). After a failed check
    /// the backoff, or `holdUntil` (its origin's hold) when later; after a good one,
    /// `refresh` less the offset.
    public static func due(lastCheck: Instant?, failures: Int, refresh: TimeSpan, offset: Int64, holdUntil: Instant?, now: Instant) -> Instant {
        guard let lastCheck else { return now }
        if failures > 0 {
            let retry = lastCheck.advanced(bySeconds: backoff(failures: failures, refresh: refresh))
            if let holdUntil, holdUntil > retry { return holdUntil }
            return retry
        }
        return lastCheck.advanced(bySeconds: refresh.seconds - offset)
    }
}
