import CivilDate
import Foundation

/// The N1QL date functions (spec 9.1's list) as LiteCore runs them: dates are ISO-8601 strings
/// or milliseconds since 1970; a string without a time zone is local time; output strings are
/// `YYYY-MM-DDThh:mm:ss[.mmm]` followed by `Z` (UTC) or `±hh:mm`; an optional format argument
/// (an example date string) picks which parts to print. Bad input gives null, MISSING gives MISSING.
enum N1QLDateFunctions {
    typealias Function = N1QLFunctionTable.Function

    static func add(to t: inout [String: Function]) {
        t["millis_to_str"] = Function { a in
            guard let m = millis(a[0]) else { return passThrough(a) }
            return .string(format(m, offsetMinutes: localOffsetMinutes(atMillis: m), as: formatArg(a, 1)))
        }
        t["millis_to_utc"] = Function { a in
            guard let m = millis(a[0]) else { return passThrough(a) }
            return .string(format(m, offsetMinutes: 0, as: formatArg(a, 1)))
        }
        t["millis_to_tz"] = Function { a in
            guard let m = millis(a[0]), let tz = a[1].number, tz.isFinite else { return passThrough(a) }
            return .string(format(m, offsetMinutes: Int(tz), as: formatArg(a, 2)))
        }
        t["str_to_millis"] = Function { a in
            guard let d = parsed(a[0]) else { return passThrough(a) }
            return .int(d.millis)
        }
        t["str_to_utc"] = Function { a in
            guard let d = parsed(a[0]) else { return passThrough(a) }
            return .string(format(d.millis, offsetMinutes: 0, as: formatArg(a, 1)))
        }
        t["str_to_tz"] = Function { a in
            guard let d = parsed(a[0]), let tz = a[1].number, tz.isFinite else { return passThrough(a) }
            return .string(format(d.millis, offsetMinutes: Int(tz), as: formatArg(a, 2)))
        }
        t["date_diff_millis"] = Function { a in
            guard let m1 = millis(a[0]), let m2 = millis(a[1]), let part = component(a[2]) else { return passThrough(a) }
            return .int(difference(WallTime(millis: m1, offsetMinutes: 0), WallTime(millis: m2, offsetMinutes: 0), part))
        }
        t["date_diff_str"] = Function { a in
            guard let d1 = parsed(a[0]), let d2 = parsed(a[1]), let part = component(a[2]) else { return passThrough(a) }
            return .int(difference(d1.wall, d2.wall, part))
        }
        t["date_add_millis"] = Function { a in
            guard let m = millis(a[0]), let n = integer(a[1]), let part = component(a[2]) else { return passThrough(a) }
            return .int(adding(n, part, to: m))
        }
        t["date_add_str"] = Function { a in
            guard let d = parsed(a[0]), let n = integer(a[1]), let part = component(a[2]) else { return passThrough(a) }
            let result = adding(n, part, to: d.millis)
            let offset = d.offsetMinutes ?? localOffsetMinutes(atMillis: result)
            return .string(format(result, offsetMinutes: offset, as: formatArg(a, 3) ?? d.shape))
        }
    }

    // MARK: Arguments

    private static func passThrough(_ a: [QueryValue]) -> QueryValue {
        a.contains(where: \.isMissing) ? .missing : .null
    }

    private static func millis(_ v: QueryValue) -> Int64? {
        switch v {
        case .int(let i): return i
        case .double(let d) where d.isFinite && abs(d) < 9.0e15: return Int64(d)
        default: return nil
        }
    }

    private static func integer(_ v: QueryValue) -> Int64? {
        guard let d = v.number, d.isFinite, abs(d) < 9.0e15, d == d.rounded() else { return nil }
        return Int64(d)
    }

    private static func parsed(_ v: QueryValue) -> ParsedDate? {
        guard case .string(let s) = v else { return nil }
        return ParsedDate(s)
    }

    private static func formatArg(_ a: [QueryValue], _ i: Int) -> Shape? {
        guard i < a.count, case .string(let s) = a[i] else { return nil }
        return Shape(example: s)
    }

    // MARK: Components

    enum Component: Sendable {
        case millisecond, second, minute, hour, day, week, month, quarter, year, decade, century, millennium
    }

    private static func component(_ v: QueryValue) -> Component? {
        guard case .string(let s) = v else { return nil }
        switch s.lowercased() {
        case "millisecond", "milliseconds": return .millisecond
        case "second", "seconds": return .second
        case "minute", "minutes": return .minute
        case "hour", "hours": return .hour
        case "day", "days": return .day
        case "week", "weeks": return .week
        case "month", "months": return .month
        case "quarter", "quarters": return .quarter
        case "year", "years": return .year
        case "decade", "decades": return .decade
        case "century", "centuries": return .century
        case "millennium", "millenniums", "millennia": return .millennium
        default: return nil
        }
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, no Foundation calendar per row)

