import GatewayRules

/// `verdict_token` (top level and `apps[].verdict_token`): signed verdicts (issue 12).
extension ConfigValidator {
    /// Range of `verdict_token.lifetime`.
    static let verdictLifetimeRange: ClosedRange<Duration> = .seconds(1) ... .seconds(3600)
    /// Range of `verdict_token.rotation`.
    static let verdictRotationRange: ClosedRange<Duration> = .seconds(2) ... .seconds(366 * 24 * 3600)

    /// Sections generating keys under the same `store_key` share one key set, so they must agree on
    /// its schedule (otherwise replicas would rotate it by two rules).
    func crossCheckVerdictTokens(topLevel: VerdictTokenConfiguration?, apps: [AppConfiguration]) {
        var first: [String: (ConfigPath, VerdictTokenConfiguration)] = [:]
        let sections = [(ConfigPath.root.key("verdict_token"), topLevel)]
            + apps.enumerated().map { (ConfigPath.root.key("apps").index($0.offset).key("verdict_token"), $0.element.verdictToken) }
        for case let (path, section?) in sections {
            guard case .generated(let storeKey, _, _)? = section.keys else { continue }
            if let (earlier, other) = first[storeKey] {
                if other.keys != section.keys || other.lifetime != section.lifetime {
                    error(path.key("store_key"), "\(storeKey) is also the key set of \(earlier) with another rotation, publish_ahead or lifetime: sections sharing a key set need the same schedule (or give each its own store_key)", nil)
                }
            } else {
                first[storeKey] = (path, section)
            }
        }
    }

