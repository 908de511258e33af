/// A header value that is usually an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, a
/// `Last-Modified` as state.db records it): then held as its seconds, written in a string of
/// at most 15 bytes that Swift keeps inline, else as the text itself. `text` gives back
/// exactly what was given. The 29 bytes of the date as text would take an allocation for
/// every record that has one.
///
/// The storage: NUL, then the seconds in decimal, for a date that is written exactly as it
/// would be formatted; NUL, NUL, then the text, for a text that begins with NUL; any other
/// text as it is.
struct DateText: Sendable, Equatable {
    private let storage: String

    init(_ text: String) {
        var text = text
        storage = text.withUTF8 { Self.storage(of: $0) } ?? text
    }

    /// From the text's UTF-8 bytes: a string is made of them only when they are no date.
    init(bytes: UnsafeBufferPointer<UInt8>) {
        storage = Self.storage(of: bytes) ?? String(decoding: bytes, as: UTF8.self)
    }

    /// The stored form when it is not the text itself.
    private static func storage(of bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if let seconds = fixdateSeconds(bytes) {
            // NUL and the decimal digits: at most 14 bytes, a string held inline.
            let digits = DecimalDigits(seconds)
            return String(unsafeUninitializedCapacity: 1 + digits.count) { buffer in
                buffer[0] = 0
                for (at, digit) in zip(1..., digits) { buffer[at] = digit }
                return 1 + digits.count
            }
        }
        if bytes.first == 0 { return "\u{0}\u{0}" + String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    var text: String {
        var utf8 = storage.utf8.makeIterator()
        guard utf8.next() == 0 else { return storage }
        if utf8.next() == 0 { return String(decoding: storage.utf8.dropFirst(2), as: UTF8.self) }
        return Self.fixdate(Int64(String(decoding: storage.utf8.dropFirst(), as: UTF8.self))!)
    }

    /// Whether it is held as seconds (no allocation).
    var isSeconds: Bool { storage.utf8.first == 0 && storage.utf8.dropFirst().first != 0 }

    /// Equal when the texts are equal byte for byte (the stored form of a text is one).
    static func == (a: DateText, b: DateText) -> Bool { SameBytes.equal(a.storage, b.storage) }

    private static let dayNames = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // from 1970-01-01, a Thursday
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `seconds` as an IMF-fixdate.
    static func fixdate(_ seconds: Int64) -> String {
        let civil = CivilTime(secondsAsUTC: seconds)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let weekday = Int(((days % 7) + 7) % 7)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = String(civil.year)
        return "\(dayNames[weekday]), \(two(civil.day)) \(monthNames[civil.month - 1]) \(String(repeating: "0", count: max(0, 4 - year.count)))\(year) "
            + "\(two(civil.hour)):\(two(civil.minute)):\(two(civil.second)) GMT"
    }

    /// The three letters of each name as one number (`key`), in `dayNames`' and `monthNames`' order.
    private static let dayKeys: [UInt32] = dayNames.map(key)
    private static let monthKeys: [UInt32] = monthNames.map(key)
    private static func key(_ name: String) -> UInt32 { name.utf8.reduce(0) { $0 << 8 | UInt32($1) } }
    /// Where `fixdateSeconds` wants a digit.
    private static let digitPlaces = [5, 6, 12, 13, 14, 15, 17, 18, 20, 21, 23, 24]

    /// The seconds of `bytes` when they are an IMF-fixdate exactly as `fixdate` writes it
    /// (the day name that date's, the year from 1900 to 9999); nil for anything else. By
    /// hand, with no generic collection call: state.db's reader calls it for every record.
    static func fixdateSeconds(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count == 29, bytes[3] == 0x2C, bytes[4] == 0x20, bytes[7] == 0x20, bytes[11] == 0x20, bytes[16] == 0x20,
              bytes[19] == 0x3A, bytes[22] == 0x3A, bytes[25] == 0x20, bytes[26] == 0x47, bytes[27] == 0x4D, bytes[28] == 0x54
        else { return nil }
        func two(_ at: Int) -> Int { Int(bytes[at] &- 0x30) &* 10 &+ Int(bytes[at + 1] &- 0x30) }
        func three(_ at: Int) -> UInt32 { UInt32(bytes[at]) << 16 | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) }
        for at in digitPlaces where bytes[at] &- 0x30 >= 10 { return nil }
        let day = two(5), year = two(12) * 100 + two(14), hour = two(17), minute = two(20), second = two(23)
        guard let weekday = dayKeys.firstIndex(of: three(0)), let monthIndex = monthKeys.firstIndex(of: three(8)),
              year >= 1900, day >= 1, day <= CivilTime.daysIn(month: monthIndex + 1, year: year), hour < 24, minute < 60, second < 60
        else { return nil }
        // Days since 1970-01-01 of the civil date (H. Hinnant's days_from_civil).
        let month = monthIndex + 1
        let y = month <= 2 ? year - 1 : year
        let era = y / 400, yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468
        guard (days % 7 + 7) % 7 == weekday else { return nil }
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }
}
