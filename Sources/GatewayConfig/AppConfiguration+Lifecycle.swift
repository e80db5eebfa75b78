/// The lifecycle settings of an app as `check-config` prints them (never the account key).
extension AppConfiguration {
    /// `""` without lifecycle settings, else `, registration_ttl 720h` and/or `, at most 5 keys per
    /// X-Account-Id`, appended to the app's summary.
    var lifecycleSummary: String {
        var out = ""
        if let ttl = registrationTTL { out += ", registration_ttl \(DurationSyntax.format(ttl))" }
        if let accounts = accountKeys { out += ", at most \(accounts.maximumKeys) keys per \(accounts.header)" }
        return out
    }
}
