import GatewayRules

/// The lifecycle keys of `apps[]` (issue 10): `registration_ttl`, and keys per account
/// (`account_header`, `account_key` or `account_key_file`, `max_keys_per_account`).
extension ConfigValidator {
    /// Shortest `registration_ttl`: renewal needs time to happen.
    static let minimumRegistrationTTL: Duration = .seconds(60)

    /// Reads the lifecycle keys of one app into `app`; false when any is invalid (errors recorded).
    func appLifecycle(_ f: Fields, _ path: ConfigPath, into app: inout AppConfiguration) -> Bool {
        var ok = true
        if let node = f.node("registration_ttl") {
            let range = ConfigValidator.minimumRegistrationTTL ... Duration.milliseconds(DurationSyntax.maximumMilliseconds)
            if let ttl = duration(node, path.key("registration_ttl"), range) { app.registrationTTL = ttl } else { ok = false }
        }
        let accountKeys = ["account_key", "account_key_file", "max_keys_per_account"].filter { f.has($0) }
        guard let headerNode = f.node("account_header") else {
            if let first = accountKeys.first {
                error(path.key(first), "\(first) needs account_header (the request header naming the account)", f.mark(first))
                return false
            }
            return ok
        }
        var header: String?
        if let text = string(headerNode, path.key("account_header"), expected: "a header name such as X-Account-Id") {
            if HTTPSyntax.isToken(text) {
                header = text
            } else {
                error(path.key("account_header"), "expected a header name (RFC 9110 token), got \(ConfigText.quoted(text))", headerNode.mark)
            }
        }
        var key: [UInt8]?
        switch (f.node("account_key"), f.node("account_key_file")) {
        case (.some, .some):
            error(path.key("account_key_file"), "give the account key once: account_key_file or account_key, not both", f.mark("account_key_file"))
        case (nil, nil):
            missing(f, "account_key", " (or account_key_file): the secret of the keyed hash of account values, at least \(AccountKeysConfiguration.minimumKeyBytes) bytes (write ${VARIABLE} to take it from the environment)")
        case (let node?, nil):
            if let text = string(node, path.key("account_key"), expected: "the account key (write ${VARIABLE} to take it from the environment)") {
                key = Array(text.utf8)
            }
        case (nil, let node?):
            if let file = string(node, path.key("account_key_file"), expected: "the path of a file holding the account key") {
                switch PasswordFile.read(NetworkSyntax.resolvePath(file, baseDirectory: baseDirectory)) {
                case .success(let text): key = Array(text.utf8)
                case .failure(let problem): error(path.key("account_key_file"), problem.message, node.mark)
                }
            }
        }
        let keyPath = path.key(f.has("account_key_file") ? "account_key_file" : "account_key")
        if let bytes = key, bytes.count < AccountKeysConfiguration.minimumKeyBytes {
            error(keyPath, "the account key must have at least \(AccountKeysConfiguration.minimumKeyBytes) bytes, got \(bytes.count) (e.g. openssl rand -hex 32)",
                  f.mark(f.has("account_key_file") ? "account_key_file" : "account_key"))
            key = nil
        }
        let maximum = optional(f, "max_keys_per_account", default: AccountKeysConfiguration.defaultMaximumKeys) { integer($0, $1, 1...1000) }
        guard ok, let header, let key, let maximum else { return false }
        app.accountKeys = AccountKeysConfiguration(header: header, hmacKey: key, maximumKeys: maximum)
        return true
    }
}
