import Testing
@testable import PrefetchCore

/// Cron expressions (SPEC §1 "Cron", §5 "Value syntax"): exact bitsets, flags and errors.
@Suite struct CronExpressionTests {
    static func bits(_ values: [Int]) -> UInt64 {
        values.reduce(0) { $0 | (UInt64(1) << UInt64($1)) }
    }

    static let allMinutes = Array(0...59)
    static let allHours = Array(0...23)
    static let allDays = Array(1...31)
    static let allMonths = Array(1...12)
    static let allWeekdays = Array(0...6)

    struct Valid: CustomTestStringConvertible, Sendable {
        let text: String
        var minutes: [Int] = [0]
        var hours: [Int] = [0]
        var daysOfMonth: [Int] = allDays
        var months: [Int] = allMonths
        var daysOfWeek: [Int] = allWeekdays
        var dayOfMonthRestricted = false
        var dayOfWeekRestricted = false
        var isPeriodic = false
        var testDescription: String { text }
    }

    static let valid: [Valid] = [
        Valid(text: "30 2 * * *", minutes: [30], hours: [2]),
        Valid(text: "*/15 * * * *", minutes: [0, 15, 30, 45], hours: allHours, isPeriodic: true),
        Valid(text: "* * * * *", minutes: allMinutes, hours: allHours, isPeriodic: true),
        Valid(text: "0 * * * *", minutes: [0], hours: allHours, isPeriodic: true),
        Valid(text: "0 9-17/2 * * mon-fri", minutes: [0], hours: [9, 11, 13, 15, 17],
              daysOfWeek: [1, 2, 3, 4, 5], dayOfWeekRestricted: true),
        Valid(text: "0 0 1,15 * *", daysOfMonth: [1, 15], dayOfMonthRestricted: true),
        Valid(text: "0 0 * * 7", daysOfWeek: [0], dayOfWeekRestricted: true),
        Valid(text: "0 0 * * 0", daysOfWeek: [0], dayOfWeekRestricted: true),
        Valid(text: "0 0 * * 5-7", daysOfWeek: [0, 5, 6], dayOfWeekRestricted: true),
        Valid(text: "0 0 * * 0-7", daysOfWeek: allWeekdays, dayOfWeekRestricted: true),
        Valid(text: "0 0 * * 1-5,7", daysOfWeek: [0, 1, 2, 3, 4, 5], dayOfWeekRestricted: true),
        Valid(text: "0 0 * * */2", daysOfWeek: [0, 2, 4, 6]),
        // `a/n` in the day-of-week field runs to 7, the field's top in cronie and Vixie cron
        // (7 is Sunday): `1/2` is Mon, Wed, Fri and Sun, `2/5` Tue and Sun.
        Valid(text: "0 0 * * 1/2", daysOfWeek: [0, 1, 3, 5], dayOfWeekRestricted: true),
        Valid(text: "0 0 * * 2/5", daysOfWeek: [0, 2], dayOfWeekRestricted: true),
        Valid(text: "0 0 * * */7", daysOfWeek: [0]),
        Valid(text: "0 0 * jan,jul sun", months: [1, 7], daysOfWeek: [0], dayOfWeekRestricted: true),
        Valid(text: "0 0 * JAN-Mar SAT", months: [1, 2, 3], daysOfWeek: [6], dayOfWeekRestricted: true),
        Valid(text: "0 0 * */3 *", months: [1, 4, 7, 10]),
        Valid(text: "5/10 * * * *", minutes: [5, 15, 25, 35, 45, 55], hours: allHours, isPeriodic: true),
        Valid(text: "5/10 3 * * *", minutes: [5, 15, 25, 35, 45, 55], hours: [3]),
        Valid(text: "0-59/20 0-23/12 * * *", minutes: [0, 20, 40], hours: [0, 12]),
        Valid(text: "1-3,10,50-52 4 * * *", minutes: [1, 2, 3, 10, 50, 51, 52], hours: [4]),
        Valid(text: "0 0 */2 * 1", daysOfMonth: Array(stride(from: 1, through: 31, by: 2)),
              daysOfWeek: [1], dayOfMonthRestricted: false, dayOfWeekRestricted: true),
        Valid(text: "0 0 1 * 1", daysOfMonth: [1], daysOfWeek: [1],
              dayOfMonthRestricted: true, dayOfWeekRestricted: true),
        Valid(text: "0 0 29 2 *", daysOfMonth: [29], months: [2], dayOfMonthRestricted: true),
        Valid(text: "0 0 31 2,3 *", daysOfMonth: [31], months: [2, 3], dayOfMonthRestricted: true),
        Valid(text: "0 0 30 2 1", daysOfMonth: [30], months: [2], daysOfWeek: [1],
              dayOfMonthRestricted: true, dayOfWeekRestricted: true),
        Valid(text: "  30\t2  * * *  ", minutes: [30], hours: [2]),
        Valid(text: "@hourly", minutes: [0], hours: allHours, isPeriodic: true),
        Valid(text: "@daily"),
        Valid(text: "@midnight"),
        Valid(text: "@DAILY"),
        Valid(text: "@weekly", daysOfWeek: [0], dayOfWeekRestricted: true),
        Valid(text: "@monthly", daysOfMonth: [1], dayOfMonthRestricted: true),
        Valid(text: "@yearly", daysOfMonth: [1], months: [1], dayOfMonthRestricted: true),
        Valid(text: "@annually", daysOfMonth: [1], months: [1], dayOfMonthRestricted: true),
    ]

