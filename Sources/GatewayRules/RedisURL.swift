/// Where the Redis store lives and how to log in (DESIGN.md section 4): the one grammar of Redis URLs,
/// read by the configuration (`store:`) and by `attestctl keys --store`, so that both take and refuse
/// the same URLs.
///
/// Grammar:
/// - `redis://[[username]:password@]host[:port][/db]`: `host` is a DNS name (lower-cased), an IPv4
///   literal or an IPv6 literal in brackets (kept in canonical RFC 5952 form, without the brackets);
///   `port` is 1-65535 (6379 by default); `db` is a decimal 0...2147483647 without sign or leading
///   zeros (0 by default; `redis://host/` is db 0). No query, no fragment.
/// - `unix:PATH[?QUERY]` (`unix:/run/redis.sock`, or a path relative to `baseDirectory`) and
///   `unix://[[username]:password@]/ABSOLUTE/PATH[?QUERY]` (`unix:///run/redis.sock`). `QUERY` is
///   `&`-separated `db=N`, `username=U` and `password=P`, each at most once. The path is taken as
///   written (not percent-decoded, like the `unix:` addresses of listeners and upstreams), normalized
///   lexically (`.`, `..`, repeated `/`) and at most 107 bytes (`sockaddr_un`).
/// - User name and password (in the userinfo or the query) are percent-decoded (RFC 3986 section
///   2.1). A password is given once; a user name needs a password (Redis 6 ACL `AUTH username
///   password`).
/// - `redis+cluster://[[username]:password@]host[:port][,host[:port]...][/0]`: a Redis Cluster found
///   from these seed nodes (DESIGN.md section 11; each host as in `redis://`, port 6379 by default, at
///   most 16 seeds, duplicates refused). The gateway reads the slot map from a seed and then talks to
///   every primary; the credentials apply to every node. Redis Cluster has only database 0, so the
///   path is empty, `/` or `/0`. No query, no fragment.
/// - `rediss://...` and `rediss+cluster://...`: the same grammars over TLS (`tls` true; the
///   certificate is verified against the URL's host name, or each cluster node's announced address).
///   The TLS settings (CA file, client certificate, verification) are not part of the URL.
/// - `redis+sentinel://[[username]:password@]host[:port][,host[:port]...]/master-name[/db]`: one
///   primary found through Redis Sentinel (`SENTINEL get-master-addr-by-name`; each Sentinel host as
///   in `redis://`, port 26379 by default, at most 16, duplicates refused). `master-name` is 1-64
///   letters, digits, `.`, `_` or `-`; `db` as in `redis://`. The credentials and database apply to
///   the primary (the Sentinels are asked without AUTH). No query, no fragment, no TLS
///   (`rediss+sentinel://` is refused).
///
/// Neither `description` nor any `RedisURLError` ever shows the password.
public struct RedisURL: Sendable, Hashable, CustomStringConvertible {
    /// The transport endpoint.
    public enum Endpoint: Sendable, Hashable {
        /// TCP to `host` (a DNS name or a literal address, IPv6 without brackets) and `port`.
        case tcp(host: String, port: UInt16)
        /// A Unix domain socket at an absolute path.
        case unix(path: String)
    }

    /// How the endpoints are used. Open for later kinds (Sentinel).
    public enum Topology: Sendable, Hashable {
        /// One Redis server at `endpoint`.
        case standalone
        /// A Redis Cluster discovered from these seed nodes (TCP only, at least one; `endpoint` is the
        /// first).
        case cluster(seeds: [Endpoint])
        /// One primary, named `master` in these Sentinels (TCP only, at least one; `endpoint` is the
        /// first Sentinel, not the primary).
        case sentinel(sentinels: [Endpoint], master: String)
    }

    /// The grammar in one line, for messages.
    public static let grammar = "redis[s]://[[user]:password@]host[:port][/db], redis[s]+cluster://host:port[,host:port...], redis+sentinel://host:port[,host:port...]/master-name or unix:/path/to/redis.sock[?db=N]"
    /// Redis Sentinel's default TCP port.
    public static let defaultSentinelPort: UInt16 = 26379
    /// Most seed nodes a `redis+cluster://` URL may list.
    public static let maximumSeeds = 16
    /// Redis' default TCP port.
    public static let defaultPort: UInt16 = 6379
    /// Largest database number accepted (Redis' `databases` setting is an `int`).
    public static let maximumDatabase = Int(Int32.max)

