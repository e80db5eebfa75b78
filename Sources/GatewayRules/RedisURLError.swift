/// Why a Redis URL was refused (`RedisURL.init(parsing:baseDirectory:)`). No case carries the
/// password, so `description` can go to logs and `check-config` output as is.
public enum RedisURLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Neither `redis://`, `rediss://`, `redis+cluster://`, `rediss+cluster://` nor `unix:`; carries the scheme seen (the text before the first `:`, at most
    /// 32 characters).
    case unsupportedScheme(String)
    /// `rediss+sentinel://`: Sentinel over TLS is not supported yet.
    case sentinelNotSupported
    /// The host is not a DNS name, an IPv4 literal or a bracketed IPv6 literal; carries it.
    case invalidHost(String)
    /// The port is not a decimal 1...65535; carries it.
    case invalidPort(String)
    /// The database is not a decimal 0...2147483647 (no sign, no leading zeros); carries it.
    case invalidDatabase(String)
    /// A relative `unix:` path where no base folder was given; carries the path.
    case relativePath(String)
    /// The resolved Unix socket path is longer than `NetworkSyntax.maximumUnixPathBytes`; carries it.
    case pathTooLong(String)
    /// The user name or password has a `%` not followed by two hex digits, or does not decode to UTF-8.
    case badCredentialEncoding
    /// Any other problem, described.
    case malformed(String)

    /// One line, for `check-config`, logs and `attestctl`.
    public var description: String {
        switch self {
        case .unsupportedScheme(let scheme):
            return "expected \(RedisURL.grammar), got the scheme \(RedisURLError.quoted(scheme))"
        case .sentinelNotSupported:
            return "rediss+sentinel:// (Redis Sentinel over TLS) is not supported yet: use redis+sentinel:// on a trusted network, or rediss:// to the primary"
        case .invalidHost(let host):
            return "\(RedisURLError.quoted(host)) is not a host name, an IPv4 address or an IPv6 address"
        case .invalidPort(let port):
            return "the Redis port must be a number from 1 to 65535, got \(RedisURLError.quoted(port))"
        case .invalidDatabase(let db):
            return "the Redis database must be a number from 0 to \(RedisURL.maximumDatabase) (e.g. /0 or ?db=0), got \(RedisURLError.quoted(db))"
        case .relativePath(let path):
            return "the Unix socket path \(RedisURLError.quoted(path)) is relative: write an absolute path"
        case .pathTooLong(let path):
            return "the Unix socket path \(RedisURLError.quoted(path)) is longer than \(NetworkSyntax.maximumUnixPathBytes) bytes"
        case .badCredentialEncoding:
            return "the Redis user or password has a malformed percent-encoding"
        case .malformed(let message):
            return message
        }
    }

    /// `value` in double quotes with `"`, `\` and control characters escaped, cut after 64 characters.
    static func quoted(_ value: String) -> String {
        var out = "\""
        for (count, scalar) in value.unicodeScalars.enumerated() {
            if count == 64 { out += "..."; break }
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