    /// Days since 1970-01-01 of a civil date (month and day may overflow, as `sys_days` allows).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        CivilDate.days(year: year, month: month, day: day)
    }

    /// A moment seen as the wall-clock fields of some time zone.
    struct WallTime {
        var year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, millisecond: Int64

        init(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, millisecond: Int64) {
            (self.year, self.month, self.day, self.hour, self.minute, self.second, self.millisecond) =
                (year, month, day, hour, minute, second, millisecond)
        }

        init(millis: Int64, offsetMinutes: Int) {
            let local = millis + Int64(offsetMinutes) * 60_000
            let dayCount = local >= 0 ? local / 86_400_000 : (local - 86_399_999) / 86_400_000
            var rest = local - dayCount * 86_400_000
            let c = CivilDate.date(days: dayCount)
            (year, month, day) = (c.year, c.month, c.day)
            hour = rest / 3_600_000; rest %= 3_600_000
            minute = rest / 60_000; rest %= 60_000
            second = rest / 1000
            millisecond = rest % 1000
        }

        /// Milliseconds since 1970 of these fields read as UTC.
        var millisAsUTC: Int64 {
            N1QLDateFunctions.days(year: year, month: month, day: day) * 86_400_000
                + hour * 3_600_000 + minute * 60_000 + second * 1000 + millisecond
        }

        var dayOfYear: Int64 { N1QLDateFunctions.days(year: year, month: month, day: day) - N1QLDateFunctions.days(year: year, month: 1, day: 1) + 1 }
        var quarter: Int64 { (month + 2) / 3 }
    }

    /// The local time zone's offset at a moment, in minutes.
    static func localOffsetMinutes(atMillis m: Int64) -> Int {
        TimeZone.current.secondsFromGMT(for: Date(timeIntervalSince1970: Double(m) / 1000)) / 60
    }

    private static func leapYears(upTo year: Int64) -> Int64 {
        let y = year > 0 ? year - 1 : year + 1
        return y / 4 - y / 100 + y / 400
    }

    /// LiteCore's (and Couchbase Server's) date_diff: the difference in the given component's
    /// field, so diff(2018-01-01, 2017-12-31, year) is 1; sign negative when the first is earlier.
    static func difference(_ a: WallTime, _ b: WallTime, _ part: Component) -> Int64 {
        var (l, r, sign) = (a, b, Int64(1))
        if l.millisAsUTC < r.millisAsUTC { (l, r, sign) = (b, a, -1) }
        let dYear = l.year - r.year
        let dDoy = l.dayOfYear - r.dayOfYear
        func days() -> Int64 { dYear * 365 + dDoy + (dYear != 0 ? leapYears(upTo: l.year) - leapYears(upTo: r.year) : 0) }
        func hours() -> Int64 { days() * 24 + (l.hour - r.hour) }
        func minutes() -> Int64 { hours() * 60 + (l.minute - r.minute) }
        func seconds() -> Int64 { minutes() * 60 + (l.second - r.second) }
        let value: Int64
        switch part {
        case .millisecond: value = seconds() * 1000 + (l.millisecond - r.millisecond)
        case .second: value = seconds()
        case .minute: value = minutes()
        case .hour: value = hours()
        case .day: value = days()
        case .week: value = days() / 7
        case .month: value = (l.year * 12 + l.month) - (r.year * 12 + r.month)
        case .quarter: value = (l.year * 4 + l.quarter) - (r.year * 4 + r.quarter)
        case .year: value = dYear
        case .decade: value = dYear / 10
        case .century: value = dYear / 100
        case .millennium: value = dYear / 1000
        }
        return value * sign
    }

    /// `n` of `part` added in UTC: fixed-length parts add time, calendar parts move the date
    /// (an overflowing day rolls into the next month, as LiteCore's `sys_days` does).
    static func adding(_ n: Int64, _ part: Component, to millis: Int64) -> Int64 {
        let fixed: Int64?
        switch part {
        case .millisecond: fixed = 1
        case .second: fixed = 1000
        case .minute: fixed = 60_000
        case .hour: fixed = 3_600_000
        case .day: fixed = 86_400_000
        case .week: fixed = 604_800_000
        default: fixed = nil
        }
        if let fixed { return millis &+ n &* fixed }
        var w = WallTime(millis: millis, offsetMinutes: 0)
        let months: Int64
        switch part {
        case .month: months = n
        case .quarter: months = n * 3
        case .year: months = n * 12
        case .decade: months = n * 120
        case .century: months = n * 1200
        default: months = n * 12_000
        }
        w.month += months
        return w.millisAsUTC
    }

    // MARK: Parsing and formatting

    /// Which parts of a date string an example shows (the optional format argument).
    struct Shape: Sendable {
        var date = true, time = true, fraction = false, zone = true

        init(date: Bool = true, time: Bool = true, fraction: Bool = false, zone: Bool = true) {
            (self.date, self.time, self.fraction, self.zone) = (date, time, fraction, zone)
        }

        init?(example: String) {
            if let d = ParsedDate(example, requireDate: false) { self = d.shape } else { return nil }
        }
    }

    struct ParsedDate {
        var wall: WallTime
        var offsetMinutes: Int?
        var shape: Shape
        /// The moment (a string without a zone is local time).
        var millis: Int64 {
            let asUTC = wall.millisAsUTC
            if let offsetMinutes { return asUTC - Int64(offsetMinutes) * 60_000 }
            let guess = localOffsetMinutes(atMillis: asUTC)
            return asUTC - Int64(localOffsetMinutes(atMillis: asUTC - Int64(guess) * 60_000)) * 60_000
        }

        /// `YYYY-MM-DD[(T| )hh:mm[:ss[.fff]]][Z|±hh[:mm]]`; with `requireDate: false` also a
        /// bare time (only used to read a format example).
        init?(_ text: String, requireDate: Bool = true) {
            let c = Array(text.utf8)
            var i = 0
            func digits(_ n: Int) -> Int64? {
                guard i + n <= c.count else { return nil }
                var v: Int64 = 0
                for k in 0..<n {
                    let ch = c[i + k]
                    guard ch >= 48, ch <= 57 else { return nil }
                    v = v * 10 + Int64(ch - 48)
                }
                i += n
                return v
            }
            func eat(_ ch: UInt8) -> Bool {
                if i < c.count, c[i] == ch { i += 1; return true }
                return false
            }
            var shape = Shape(date: false, time: false, fraction: false, zone: false)
            var w = WallTime(year: 1970, month: 1, day: 1, hour: 0, minute: 0, second: 0, millisecond: 0)
            let isTimeOnly = c.count >= 3 && c[2] == UInt8(ascii: ":")
            if !isTimeOnly {
                let negative = eat(UInt8(ascii: "-"))
                guard let y = digits(4), eat(UInt8(ascii: "-")), let mo = digits(2), eat(UInt8(ascii: "-")),
                      let d = digits(2), (1...12).contains(mo), (1...31).contains(d) else { return nil }
                w.year = negative ? -y : y
                w.month = mo
                w.day = d
                guard d <= N1QLDateFunctions.days(year: w.year, month: mo + 1, day: 1) - N1QLDateFunctions.days(year: w.year, month: mo, day: 1) else { return nil }
                shape.date = true
                if i < c.count { guard eat(UInt8(ascii: "T")) || eat(UInt8(ascii: " ")) else { return nil } }
            } else if requireDate {
                return nil
            }
            if i < c.count {
                guard let h = digits(2), eat(UInt8(ascii: ":")), let mi = digits(2), h < 24, mi < 60 else { return nil }
                w.hour = h
                w.minute = mi
                shape.time = true
                if eat(UInt8(ascii: ":")) {
                    guard let s = digits(2), s < 61 else { return nil }
                    w.second = min(s, 59)
                    if eat(UInt8(ascii: ".")) {
                        var scale: Int64 = 100, ms: Int64 = 0, any = false
                        while i < c.count, c[i] >= 48, c[i] <= 57 {
                            ms += Int64(c[i] - 48) * scale
                            scale /= 10
                            i += 1
                            any = true
                        }
                        guard any else { return nil }
                        w.millisecond = ms
                        shape.fraction = true
                    }
                }
            }
            var offset: Int?
            if eat(UInt8(ascii: "Z")) || eat(UInt8(ascii: "z")) {
                offset = 0
            } else if i < c.count, c[i] == UInt8(ascii: "+") || c[i] == UInt8(ascii: "-") {
                let sign = c[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let h = digits(2) else { return nil }
                _ = eat(UInt8(ascii: ":"))
                let m = digits(2) ?? 0
                guard h < 24, m < 60 else { return nil }
                offset = sign * Int(h * 60 + m)
            }
            guard i == c.count else { return nil }
            shape.zone = offset != nil
            self.wall = w
            self.offsetMinutes = offset
            self.shape = shape
        }
    }

    /// The moment `millis` written in the zone `offsetMinutes` east of UTC.
    static func format(_ millis: Int64, offsetMinutes: Int, as shape: Shape? = nil) -> String {
        let w = WallTime(millis: millis, offsetMinutes: offsetMinutes)
        func pad(_ v: Int64, _ n: Int) -> String {
            let s = String(abs(v))
            return (v < 0 ? "-" : "") + String(repeating: "0", count: max(0, n - s.count)) + s
        }
        var out = ""
        let s = shape ?? Shape(fraction: w.millisecond != 0)
        if s.date { out += "\(pad(w.year, 4))-\(pad(w.month, 2))-\(pad(w.day, 2))" }
        if s.time {
            if s.date { out += "T" }
            out += "\(pad(w.hour, 2)):\(pad(w.minute, 2)):\(pad(w.second, 2))"
            if s.fraction { out += "." + pad(w.millisecond, 3) }
        }
        if s.zone, s.time || !s.date {
            if offsetMinutes == 0 {
                out += "Z"
            } else {
                let a = abs(offsetMinutes)
                out += (offsetMinutes < 0 ? "-" : "+") + pad(Int64(a / 60), 2) + ":" + pad(Int64(a % 60), 2)
            }
        }
        return out
    }
}
