import Foundation

/// SPEC §1's jitter: SHA-256 of `ID + "\n" + FEED`, first 8 bytes as a big-endian unsigned
/// integer, modulo the jitter in seconds.
public enum Jitter {
    public static func offset(machineID: String?, feed: String, jitter: TimeSpan) -> Int64 {
        guard let machineID, jitter.seconds > 0 else { return 0 }
        let digest = SHA256.digest(Array((machineID + "\n" + feed).utf8))
        var value: UInt64 = 0
        for byte in digest.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int64(value % UInt64(jitter.seconds))
    }
}
