import FuzzCheck
import PrefetchCore

/// The manifest's value parsers (Values/): durations, sizes, rates, windows, days,
/// timestamps, paths, feed names and URLs. The first byte picks the parser, the rest is
/// the text. Each accepted value must print back to text that parses to the same value;
/// each error's offset must lie inside the text; a path accepted must be safe to join
/// under the feed's folder, checked against the rule written out here.
public func fuzzValues(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let selector = input.first else { return 0 }
    let text = String(decoding: input.dropFirst(), as: UTF8.self)
    switch selector % 10 {
    case 0: span(text, signed: false)
    case 1: span(text, signed: true)
    case 2: byteSize(text)
    case 3: rate(text, per: selector & 0x80 == 0 ? "s" : "day")
    case 4: window(text)
    case 5: weekday(text)
    case 6: timestamp(text)
    case 7: relativePath(text)
    case 8: feedName(text)
    default: url(text)
    }
    return 0
}

/// An error's offset points at a character of the text, or just past its end.
func inside(_ error: ValueError, _ text: String, _ what: String) {
    require(error.offset >= 0 && error.offset <= text.count,
            "\(what) error offset \(error.offset) outside the \(text.count) characters of \(text.debugDescription): \(error.message)")
    require(!error.message.isEmpty, "\(what) error without a message for \(text.debugDescription)")
}

func span(_ text: String, signed: Bool) {
    do {
        let value = try TimeSpan.parse(text, signed: signed)
        require(signed || value.seconds >= 0, "unsigned duration \(text.debugDescription) parsed negative: \(value.seconds)")
        require(value.seconds.magnitude <= 100 * 365 * 86_400, "duration \(text.debugDescription) over the 100-year bound: \(value.seconds)")
        let printed = value.description
        let again = try? TimeSpan.parse(printed, signed: true)
        require(again == value, "duration \(text.debugDescription) = \(value.seconds)s prints as \(printed), which parses to \(String(describing: again))")
        if !signed { require((try? TimeSpan.parse(printed)) == value, "unsigned duration's print \(printed) does not parse unsigned") }
    } catch {
        inside(error, text, "duration")
    }
}

func byteSize(_ text: String) {
    do {
        let value = try ByteSize.parse(text)
        let again = try? ByteSize.parse("\(value.bytes)")
        require(again == value, "size \(text.debugDescription) = \(value.bytes) bytes does not parse back from \(value.bytes)")
        // Two different sizes are never shown alike (`1GiB < 1GiB` says nothing).
        let other = value.bytes == 0 ? 1 : value.bytes - 1
        let (a, b) = ByteSize.formatApart(value.bytes, other)
        require(a != b, "sizes \(value.bytes) and \(other) both shown as \(a)")
        require(!ByteSize.format(value.bytes).isEmpty, "size \(value.bytes) formats empty")
    } catch {
        inside(error, text, "size")
    }
}

func rate(_ text: String, per period: String) {
    do {
        let value = try ByteRate.parse(text, per: period)
        require(value.bytes > 0, "rate \(text.debugDescription) accepted as 0")
        require((try? ByteRate.parse("\(value.bytes)/\(period)", per: period)) == value, "rate \(text.debugDescription) does not parse back")
    } catch {
        inside(error, text, "rate")
    }
}

func window(_ text: String) {
    do {
        let value = try TimeWindow.parse(text)
        require((0..<1440).contains(value.start) && (0...1440).contains(value.end),
                "window \(text.debugDescription) has minutes \(value.start)-\(value.end)")
        require((1...1440).contains(value.lengthMinutes), "window \(text.debugDescription) is \(value.lengthMinutes) minutes long")
        require((try? TimeWindow.parse(value.description)) == value, "window \(text.debugDescription) prints as \(value.description), which does not parse to it")
    } catch {
        inside(error, text, "window")
    }
}

func weekday(_ text: String) {
    do {
        let day = try Weekday.parse(text)
        require((try? Weekday.parse(day.name)) == day, "day \(text.debugDescription) prints as \(day.name), which does not parse to it")
    } catch {
        inside(error, text, "day")
    }
}

