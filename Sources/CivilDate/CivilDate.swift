/// Proleptic Gregorian calendar arithmetic on day counts since 1970-01-01 (Howard Hinnant's
/// `days_from_civil` and `civil_from_days`): the one copy, shared by the 1.x date strings
/// (`ISO8601Date`) and the 2.x N1QL date functions. No Foundation calendar, no locale, no state.
package enum CivilDate {
    /// Days since 1970-01-01 of a civil date. The month and day may overflow (month 13 is next
    /// January, day 0 the last of the month before), as C++'s `sys_days` allows.
    package static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        // The month into 1...12 first (floor division, so month 0 is the year before's December).
        let monthIndex = month - 1
        let yearCarry = monthIndex >= 0 ? monthIndex / 12 : (monthIndex - 11) / 12
        let m = monthIndex - yearCarry * 12 + 1
        let y = year + yearCarry - (m <= 2 ? 1 : 0)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468 + (day - 1)
    }

    /// The civil date (month 1...12, day 1...31) of a day count since 1970-01-01.
    package static func date(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
