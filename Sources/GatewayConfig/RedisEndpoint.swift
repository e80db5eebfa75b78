import GatewayRules

/// Where the Redis store lives and how to log in (DESIGN.md section 4).
///
/// Written `redis://[[username]:password@]host[:port][/db]` (port 6379 and db 0 by default; user
/// and password percent-decoded) or `unix:///path/to/redis.sock[?db=N]` (also `unix:/path`).
/// `rediss://` (TLS) is refused as not supported yet. `description` never shows the password.
public struct RedisEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// TCP host and port, or a Unix socket path.
    public enum Address: Sendable, Hashable {
        /// IP literal (IPv6 without brackets) or DNS name, and port.
        case tcp(host: String, port: UInt16)
        /// Absolute path of Redis' Unix socket.
        case unix(path: String)
    }

    /// Where to connect.
    public var address: Address
    /// ACL user name for `AUTH username password` (Redis 6+); nil for the default user.
    public var username: String?
    /// Password for `AUTH`; nil when none was given.
    public var password: String?
    /// Database number for `SELECT` (0 by default; Redis Cluster only has 0).
    public var database: Int

    /// Creates an endpoint.
    public init(address: Address, username: String? = nil, password: String? = nil, database: Int = 0) {
        self.address = address
        self.username = username
        self.password = password
        self.database = database
    }

    /// The URL with the password replaced by `***`.
    public var description: String {
        switch address {
        case .tcp(let host, let port):
            var auth = ""
            if username != nil || password != nil { auth = "\(username ?? ""):\(password == nil ? "" : "***")@" }
            let h = host.contains(":") ? "[\(host)]" : host
            return "redis://\(auth)\(h):\(port)/\(database)"
        case .unix(let path):
            return "unix://\(path)" + (database == 0 ? "" : "?db=\(database)")
        }
    }

    /// Reads a Redis URL; `baseDirectory` resolves a relative Unix socket path.
    static func parse(_ text: String, baseDirectory: String) -> Result<RedisEndpoint, ConfigSyntaxError> {
        let expected = "expected memory, redis://[:password@]host:port/db or unix:///path/to/redis.sock, got \(ConfigText.redactedURL(text))"
        if text.lowercased().hasPrefix("rediss://") {
            return .failure(ConfigSyntaxError("rediss:// (Redis over TLS) is not supported yet: use redis:// on a trusted network or a Unix socket"))
        }
        if text.hasPrefix("unix:") {
            var pathText = String(text.dropFirst(5))
            var database = 0
            if let q = pathText.firstIndex(of: "?") {
                let query = pathText[pathText.index(after: q)...]
                pathText = String(pathText[..<q])
                guard query.hasPrefix("db="), let db = ScalarSyntax.integer(String(query.dropFirst(3))), (0...Int(Int32.max)).contains(db) else {
                    return .failure(ConfigSyntaxError("the only query a unix: store URL takes is ?db=N (a database number), got \(ConfigText.quoted(String(query)))"))
                }
                database = db
            }
            switch SocketAddress.parse("unix:" + pathText, baseDirectory: baseDirectory) {
            case .success(.unix(let path)): return .success(RedisEndpoint(address: .unix(path: path), database: database))
            case .success: return .failure(ConfigSyntaxError(expected))
            case .failure(let e): return .failure(e)
            }
        }
        guard text.hasPrefix("redis://") else { return .failure(ConfigSyntaxError(expected)) }
        var rest = Substring(text.dropFirst(8))
        if rest.contains(where: { $0 == "?" || $0 == "#" }) {
            return .failure(ConfigSyntaxError("redis:// store URLs take no query or fragment (put the database number in the path: /0)"))
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                return .failure(ConfigSyntaxError("write the Redis password as redis://:password@host (or redis://user:password@host)"))
            }
            guard let user = String(parts[0]).removingPercentEncodingStrictly, let pass = String(parts[1]).removingPercentEncodingStrictly else {
                return .failure(ConfigSyntaxError("the Redis user or password has a malformed percent-encoding"))
            }
            username = user.isEmpty ? nil : user
            password = pass
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let dbText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !dbText.isEmpty {
                guard let db = ScalarSyntax.integer(String(dbText)), dbText.first != "+", (0...Int(Int32.max)).contains(db) else {
                    return .failure(ConfigSyntaxError("the Redis database in \(ConfigText.redactedURL(text)) must be a number (e.g. /0), got \(ConfigText.quoted(String(dbText)))"))
                }
                database = db
            }
        }
        guard let (host, portText, bracketed) = NetworkSyntax.splitHostPort(rest), !host.isEmpty else {
            return .failure(ConfigSyntaxError(expected))
        }
        var port: UInt16 = 6379
        if let portText {
            guard let p = NetworkSyntax.port(portText), p != 0 else {
                return .failure(ConfigSyntaxError("the port in \(ConfigText.redactedURL(text)) must be a number from 1 to 65535"))
            }
            port = p
        }
        let hostName: String
        if bracketed {
            guard let v6 = NetworkSyntax.ipv6(String(host)) else {
                return .failure(ConfigSyntaxError("\(ConfigText.quoted(String(host))) is not an IPv6 address"))
            }
            hostName = v6
        } else if let v4 = NetworkSyntax.ipv4(String(host)) {
            hostName = v4
        } else if NetworkSyntax.isHostName(String(host)) {
            hostName = host.lowercased()
        } else {
            return .failure(ConfigSyntaxError("\(ConfigText.quoted(String(host))) is not a host name or IP address"))
        }
        return .success(RedisEndpoint(address: .tcp(host: hostName, port: port), username: username, password: password, database: database))
    }
}

extension String {
    /// Percent-decoding that refuses `%` not followed by two hex digits (Foundation-free).
    var removingPercentEncodingStrictly: String? {
        var out: [UInt8] = []
        let b = Array(utf8)
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "%") {
                guard i + 2 < b.count, let hi = URISyntax.hexValue(b[i + 1]), let lo = URISyntax.hexValue(b[i + 2]) else { return nil }
                out.append(hi * 16 + lo)
                i += 3
            } else {
                out.append(b[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
