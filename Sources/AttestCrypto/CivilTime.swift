/// Conversions between proleptic Gregorian UTC calendar fields and seconds since the Unix epoch,
/// without the C library's time zone state (Howard Hinnant's days-from-civil algorithm).
public enum CivilTime {
    /// Seconds since 1970-01-01T00:00:00Z of the given UTC date and time (no range checks).
    public static func secondsSinceEpoch(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146097 + doe - 719468
        return Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// UTC calendar fields (year, month 1-12, day 1-31, hour, minute, second) of `seconds`.
    public static func fields(_ seconds: Int64) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        var days = seconds / 86400
        var rem = seconds % 86400
        if rem < 0 { rem += 86400; days -= 1 }
        let z = Int(days) + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, Int(rem / 3600), Int(rem % 3600 / 60), Int(rem % 60))
    }

    /// ISO 8601 text "YYYY-MM-DDTHH:MM:SSZ" of `seconds`.
    public static func iso8601(_ seconds: Int64) -> String {
        let f = fields(seconds)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var year = String(f.year)
        while year.count < 4 { year = "0" + year }
        return "\(year)-\(two(f.month))-\(two(f.day))T\(two(f.hour)):\(two(f.minute)):\(two(f.second))Z"
    }

    /// Parses ISO 8601 UTC text "YYYY-MM-DDTHH:MM:SS[.fff]Z" (or "+00:00") into seconds since the
    /// epoch (fraction dropped). Returns nil for anything else.
    public static func parseISO8601(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func num(_ from: Int, _ count: Int) -> Int? {
            var v = 0
            for i in from..<(from + count) {
                guard i < b.count, b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard let year = num(0, 4), b[4] == 45, let month = num(5, 2), b[7] == 45, let day = num(8, 2),
              b[10] == 84 || b[10] == 116 || b[10] == 32, let hour = num(11, 2), b[13] == 58, let minute = num(14, 2),
              b[16] == 58, let second = num(17, 2) else { return nil }
        var index = 19
        if index < b.count, b[index] == 46 {
            index += 1
            let start = index
            while index < b.count, b[index] >= 48, b[index] <= 57 { index += 1 }
            guard index > start else { return nil }
        }
        let zone = Array(b[index...])
        guard zone == Array("Z".utf8) || zone == Array("z".utf8) || zone == Array("+00:00".utf8) else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        return secondsSinceEpoch(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }
}
