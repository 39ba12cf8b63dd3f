import CivilDate
import Foundation

/// The date strings 1.x stored for `NSDate` values (`+[CBLJSON JSONObjectWithDate:]`):
/// `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`, in UTC unless a time zone is given, so
/// `"2016-01-15T23:08:40.803Z"`. Written and read by hand: no formatter, no locale, thread-safe.
enum ISO8601Date {
    /// Formats `date` with milliseconds (truncated, as ICU does) and a `Z` or `±hh:mm` offset.
    static func string(from date: Date, secondsFromGMT offset: Int = 0) -> String {
        // Whole microseconds first, so a parsed ".803" stored as 40.80299999… prints as 803 again.
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        let millis = Int64((micros / 1000).rounded(.down)) + Int64(offset) * 1000
        let days = millis >= 0 ? millis / 86_400_000 : (millis - 86_399_999) / 86_400_000
        let msOfDay = Int(millis - days * 86_400_000)
        let civil = CivilDate.date(days: days)
        let (year, month, day) = (Int(civil.year), Int(civil.month), Int(civil.day))

        var out = [UInt8]()
        out.reserveCapacity(29)
        func put(_ value: Int, digits: Int) {
            var divisor = 1
            for _ in 1..<digits { divisor *= 10 }
            var v = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(v / divisor))
                v %= divisor
                divisor /= 10
            }
        }
        if year < 0 { out.append(UInt8(ascii: "-")) }
        put(abs(year), digits: 4)
        out.append(UInt8(ascii: "-")); put(month, digits: 2)
        out.append(UInt8(ascii: "-")); put(day, digits: 2)
        out.append(UInt8(ascii: "T")); put(msOfDay / 3_600_000, digits: 2)
        out.append(UInt8(ascii: ":")); put(msOfDay / 60_000 % 60, digits: 2)
        out.append(UInt8(ascii: ":")); put(msOfDay / 1000 % 60, digits: 2)
        out.append(UInt8(ascii: ".")); put(msOfDay % 1000, digits: 3)
        if offset == 0 {
            out.append(UInt8(ascii: "Z"))
        } else {
            out.append(UInt8(ascii: offset < 0 ? "-" : "+"))
            put(abs(offset) / 3600, digits: 2)
            out.append(UInt8(ascii: ":"))
            put(abs(offset) / 60 % 60, digits: 2)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses the ISO-8601 forms 1.x's `CBLParseISO8601Date` accepts: a date (`2016-01-15`),
    /// optionally followed by `T` (or a space) and `HH:mm`, `:ss`, `.fraction` (any number of
    /// digits) and a zone (`Z`, `±hh`, `±hhmm`, `±hh:mm`; none means UTC). Nil if not such a string.
    static func date(from string: String) -> Date? {
        var s = string
        return s.withUTF8 { parse($0) }
    }

    private static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Date? {
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in 0..<n {
                let c = b[i + k]
                guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
                v = v * 10 + Int(c - UInt8(ascii: "0"))
            }
            i += n
            return v
        }
        func take(_ c: Character) -> Bool {
            if i < b.count, b[i] == c.asciiValue! { i += 1; return true }
            return false
        }
        var negativeYear = false
        if take("-") { negativeYear = true } else { _ = take("+") }
        guard var year = digits(4), take("-"), let month = digits(2), take("-"), let day = digits(2),
              (1...12).contains(month), (1...31).contains(day) else { return nil }
        if negativeYear { year = -year }
        var seconds = 0.0
        var offset = 0
        if i < b.count, b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") || b[i] == UInt8(ascii: " ") {
            i += 1
            guard let hour = digits(2), take(":"), let minute = digits(2), hour <= 24, minute <= 59 else { return nil }
            seconds = Double(hour * 3600 + minute * 60)
            if take(":") {
                guard let sec = digits(2), sec <= 60 else { return nil }
                seconds += Double(sec)
                if take(".") || take(",") {
                    var scale = 0.1
                    var any = false
                    while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") {
                        seconds += Double(b[i] - UInt8(ascii: "0")) * scale
                        scale /= 10
                        i += 1
                        any = true
                    }
                    guard any else { return nil }
                }
            }
            if take("Z") || take("z") {
                // UTC
            } else if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
                let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let hh = digits(2) else { return nil }
                var mm = 0
                if take(":") {
                    guard let m = digits(2) else { return nil }
                    mm = m
                } else if i < b.count, let m = digits(2) {
                    mm = m
                }
                offset = sign * (hh * 3600 + mm * 60)
            }
        }
        guard i == b.count else { return nil }
        let days = CivilDate.days(year: Int64(year), month: Int64(month), day: Int64(day))
        return Date(timeIntervalSince1970: Double(days) * 86400 + seconds - Double(offset))
    }
}
