/// Where and how to reach Redis, parsed from a URL:
/// - `redis://[[username]:password@]host[:port][/db]` (host name, IPv4, or `[IPv6]`; port 6379 by default;
///   db 0 by default), the form of the IANA `redis` URI scheme;
/// - `unix:///path/to/redis.sock[?db=N][&password=P][&username=U]` (also `unix://[[username]:password@]/path`).
///
/// Userinfo and query values are percent-decoded. `rediss://` (TLS) is refused: put a TLS sidecar or a
/// Unix socket in front instead. `AUTH` (with the username when given, Redis 6 ACLs) and `SELECT` are sent
/// on every connect.
public struct RedisURL: Equatable, Sendable, CustomStringConvertible {
    /// The transport endpoint.
    public enum Endpoint: Equatable, Sendable {
        /// TCP to `host` (name or literal address, without brackets) and `port`.
        case tcp(host: String, port: UInt16)
        /// A Unix domain socket at an absolute path.
        case unix(path: String)
    }

    /// The endpoint.
    public let endpoint: Endpoint
    /// ACL user name (Redis 6+), or nil for the default user.
    public let username: String?
    /// Password for `AUTH`, or nil for none.
    public let password: String?
    /// Logical database for `SELECT` (0...1_000_000).
    public let database: Int

    /// Builds a URL value directly.
    public init(endpoint: Endpoint, username: String? = nil, password: String? = nil, database: Int = 0) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
    }

    /// Parses a `redis://` or `unix://` URL.
    /// - Throws: `RedisURLError` naming what is wrong.
    public init(parsing text: String) throws {
        if text.hasPrefix("redis://") {
            self = try RedisURL.parseTCP(String(text.dropFirst("redis://".count)))
        } else if text.hasPrefix("unix://") {
            self = try RedisURL.parseUnix(String(text.dropFirst("unix://".count)))
        } else if text.hasPrefix("rediss://") {
            throw RedisURLError.unsupportedScheme("rediss (TLS is not supported; use a Unix socket or a TLS sidecar)")
        } else {
            throw RedisURLError.unsupportedScheme(String(text.prefix { $0 != ":" }))
        }
    }

    /// The URL with the password replaced by `***` (for logs).
    public var description: String {
        var auth = ""
        if username != nil || password != nil { auth = "\(username ?? ""):\(password == nil ? "" : "***")@" }
        switch endpoint {
        case .tcp(let host, let port):
            let shown = host.contains(":") ? "[\(host)]" : host
            return "redis://\(auth)\(shown):\(port)/\(database)"
        case .unix(let path):
            return "unix://\(auth)\(path)?db=\(database)"
        }
    }

    private static func parseTCP(_ rest: String) throws -> RedisURL {
        guard !rest.contains("#") else { throw RedisURLError.malformed("fragments are not allowed") }
        let (beforeQuery, query) = split(rest, at: "?")
        if let query, !query.isEmpty { throw RedisURLError.malformed("query parameters are not supported in redis:// URLs") }
        let (authority, path) = split(beforeQuery, at: "/")
        let (userinfo, hostPort) = splitUserinfo(authority)
        let (username, password) = try parseUserinfo(userinfo)
        var host: String
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw RedisURLError.malformed("unterminated [IPv6] host") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw RedisURLError.malformed("garbage after [IPv6] host") }
                portText = after.dropFirst()
            }
        } else {
            let parts = hostPort.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw RedisURLError.malformed("IPv6 hosts need brackets") }
            host = String(parts[0])
            if parts.count == 2 { portText = parts[1] }
        }
        guard !host.isEmpty else { throw RedisURLError.malformed("missing host") }
        guard host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x40 }) else { throw RedisURLError.malformed("invalid host") }
        var port: UInt16 = 6379
        if let portText {
            guard let value = UInt16(portText), value > 0 else { throw RedisURLError.invalidPort(String(portText)) }
            port = value
        }
        var database = 0
        if let path, !path.isEmpty { database = try parseDatabase(path) }
        return RedisURL(endpoint: .tcp(host: host, port: port), username: username, password: password, database: database)
    }

    private static func parseUnix(_ rest: String) throws -> RedisURL {
        guard !rest.contains("#") else { throw RedisURLError.malformed("fragments are not allowed") }
        let (beforeQuery, query) = split(rest, at: "?")
        let (userinfo, rawPath) = splitUserinfo(beforeQuery)
        var path = rawPath
        guard path.hasPrefix("/"), path.count > 1 else { throw RedisURLError.malformed("unix:// needs an absolute path (unix:///path)") }
        var (username, password) = try parseUserinfo(userinfo)
        var database = 0
        if let query, !query.isEmpty {
            for pair in query.split(separator: "&") {
                let (name, value) = split(String(pair), at: "=")
                let decoded = try percentDecode(value ?? "")
                switch name {
                case "db": database = try parseDatabase(decoded)
                case "password": password = decoded
                case "username", "user": username = decoded
                default: throw RedisURLError.malformed("unknown query parameter \(name)")
                }
            }
        }
        path = try percentDecode(path)
        return RedisURL(endpoint: .unix(path: path), username: username, password: password, database: database)
    }

    private static func split(_ text: String, at separator: Character) -> (String, String?) {
        guard let index = text.firstIndex(of: separator) else { return (text, nil) }
        return (String(text[..<index]), String(text[text.index(after: index)...]))
    }

    private static func splitUserinfo(_ authority: String) -> (String?, String) {
        guard let at = authority.lastIndex(of: "@") else { return (nil, authority) }
        return (String(authority[..<at]), String(authority[authority.index(after: at)...]))
    }

    private static func parseUserinfo(_ userinfo: String?) throws -> (String?, String?) {
        guard let userinfo else { return (nil, nil) }
        guard let colon = userinfo.firstIndex(of: ":") else {
            throw RedisURLError.malformed("userinfo must be [username]:password")
        }
        let user = try percentDecode(String(userinfo[..<colon]))
        let password = try percentDecode(String(userinfo[userinfo.index(after: colon)...]))
        return (user.isEmpty ? nil : user, password)
    }

    private static func parseDatabase(_ text: String) throws -> Int {
        guard !text.isEmpty, text.utf8.count <= 7, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), value <= 1_000_000 else { throw RedisURLError.invalidDatabase(text) }
        return value
    }

    private static func percentDecode(_ text: String) throws -> String {
        var out = [UInt8]()
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            if byte == 0x25 {
                guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else {
                    throw RedisURLError.malformed("bad percent-encoding")
                }
                out.append(high << 4 | low)
            } else {
                out.append(byte)
            }
        }
        guard let decoded = String(validating: out, as: UTF8.self) else { throw RedisURLError.malformed("percent-encoding is not UTF-8") }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }
}

/// Why a Redis URL was refused.
public enum RedisURLError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not `redis://` or `unix://`; carries the scheme seen.
    case unsupportedScheme(String)
    /// Port not in 1...65535.
    case invalidPort(String)
    /// Database not a decimal in 0...1_000_000.
    case invalidDatabase(String)
    /// Any other syntax problem, described.
    case malformed(String)

    /// Human-readable form for logs.
    public var description: String {
        switch self {
        case .unsupportedScheme(let scheme): return "unsupported Redis URL scheme \(scheme) (use redis:// or unix://)"
        case .invalidPort(let port): return "invalid Redis port \(port)"
        case .invalidDatabase(let db): return "invalid Redis database \(db) (0...1000000)"
        case .malformed(let why): return "malformed Redis URL: \(why)"
        }
    }
}