    /// Where to connect.
    public var endpoint: Endpoint
    /// ACL user name for `AUTH username password` (Redis 6+); nil for the default user.
    public var username: String?
    /// Password for `AUTH`; nil when none was given.
    public var password: String?
    /// Database number for `SELECT` (0 by default; Redis Cluster only has 0).
    public var database: Int
    /// Standalone server or cluster seeds.
    public var topology: Topology
    /// Whether every connection is TLS (`rediss://`, `rediss+cluster://`); Unix sockets never are.
    public var tls: Bool = false

    /// A URL from its parts (no validation).
    public init(endpoint: Endpoint, username: String? = nil, password: String? = nil, database: Int = 0,
                topology: Topology = .standalone) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
        self.topology = topology
    }

    /// A `redis+cluster://` URL from its seeds (at least one; no validation).
    public static func cluster(seeds: [Endpoint], username: String? = nil, password: String? = nil) -> RedisURL {
        RedisURL(endpoint: seeds[0], username: username, password: password, topology: .cluster(seeds: seeds))
    }

    /// The Sentinels and master name of a `redis+sentinel://` URL; nil otherwise.
    public var sentinel: (sentinels: [Endpoint], master: String)? {
        if case .sentinel(let sentinels, let master) = topology { return (sentinels, master) }
        return nil
    }

    /// The seed endpoints of a cluster URL; nil for a standalone one.
    public var clusterSeeds: [Endpoint]? {
        if case .cluster(let seeds) = topology { return seeds }
        return nil
    }

    /// Reads a Redis URL (see the type's documentation for the grammar).
    /// - Parameters:
    ///   - text: the URL as written.
    ///   - baseDirectory: the folder a relative `unix:` path resolves against (the configuration
    ///     file's folder, or `attestctl`'s current directory); nil refuses relative paths.
    /// - Throws: `RedisURLError` naming the first problem (never quoting the password).
    public init(parsing text: String, baseDirectory: String? = nil) throws(RedisURLError) {
        if text.hasPrefix("redis://") {
            self = try RedisURL.parseTCP(text.dropFirst("redis://".count))
        } else if text.hasPrefix("redis+cluster://") {
            self = try RedisURL.parseCluster(text.dropFirst("redis+cluster://".count))
        } else if text.hasPrefix("unix:") {
            self = try RedisURL.parseUnix(text.dropFirst("unix:".count), baseDirectory: baseDirectory)
        } else if text.hasPrefix("rediss://") {
            self = try RedisURL.parseTCP(text.dropFirst("rediss://".count))
            tls = true
        } else if text.hasPrefix("rediss+cluster://") {
            self = try RedisURL.parseCluster(text.dropFirst("rediss+cluster://".count))
            tls = true
        } else if text.hasPrefix("redis+sentinel://") {
            self = try RedisURL.parseSentinel(text.dropFirst("redis+sentinel://".count))
        } else if text.hasPrefix("rediss+sentinel://") {
            throw .sentinelNotSupported
        } else {
            throw .unsupportedScheme(String(text.prefix { $0 != ":" }.prefix(32)))
        }
    }

    /// The URL with the password replaced by `***` (for logs and `check-config`).
    public var description: String {
        var auth = ""
        if password != nil {
            auth = "\(username ?? ""):***@"
        } else if let username {
            auth = "\(username)@"
        }
        let s = tls ? "s" : ""
        if case .sentinel(let sentinels, let master) = topology {
            return "redis+sentinel://\(auth)" + sentinels.map(RedisURL.hostPort).joined(separator: ",") + "/\(master)/\(database)"
        }
        if case .cluster(let seeds) = topology {
            return "redis\(s)+cluster://\(auth)" + seeds.map(RedisURL.hostPort).joined(separator: ",")
        }
        switch endpoint {
        case .tcp:
            return "redis\(s)://\(auth)\(RedisURL.hostPort(endpoint))/\(database)"
        case .unix(let path):
            return "unix://\(auth)\(path)" + (database == 0 ? "" : "?db=\(database)")
        }
    }

    /// `host:port` (IPv6 in brackets) of a TCP endpoint, the path of a Unix one.
    public static func hostPort(_ endpoint: Endpoint) -> String {
        switch endpoint {
        case .tcp(let host, let port): return (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        case .unix(let path): return path
        }
    }

    // MARK: - redis+cluster://

    private static func parseCluster(_ text: Substring) throws(RedisURLError) -> RedisURL {
        var (rest, username, password) = try hostListPrefix(text, scheme: "redis+cluster://")
        if let slash = rest.firstIndex(of: "/") {
            let dbText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !dbText.isEmpty && dbText != "0" {
                throw .malformed("Redis Cluster has only database 0: write redis+cluster://host:port[,host:port...] without a database, got /\(RedisURLError.quoted(String(dbText)))")
            }
        }
        let seeds = try hostList(rest, defaultPort: defaultPort, scheme: "redis+cluster://", item: "seed", items: "seed nodes")
        return .cluster(seeds: seeds, username: username, password: password)
    }

    // MARK: - redis+sentinel://

    private static func parseSentinel(_ text: Substring) throws(RedisURLError) -> RedisURL {
        var (rest, username, password) = try hostListPrefix(text, scheme: "redis+sentinel://")
        guard let slash = rest.firstIndex(of: "/") else {
            throw .malformed("a redis+sentinel:// URL names the master after the Sentinels: redis+sentinel://host:26379[,host:26379...]/master-name")
        }
        let path = rest[rest.index(after: slash)...].split(separator: "/", omittingEmptySubsequences: false)
        rest = rest[..<slash]
        let master = path[0]
        guard !master.isEmpty, master.count <= 64,
              master.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }) else {
            throw .malformed("the Sentinel master name must be 1 to 64 letters, digits, '.', '_' or '-', got \(RedisURLError.quoted(String(master)))")
        }
        var database = 0
        if path.count == 2, !path[1].isEmpty {
            database = try parseDatabase(path[1])
        } else if path.count > 2 {
            throw .malformed("expected redis+sentinel://host:port[,host:port...]/master-name[/db]")
        }
        let sentinels = try hostList(rest, defaultPort: defaultSentinelPort, scheme: "redis+sentinel://", item: "Sentinel",
                                     items: "Sentinels")
        return RedisURL(endpoint: sentinels[0], username: username, password: password, database: database,
                        topology: .sentinel(sentinels: sentinels, master: String(master)))
    }

    /// The start of a `redis+cluster://` or `redis+sentinel://` URL (after the scheme): no query or
    /// fragment, optional `user:password@` (split at the last `@`); returns the rest and the credentials.
    private static func hostListPrefix(_ text: Substring, scheme: String) throws(RedisURLError)
        -> (rest: Substring, username: String?, password: String?) {
        if text.contains(where: { $0 == "?" || $0 == "#" }) {
            throw .malformed("\(scheme) URLs take no query or fragment")
        }
        guard let at = text.lastIndex(of: "@") else { return (text, nil, nil) }
        let (username, password) = try credentials(text[..<at])
        return (text[text.index(after: at)...], username, password)
    }

    /// A comma-separated `host[:port]` list (`item` names one entry, `items` several, in messages):
    /// no empty entry, no entry twice, at most `maximumSeeds`.
    private static func hostList(_ text: Substring, defaultPort: UInt16, scheme: String, item: String,
                                 items: String) throws(RedisURLError) -> [Endpoint] {
        var endpoints: [Endpoint] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !part.isEmpty else {
                throw .malformed("the \(item) list of a \(scheme) URL has an empty entry (host:port,host:port)")
            }
            let next = try endpoint(part, defaultPort: defaultPort)
            guard !endpoints.contains(next) else { throw .malformed("the \(item) \(RedisURLError.quoted(hostPort(next))) is listed twice") }
            endpoints.append(next)
        }
        guard endpoints.count <= maximumSeeds else {
            throw .malformed("a \(scheme) URL lists at most \(maximumSeeds) \(items), got \(endpoints.count)")
        }
        return endpoints
    }

    /// `host[:port]` of a TCP URL: a DNS name (lower-cased), an IPv4 literal or a bracketed IPv6 literal.
    private static func endpoint(_ text: Substring, defaultPort: UInt16 = RedisURL.defaultPort) throws(RedisURLError) -> Endpoint {
        guard let (host, portText, bracketed) = NetworkSyntax.splitHostPort(text) else {
            throw .malformed("the Redis host must be a host name, an IPv4 address or an IPv6 address in brackets (redis://[::1]:6379)")
        }
        guard !host.isEmpty else { throw .malformed("the Redis URL has no host (redis://host:port/db)") }
        var port = defaultPort
        if let portText {
            guard let p = NetworkSyntax.port(portText), p != 0 else { throw .invalidPort(String(portText)) }
            port = p
        }
        let hostName: String
        if bracketed {
            guard let v6 = NetworkSyntax.ipv6(String(host)) else { throw .invalidHost(String(host)) }
            hostName = v6
        } else if let v4 = NetworkSyntax.ipv4(String(host)) {
            hostName = v4
        } else if NetworkSyntax.isHostName(String(host)) {
            hostName = host.lowercased()
        } else {
            throw .invalidHost(String(host))
        }
        return .tcp(host: hostName, port: port)
    }

    // MARK: - redis://

    private static func parseTCP(_ text: Substring) throws(RedisURLError) -> RedisURL {
        if text.contains(where: { $0 == "?" || $0 == "#" }) {
            throw .malformed("redis:// URLs take no query or fragment (put the database number in the path: /0)")
        }
        var rest = text
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            (username, password) = try credentials(rest[..<at])
            rest = rest[rest.index(after: at)...]
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let dbText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !dbText.isEmpty { database = try parseDatabase(dbText) }
        }
        let target = try RedisURL.endpoint(rest)
        return RedisURL(endpoint: target, username: username, password: password, database: database)
    }

    // MARK: - unix:

    private static func parseUnix(_ text: Substring, baseDirectory: String?) throws(RedisURLError) -> RedisURL {
        if text.contains("#") { throw .malformed("unix: Redis URLs take no fragment (#)") }
        var pathPart = text
        var query: Substring?
        if let q = text.firstIndex(of: "?") {
            pathPart = text[..<q]
            query = text[text.index(after: q)...]
        }
        var username: String?
        var password: String?
        if pathPart.hasPrefix("//") {
            let afterSlashes = pathPart.dropFirst(2)
            if afterSlashes.hasPrefix("/") || afterSlashes.isEmpty {
                pathPart = afterSlashes
            } else if let slash = afterSlashes.firstIndex(of: "/"), afterSlashes[..<slash].hasSuffix("@") {
                (username, password) = try credentials(afterSlashes[..<slash].dropLast())
                pathPart = afterSlashes[slash...]
            } else {
                throw .malformed("unix:// takes no host: write unix:///absolute/path/redis.sock (or unix:relative/path/redis.sock)")
            }
        }
        guard !pathPart.isEmpty else { throw .malformed("expected unix:/path/to/redis.sock") }
        if !pathPart.hasPrefix("/") && baseDirectory == nil { throw .relativePath(String(pathPart)) }
        let path = NetworkSyntax.resolvePath(String(pathPart), baseDirectory: baseDirectory ?? "/")
        guard path != "/" else { throw .malformed("expected unix:/path/to/redis.sock") }
        guard path.utf8.count <= NetworkSyntax.maximumUnixPathBytes else { throw .pathTooLong(path) }

        var database = 0
        if let query {
            guard !query.isEmpty else { throw .malformed("the ? of a unix: Redis URL must be followed by db=N, username=U or password=P") }
            var seen: Set<Substring> = []
            for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
                guard let eq = pair.firstIndex(of: "=") else {
                    throw .malformed("each query parameter of a unix: Redis URL is name=value (db, username or password)")
                }
                let name = pair[..<eq]
                let value = pair[pair.index(after: eq)...]
                guard ["db", "username", "password"].contains(name) else {
                    throw .malformed("the query of a unix: Redis URL takes db=N, username=U and password=P, got \(RedisURLError.quoted(String(name)))")
                }
                guard seen.insert(name).inserted else { throw .malformed("\(name) is given twice in the Redis URL") }
                switch name {
                case "db":
                    database = try parseDatabase(value)
                case "username":
                    guard username == nil else { throw .malformed("the Redis user name is given twice") }
                    guard let decoded = URISyntax.percentDecoded(value) else { throw .badCredentialEncoding }
                    username = decoded.isEmpty ? nil : decoded
                default:
                    guard password == nil else { throw .malformed("the Redis password is given twice") }
                    guard let decoded = URISyntax.percentDecoded(value) else { throw .badCredentialEncoding }
                    password = decoded
                }
            }
        }
        if username != nil && password == nil { throw .malformed("a Redis user name needs a password (username=U&password=P)") }
        return RedisURL(endpoint: .unix(path: path), username: username, password: password, database: database)
    }

    // MARK: - Parts

    /// `[username]:password` from a userinfo, percent-decoded.
    private static func credentials(_ userinfo: Substring) throws(RedisURLError) -> (String?, String?) {
        guard let colon = userinfo.firstIndex(of: ":") else {
            throw .malformed("write the Redis password as redis://:password@host (or redis://user:password@host)")
        }
        guard let user = URISyntax.percentDecoded(userinfo[..<colon]),
              let pass = URISyntax.percentDecoded(userinfo[userinfo.index(after: colon)...]) else {
            throw .badCredentialEncoding
        }
        return (user.isEmpty ? nil : user, pass)
    }

    private static func parseDatabase(_ text: Substring) throws(RedisURLError) -> Int {
        guard let db = NetworkSyntax.decimal(text), db <= maximumDatabase else { throw .invalidDatabase(String(text)) }
        return db
    }
}