    /// The section at `key` of `parent`; `.some(nil)` when absent, nil when invalid (errors recorded).
    func verdictToken(_ parent: Fields, storeIsMemory: Bool) -> VerdictTokenConfiguration?? {
        guard let node = parent.node("verdict_token") else { return .some(nil) }
        let path = parent.path.key("verdict_token")
        guard let f = fields(node, path, .verdictToken, what: "a mapping {algorithm, lifetime, key_files | rotation, secret_file | secret, key_id}") else {
            return nil
        }
        guard let algorithm = optional(f, "algorithm", default: VerdictTokenConfiguration.Algorithm.es256, { choice($0, $1, VerdictTokenConfiguration.Algorithm.self) }) else {
            return nil
        }
        var ok = true
        let lifetime = optional(f, "lifetime", default: VerdictTokenConfiguration.defaultLifetime) { duration($0, $1, ConfigValidator.verdictLifetimeRange) }
        if lifetime == nil { ok = false }
        var issuer: String?
        if let n = f.node("issuer") {
            issuer = string(n, path.key("issuer"), expected: "the iss claim, a string")
            if let text = issuer, text.isEmpty || text.utf8.count > 256 {
                error(path.key("issuer"), "must be 1 to 256 characters", n.mark)
                ok = false
            } else if issuer == nil { ok = false }
        }
        var result = VerdictTokenConfiguration(algorithm: algorithm, lifetime: lifetime ?? VerdictTokenConfiguration.defaultLifetime, issuer: issuer)

        let es256Keys = ["key_files", "rotation", "publish_ahead", "store_key"]
        let hs256Keys = ["secret", "secret_file", "key_id"]
        switch algorithm {
        case .es256:
            for key in hs256Keys where f.has(key) {
                error(path.key(key), "\(key) is for algorithm: HS256; ES256 keys come from key_files or are generated (rotation)", f.mark(key))
                ok = false
            }
            if f.has("key_files") {
                for key in ["rotation", "publish_ahead", "store_key"] where f.has(key) {
                    error(path.key(key), "\(key) is for generated keys; with key_files the gateway signs with the first file (rotate by reordering them and reloading)", f.mark(key))
                    ok = false
                }
                guard let items = list(f.node("key_files")!, path.key("key_files"), of: "PEM private key files (P-256)") else { return nil }
                guard (1...8).contains(items.count) else {
                    error(path.key("key_files"), "list 1 to 8 PEM private key files: the first signs, the others are published", f.mark("key_files"))
                    return nil
                }
                var files: [String] = []
                for (i, item) in items.enumerated() {
                    guard let text = string(item, path.key("key_files").index(i), expected: "the path of a PEM private key file"), !text.isEmpty else {
                        ok = false
                        continue
                    }
                    let resolved = NetworkSyntax.resolvePath(text, baseDirectory: baseDirectory)
                    files.append(resolved)
                    tlsFiles.append(TLSFileReference(path: path.key("key_files").index(i).description, mark: item.mark,
                                                     files: .signingKey(resolved)))
                }
                result.keys = .files(files)
            } else {
                let rotation = optional(f, "rotation", default: VerdictTokenConfiguration.defaultRotation) { duration($0, $1, ConfigValidator.verdictRotationRange) }
                let ahead = optional(f, "publish_ahead", default: Duration?.none) { duration($0, $1, .seconds(1) ... .seconds(366 * 24 * 3600)).map { .some($0) } }
                let storeKey = optional(f, "store_key", default: VerdictTokenConfiguration.defaultStoreKey) { n, p -> String? in
                    guard let text = string(n, p, expected: "a Redis key name") else { return nil }
                    let bytes = Array(text.utf8)
                    guard !bytes.isEmpty, bytes.count <= 128, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                        error(p, "must be 1 to 128 printable ASCII characters without spaces", n.mark)
                        return nil
                    }
                    return text
                }
                guard let rotation, let storeKey, let chosen = ahead else { return nil }
                // Default lead: an hour, or a quarter of the rotation when that is shorter.
                let lead = chosen ?? min(VerdictTokenConfiguration.defaultPublishAhead, rotation / 4)
                if chosen != nil, lead >= rotation {
                    error(path.key("publish_ahead"), "must be shorter than rotation (\(DurationSyntax.format(rotation))): the next key is published this long before it signs", f.mark("publish_ahead"))
                    ok = false
                }
                if storeIsMemory {
                    warn(path, "generated keys live in the memory store: each gateway process makes its own and forgets them on restart; use a Redis store so that replicas share one key set", f.mark)
                }
                result.keys = .generated(storeKey: storeKey, rotation: rotation, publishAhead: lead)
            }
        case .hs256:
            for key in es256Keys where f.has(key) {
                error(path.key(key), "\(key) is for algorithm: ES256; HS256 signs with secret_file or secret", f.mark(key))
                ok = false
            }
            if f.has("secret") && f.has("secret_file") {
                error(path.key("secret_file"), "give the secret once: secret_file or secret, not both", f.mark("secret_file"))
                return nil
            }
            var secret: String?
            if let n = f.node("secret") {
                secret = string(n, path.key("secret"), expected: "the shared secret (write ${VARIABLE} to take it from the environment)")
            } else if let n = f.node("secret_file") {
                if let file = string(n, path.key("secret_file"), expected: "the path of a file holding the shared secret") {
                    switch PasswordFile.read(NetworkSyntax.resolvePath(file, baseDirectory: baseDirectory)) {
                    case .success(let text): secret = text
                    case .failure(let problem): error(path.key("secret_file"), problem.message, n.mark)
                    }
                }
            } else {
                missing(f, "secret_file", " (or secret: ${VARIABLE}): the HS256 secret shared with the upstream, 32 bytes or more")
                return nil
            }
            guard let secret else { return nil }
            if secret.utf8.count < 32 {
                error(path.key(f.has("secret") ? "secret" : "secret_file"), "the HS256 secret must be at least 32 bytes (RFC 7518 section 3.2), got \(secret.utf8.count)", f.mark(f.has("secret") ? "secret" : "secret_file"))
                ok = false
            }
            result.secret = Array(secret.utf8)
            if let n = f.node("key_id") {
                if let id = string(n, path.key("key_id")) {
                    if id.isEmpty || id.utf8.count > 64 || !id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) || $0 == 0x2d || $0 == 0x5f || $0 == 0x2e }) {
                        error(path.key("key_id"), "must be 1 to 64 characters of A-Z a-z 0-9 . _ -", n.mark)
                        ok = false
                    }
                    result.keyID = id
                } else {
                    ok = false
                }
            } else {
                missing(f, "key_id", " (the kid of the tokens: upstreams find the secret by it while secrets rotate)")
                ok = false
            }
        }
        return ok ? .some(result) : nil
    }
}
