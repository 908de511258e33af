import Testing
@testable import PrefetchCore

/// Daily windows `HH:MM-HH:MM` (SPEC §1 "Windows") and day names for `days`.
@Suite struct TimeWindowTests {
    struct Valid: CustomTestStringConvertible, Sendable {
        let text: String
        let start: Int
        let end: Int
        let length: Int
        var wraps = false
        var wholeDay = false
        var testDescription: String { text }
    }

    static let valid: [Valid] = [
        Valid(text: "01:00-05:00", start: 60, end: 300, length: 240),
        Valid(text: "22:00-02:00", start: 1_320, end: 120, length: 240, wraps: true),
        Valid(text: "23:59-00:00", start: 1_439, end: 0, length: 1, wraps: true),
        Valid(text: "00:00-00:00", start: 0, end: 0, length: 1_440, wholeDay: true),
        Valid(text: "06:00-06:00", start: 360, end: 360, length: 1_440, wholeDay: true),
        Valid(text: "00:00-24:00", start: 0, end: 1_440, length: 1_440, wholeDay: true),
        Valid(text: "22:00-24:00", start: 1_320, end: 1_440, length: 120),
        Valid(text: "00:00-00:01", start: 0, end: 1, length: 1),
        Valid(text: "09:30-17:45", start: 570, end: 1_065, length: 495),
        Valid(text: "12:00-11:59", start: 720, end: 719, length: 1_439, wraps: true),
    ]

    @Test(arguments: valid)
    func parsesValid(_ c: Valid) throws {
        let window = try TimeWindow.parse(c.text)
        #expect(window == TimeWindow(start: c.start, end: c.end))
        #expect(window.lengthMinutes == c.length)
        #expect(window.wrapsMidnight == c.wraps)
        #expect(window.isWholeDay == c.wholeDay)
        #expect(window.description == c.text)
    }

    typealias Invalid = InvalidValue

    static let invalid: [Invalid] = [
        Invalid(text: "24:00-01:00", offset: 0, phrase: "hour 24 is out of range (00–23)"),
        Invalid(text: "1:00-05:00", offset: 0, phrase: "HH:MM-HH:MM"),
        Invalid(text: "01:60-02:00", offset: 3, phrase: "minute 60 is out of range (00–59)"),
        Invalid(text: "01:00-25:00", offset: 6, phrase: "hour 25 is out of range"),
        Invalid(text: "01:00-24:01", offset: 6, phrase: "hour 24 is out of range"),
        Invalid(text: "01:00-02:99", offset: 9, phrase: "minute 99 is out of range"),
        Invalid(text: "01:00 05:00", offset: 0, phrase: "HH:MM-HH:MM"),
        Invalid(text: "01:00-05:00 ", offset: 0, phrase: "HH:MM-HH:MM"),
        Invalid(text: "", offset: 0, phrase: "HH:MM-HH:MM"),
        Invalid(text: "01.00-05:00", offset: 0, phrase: "HH:MM"),
        Invalid(text: "01:00-05.00", offset: 6, phrase: "HH:MM"),
        Invalid(text: "ab:00-05:00", offset: 0, phrase: "HH:MM"),
        // Two digits each, as the spec's form says: a sign is not a digit.
        Invalid(text: "+1:00-05:00", offset: 0, phrase: "HH:MM"),
        Invalid(text: "01:+5-05:00", offset: 0, phrase: "HH:MM"),
        Invalid(text: "01:00-+5:00", offset: 6, phrase: "HH:MM"),
    ]

    @Test(arguments: invalid)
    func rejectsInvalid(_ c: Invalid) {
        expectValueError(at: c.offset, containing: c.phrase) { try TimeWindow.parse(c.text) }
    }

    @Test(arguments: [(0, "00:00"), (61, "01:01"), (599, "09:59"), (1_439, "23:59"), (1_440, "24:00")])
    func clockSpelling(_ minutes: Int, _ text: String) {
        #expect(TimeWindow.clock(minutes) == text)
    }

    @Test(arguments: [("mon", Weekday.mon), ("Monday", .mon), ("SUN", .sun), ("sunday", .sun),
                      ("Tue", .tue), ("wednesday", .wed), ("THU", .thu), ("Friday", .fri), ("sat", .sat)])
    func parsesWeekday(_ text: String, _ day: Weekday) throws {
        #expect(try Weekday.parse(text) == day)
    }

    @Test(arguments: ["mo", "", "mond", "xyz", "1", " mon", "montag"])
    func rejectsWeekday(_ text: String) throws {
        let error = try #require(throws: ValueError.self) { try Weekday.parse(text) }
        #expect(error.message == "'\(text)' is not a day; use mon, tue, wed, thu, fri, sat or sun")
        #expect(error.offset == 0)
    }

    @Test func weekdaysAreNumberedAsCron() {
        #expect(Weekday.allCases.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
        #expect(Weekday.allCases.map(\.name) == ["sun", "mon", "tue", "wed", "thu", "fri", "sat"])
        #expect(Weekday.sun < Weekday.sat)
    }
}
