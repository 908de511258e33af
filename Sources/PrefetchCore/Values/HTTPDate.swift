/// An HTTP-date (RFC 9110 §5.6.7) as seconds since the epoch: the preferred IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete forms a recipient must also
/// accept, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`). Parsed by hand, without a `DateFormatter`: the plan reads
/// two dates of every partial and every resource it judges (§7's resumable rule).
enum HTTPDate {
    private static let months: [[UInt8]] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        .map { Array($0.utf8) }
    private static let days: [[UInt8]] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
        .map { Array($0.utf8) }

    /// Seconds since the epoch; nil for anything that is not one of the three forms with a
    /// valid calendar date and time.
    static func parse(_ text: String) -> Int64? {
        var tokens: [[UInt8]] = []
        var current: [UInt8] = []
        for byte in text.utf8 {
            if byte == 0x20 || byte == 0x09 {
                if !current.isEmpty { tokens.append(current); current = [] }
            } else {
                current.append(byte)
            }
        }
        if !current.isEmpty { tokens.append(current) }
        let day: Int?, month: Int?, year: Int?, clock: [UInt8]
        // The day name is checked for its form, not against the date (RFC 9110 §5.6.7: "Sun,"
        // before IMF-fixdate and asctime, "Sunday," before RFC 850); anything else is no date.
        guard let first = tokens.first, dayName(first.last == 0x2C ? first.dropLast() : first[...], long: tokens.count == 4) else { return nil }
        if tokens.count == 6, tokens[0].last == 0x2C, gmt(tokens[5]) {  // IMF-fixdate
            guard tokens[1].count == 2, tokens[3].count == 4 else { return nil }
            day = number(tokens[1]); month = monthNumber(tokens[2]); year = number(tokens[3]); clock = tokens[4]
        } else if tokens.count == 4, tokens[0].last == 0x2C, gmt(tokens[3]) {  // RFC 850
            let pieces = tokens[1].split(separator: 0x2D, omittingEmptySubsequences: false).map(Array.init)
            guard pieces.count == 3, pieces[0].count == 2, pieces[2].count == 2, let short = number(pieces[2]) else { return nil }
            day = number(pieces[0]); month = monthNumber(pieces[1])
            // RFC 9110: a two-digit year more than 50 years in the future is the past century's.
            year = short >= 70 ? 1900 + short : 2000 + short
            clock = tokens[2]
        } else if tokens.count == 5, tokens[0].last != 0x2C {  // asctime
            guard (1...2).contains(tokens[2].count), tokens[4].count == 4 else { return nil }
            month = monthNumber(tokens[1]); day = number(tokens[2]); clock = tokens[3]; year = number(tokens[4])
        } else {
            return nil
        }
        guard let day, let month, let year, year >= 1900, (1...CivilTime.daysIn(month: month, year: year)).contains(day),
              clock.count == 8, clock[2] == 0x3A, clock[5] == 0x3A,
              let hour = number(clock[0..<2]), let minute = number(clock[3..<5]), let second = number(clock[6..<8]),
              hour < 24, minute < 60, second < 61 else { return nil }
        // A leap second (":60", RFC 9110's 00–60) is the last second of the day it names, as a
        // manifest Timestamp reads it: never the next day's first.
        return CivilTime(year: year, month: month, day: day, hour: hour, minute: minute, second: min(second, 59)).secondsAsUTC
    }

    private static func gmt(_ token: [UInt8]) -> Bool { token == [0x47, 0x4D, 0x54] }  // "GMT", case-sensitive (RFC 9110)

    private static func number(_ digits: some Collection<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 4 else { return nil }
        var value = 0
        for digit in digits {
            guard (0x30...0x39).contains(digit) else { return nil }
            value = value * 10 + Int(digit - 0x30)
        }
        return value
    }

    /// One of the seven day names, in any case: its three letters, or with `long` the whole word.
    private static func dayName(_ name: ArraySlice<UInt8>, long: Bool) -> Bool {
        let lower = name.map { $0 | 0x20 }
        return days.contains { long ? $0 == lower : $0.prefix(3).elementsEqual(lower) }
    }

    private static func monthNumber(_ name: [UInt8]) -> Int? {
        guard name.count == 3 else { return nil }
        let lower = name.map { $0 | 0x20 }
        return months.firstIndex(of: lower).map { $0 + 1 }
    }
}