    @Test(arguments: valid)
    func parsesValid(_ c: Valid) throws {
        let cron = try CronExpression.parse(c.text)
        #expect(cron.minutes == Self.bits(c.minutes))
        #expect(UInt64(cron.hours) == Self.bits(c.hours))
        #expect(UInt64(cron.daysOfMonth) == Self.bits(c.daysOfMonth))
        #expect(UInt64(cron.months) == Self.bits(c.months))
        #expect(UInt64(cron.daysOfWeek) == Self.bits(c.daysOfWeek))
        #expect(cron.dayOfMonthRestricted == c.dayOfMonthRestricted)
        #expect(cron.dayOfWeekRestricted == c.dayOfWeekRestricted)
        #expect(cron.isPeriodic == c.isPeriodic)
        #expect(cron.source == c.text)
        #expect(cron.description == c.text)
    }

    @Test func sundayAsSevenEqualsSundayAsZero() throws {
        #expect(try CronExpression.parse("0 0 * * 7").daysOfWeek == CronExpression.parse("0 0 * * 0").daysOfWeek)
        #expect(try CronExpression.parse("0 0 * * 7").daysOfWeek == 0b000_0001)
    }

    @Test(arguments: [("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"), ("@hourly", "0 * * * *"),
                      ("@weekly", "0 0 * * 0"), ("@monthly", "0 0 1 * *"), ("@yearly", "0 0 1 1 *"),
                      ("@annually", "0 0 1 1 *")])
    func macroMatchesItsExpansion(_ macro: String, _ expansion: String) throws {
        var expanded = try CronExpression.parse(expansion)
        expanded.source = macro
        #expect(try CronExpression.parse(macro) == expanded)
    }

    typealias Invalid = InvalidValue

    static let invalid: [Invalid] = [
        Invalid(text: "61 * * * *", offset: 0, phrase: "61 is out of range for the minute field (0–59)"),
        Invalid(text: "60 * * * *", offset: 0, phrase: "out of range"),
        Invalid(text: "0 24 * * *", offset: 2, phrase: "24 is out of range for the hour field (0–23)"),
        Invalid(text: "0 0 0 * *", offset: 4, phrase: "out of range for the day-of-month field"),
        Invalid(text: "0 0 32 * *", offset: 4, phrase: "out of range for the day-of-month field"),
        Invalid(text: "0 0 * 13 *", offset: 6, phrase: "out of range for the month field"),
        Invalid(text: "0 0 * * 8", offset: 8, phrase: "8 is out of range for the day-of-week field (0–7)"),
        Invalid(text: "0 0 1,2,40 * *", offset: 8, phrase: "40 is out of range"),
        Invalid(text: "  61 * * * *", offset: 2, phrase: "out of range"),
        Invalid(text: "* * * *", offset: 7, phrase: "5 fields"),
        Invalid(text: "* * * * * *", offset: 10, phrase: "found 6"),
        Invalid(text: "0 0 * * * extra words", offset: 10, phrase: "found 7"),
        Invalid(text: "", offset: 0, phrase: "found 0"),
        Invalid(text: "0 0 30 2 *", offset: 4, phrase: "never fires"),
        Invalid(text: "0 0 31 4,6,9,11 *", offset: 4, phrase: "never fires"),
        Invalid(text: "0 0 30 feb */2", offset: 4, phrase: "never fires"),
        Invalid(text: "0 0 * foo *", offset: 6, phrase: "'foo' is not valid in the month field"),
        Invalid(text: "0 0 * * sunday", offset: 8, phrase: "'sunday' is not valid in the day-of-week field"),
        Invalid(text: "x * * * *", offset: 0, phrase: "expected a number"),
        Invalid(text: "*/0 * * * *", offset: 2, phrase: "step"),
        Invalid(text: "0 */x * * *", offset: 4, phrase: "step"),
        Invalid(text: "*/ * * * *", offset: 2, phrase: "step"),
        Invalid(text: "*/+5 * * * *", offset: 2, phrase: "step"),
        Invalid(text: "0 0 * * +1", offset: 8, phrase: "'+1' is not valid in the day-of-week field"),
        Invalid(text: "5-1 * * * *", offset: 0, phrase: "backwards"),
        Invalid(text: "0 0 * * fri-mon", offset: 8, phrase: "backwards"),
        Invalid(text: "0 0 * * mon-", offset: 12, phrase: "missing value"),
        Invalid(text: "-5 * * * *", offset: 0, phrase: "missing value"),
        Invalid(text: "@reboot", offset: 0, phrase: "@reboot is not supported"),
        Invalid(text: "@often", offset: 0, phrase: "unknown macro '@often'"),
        Invalid(text: "1,,2 * * * *", offset: 2, phrase: "empty item in the minute field"),
        Invalid(text: "0 0 1, * *", offset: 6, phrase: "empty item in the day-of-month field"),
        Invalid(text: "0 ,1 * * *", offset: 2, phrase: "empty item in the hour field"),
    ]

    @Test(arguments: invalid)
    func rejectsInvalid(_ c: Invalid) {
        expectValueError(at: c.offset, containing: c.phrase) { try CronExpression.parse(c.text) }
    }

    @Test func fieldCountMessageNamesTheFields() throws {
        let error = try #require(throws: ValueError.self) { try CronExpression.parse("* * * *") }
        #expect(error.message == "a cron expression has 5 fields (minute hour day-of-month month day-of-week); found 4")
    }
}