func timestamp(_ text: String) {
    do {
        switch try Timestamp.parse(text) {
        case .localDate(let date):
            require((1...12).contains(date.month) && (1...CivilTime.daysIn(month: date.month, year: date.year)).contains(date.day),
                    "date \(text.debugDescription) read as \(date)")
            let printed = String(format: "%04d-%02d-%02d", date.year, date.month, date.day)
            require(printed == text, "date \(text.debugDescription) read as \(printed)")
        case .instant(let instant):
            // Int64 nanoseconds hold 1677-09-21 … 2262-04-11; past them an instant saturates.
            guard instant.nanoseconds > Int64.min + 2 * 86_400 * Instant.perSecond,
                  instant.nanoseconds < Int64.max - 2 * 86_400 * Instant.perSecond else { return }
            let printed = TimeFormat.rfc3339(instant, clock: ZoneClock(.gmt))
            guard case .instant(let again)? = try? Timestamp.parse(printed) else {
                require(false, "time \(text.debugDescription) prints as \(printed), which does not parse")
                return
            }
            require(again.seconds == instant.seconds, "time \(text.debugDescription) = \(instant.seconds)s prints as \(printed) = \(again.seconds)s")
        }
    } catch {
        inside(error, text, "timestamp")
    }
}

/// The rule a path under `CACHE/<feed>/` must keep, written out on its own: relative, no
/// empty, `.` or `..` segment, no control character, within the length limits, not
/// prefetch's own `.prefetch` names.
func relativePath(_ text: String) {
    guard let problem = RelativePath.problem(text) else {
        let bytes = Array(text.utf8)
        require(!bytes.isEmpty && bytes.count <= 4000, "path of \(bytes.count) bytes accepted")
        require(bytes.first != UInt8(ascii: "/"), "absolute path \(text.debugDescription) accepted")
        require(!text.hasPrefix(".prefetch"), "path \(text.debugDescription) in prefetch's own names accepted")
        for segment in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            require(!segment.isEmpty && segment.count <= 255, "path \(text.debugDescription) with a segment of \(segment.count) bytes accepted")
            require(Array(segment) != [0x2E] && Array(segment) != [0x2E, 0x2E], "path \(text.debugDescription) with a dot segment accepted")
        }
        for scalar in text.unicodeScalars {
            require(scalar.value >= 0x20 && scalar.value != 0x7F && !(0x80..<0xA0).contains(scalar.value),
                    "path \(text.debugDescription) with control character U+\(String(scalar.value, radix: 16)) accepted")
        }
        return
    }
    inside(problem, text, "path")
}

func feedName(_ text: String) {
    guard let problem = FeedName.problem(text) else {
        let bytes = Array(text.utf8)
        require((1...64).contains(bytes.count), "feed name of \(bytes.count) bytes accepted")
        for (index, byte) in bytes.enumerated() {
            let lowerOrDigit = (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            require(lowerOrDigit || (index > 0 && (byte == 0x2E || byte == 0x5F || byte == 0x2D)),
                    "feed name \(text.debugDescription) accepted")
        }
        return
    }
    inside(problem, text, "feed name")
}

func url(_ text: String) {
    do {
        let url = try ResourceURL.parse(text)
        require(url.scheme == "http" || url.scheme == "https", "URL \(text.debugDescription) has scheme \(url.scheme)")
        require((1...65535).contains(url.port), "URL \(text.debugDescription) has port \(url.port)")
        require(!url.host.isEmpty, "URL \(text.debugDescription) has no host")
        require(url.path.utf8.first == UInt8(ascii: "/"), "URL \(text.debugDescription) has path \(url.path.debugDescription)")
        // The default cache path: what follows the path's last '/' byte, never a '/' of the path.
        if let segment = try? url.lastSegment() {
            let raw = url.path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last.map { Array($0) } ?? []
            require(!raw.isEmpty && segment.utf8.count <= raw.count, "URL \(text.debugDescription) has the last segment \(segment.debugDescription)")
            require(!raw.contains(UInt8(ascii: "%")) ? Array(segment.utf8) == raw : true, "URL \(text.debugDescription) has the last segment \(segment.debugDescription)")
        } else {
            // On bytes: "%" followed by a combining mark is no Character "%" (fuzz-values, 30-minute run).
            require(url.path.utf8.last == UInt8(ascii: "/") || url.path.utf8.contains(UInt8(ascii: "%")), "URL \(text.debugDescription) without a last segment")
        }
        require(url.text == text, "URL \(text.debugDescription) kept as \(url.text.debugDescription)")
        for byte in text.utf8 { require(byte > 0x20 && byte != 0x7F, "URL \(text.debugDescription) with a control byte or space accepted") }
        // A query is never shown (signed URLs carry tokens there); a '?' in the fragment is no query.
        require(url.query == nil || url.redacted.hasSuffix("?…"), "URL \(text.debugDescription) shown with its query: \(url.redacted)")
    } catch {
        inside(error, text, "URL")
    }
}
