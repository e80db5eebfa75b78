import Foundation

/// A `Retry-After` field value as a delay (RFC 9110 section 10.2.3): `delay-seconds` (`1*DIGIT`) or an
/// `HTTP-date` (IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept,
/// section 5.6.7). Read from Apple's data server (`ReceiptRefresher`), a peer the gateway does not
/// control: any number of digits is taken without overflow (saturating), so a hostile value can at
/// worst ask for a very long wait, which `ReceiptRefreshSchedule` bounds.
enum RetryAfterValue {
    /// The delay in milliseconds that `text` asks for at `now` (unix ms): seconds x 1000 (saturating
    /// at `Int64.max`), or the date minus `now` (0 for a date in the past); nil for anything else
    /// (empty, signs, fractions, a malformed date).
    static func milliseconds(_ text: String, now: Int64) -> Int64? {
        let value = text.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
        guard !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            var seconds: Int64 = 0
            for digit in value.utf8 {
                let (times, overflow1) = seconds.multipliedReportingOverflow(by: 10)
                let (plus, overflow2) = times.addingReportingOverflow(Int64(digit - 0x30))
                if overflow1 || overflow2 { return Int64.max }
                seconds = plus
            }
            let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
            return overflow ? Int64.max : ms
        }
        guard let date = date(value) else { return nil }
        let at = date.timeIntervalSince1970 * 1000
        guard at.isFinite else { return nil }
        let delay = at - Double(now)
        if delay <= 0 { return 0 }
        return delay >= Double(Int64.max) ? Int64.max : Int64(delay)
    }

    /// The three HTTP-date forms, all in GMT: `Sun, 06 Nov 1994 08:49:37 GMT`,
    /// `Sunday, 06-Nov-94 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`.
    private static func date(_ text: String) -> Date? {
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()  // per call: a rare path, and DateFormatter is not thread-safe
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            formatter.isLenient = false
            // asctime pads the day with a space (`Nov  6`): collapse runs of spaces first.
            let input = format.hasPrefix("EEE MMM") ? text.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") : text
            if let date = formatter.date(from: input) { return date }
        }
        return nil
    }
}
