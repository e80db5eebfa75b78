import Foundation
import GatewayIO
import GatewayRedis
import GatewayRules

/// Where `attestctl keys` finds Redis and how it logs in, never from argv (issue 9: a password on the
/// command line is visible to every user through `ps` and stays in shell history).
///
/// - `--store URL`: the grammar of the configuration's `store:` (`GatewayRules.RedisURL`), **without**
///   a password: a URL holding one (`redis://:pw@host`, `unix:...?password=pw`) is refused (exit 2)
///   with a pointer to the alternatives below. `--password` is refused the same way.
/// - The password, first found: `--password-file FILE` (one trailing newline stripped), the
///   environment variable `ATTESTCTL_REDIS_PASSWORD`, then `REDISCLI_AUTH` (as `redis-cli` reads it).
/// - `--username NAME` (Redis 6 ACL user; needs a password) or `ATTESTCTL_REDIS_USERNAME`.
/// - TLS (`rediss://`, `rediss+cluster://`): `--tls-ca FILE` (PEM CA bundle; default the system
///   store), `--tls-cert FILE` and `--tls-key FILE` (client certificate for mutual TLS), as the
///   configuration's `store.tls`; the certificate is always verified.
struct RedisLogin {
    /// The options it reads (for `DeviceCommandOptions`).
    static let options: Set<String> = ["store", "password-file", "username", "password", "tls-ca", "tls-cert", "tls-key", "wait-replicas"]
    /// The one-line help.
    static let help = "--store redis://HOST:PORT/DB|redis+cluster://HOST:PORT[,HOST:PORT...]|unix:/PATH/redis.sock [--username U] [--password-file F] [--tls-ca F] [--tls-cert F --tls-key F] [--wait-replicas N] (rediss://, rediss+cluster://: TLS; N as the gateway's store.wait_replicas); password from --password-file, ATTESTCTL_REDIS_PASSWORD or REDISCLI_AUTH"

    private static let alternatives = "give it with --password-file FILE or the environment variable ATTESTCTL_REDIS_PASSWORD (or REDISCLI_AUTH): a password on the command line is visible to every user (ps) and stays in shell history"

    /// The URL with the credentials filled in.
    /// - Throws: `DeviceCommandError.usage` for a malformed URL, a password on argv, an unreadable
    ///   password file or a user name without a password.
    static func url(_ options: DeviceCommandOptions, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> RedisURL {
        if try options.value("password") != nil {
            throw DeviceCommandError.usage("--password is not accepted: \(alternatives)")
        }
        return try url(try options.required("store"), option: "store", passwordFile: try options.value("password-file"),
                       username: try options.value("username"), environment: environment)
    }

    /// The TLS client context for a `rediss://` URL from `--tls-ca`, `--tls-cert` and `--tls-key`
    /// (nil for a plain URL: then those options are refused).
    /// - Throws: `DeviceCommandError.usage` for half a client certificate, TLS options on a plain URL
    ///   or files OpenSSL cannot load.
    static func tlsContext(_ options: DeviceCommandOptions, url: RedisURL) throws -> TLSClientContext? {
        let here = FileManager.default.currentDirectoryPath
        let ca = try options.value("tls-ca").map { NetworkSyntax.resolvePath($0, baseDirectory: here) }
        let cert = try options.value("tls-cert").map { NetworkSyntax.resolvePath($0, baseDirectory: here) }
        let key = try options.value("tls-key").map { NetworkSyntax.resolvePath($0, baseDirectory: here) }
        guard url.tls else {
            if ca != nil || cert != nil || key != nil {
                throw DeviceCommandError.usage("--tls-ca, --tls-cert and --tls-key need a rediss:// or rediss+cluster:// store")
            }
            return nil
        }
        guard (cert == nil) == (key == nil) else { throw DeviceCommandError.usage("--tls-cert and --tls-key go together (mutual TLS)") }
        do {
            return try TLSClientContext(settings: RedisStore.tlsSettings(caPath: ca, clientCertificate: cert.flatMap { c in key.map { (c, $0) } }))
        } catch {
            throw DeviceCommandError.usage("--store TLS: \(error)")
        }
    }

    /// `url(_:environment:)` for a URL given as `--OPTION` (`bench-prepare --redis`).
    static func url(_ text: String, option: String, passwordFile: String? = nil, username: String? = nil,
                    environment: [String: String] = ProcessInfo.processInfo.environment) throws -> RedisURL {
        var url: RedisURL
        do {
            url = try RedisURL(parsing: text, baseDirectory: FileManager.default.currentDirectoryPath)
        } catch {
            throw DeviceCommandError.usage("--\(option): \(error)")
        }
        if url.password != nil {
            throw DeviceCommandError.usage("--\(option) holds a password: remove it from the URL and \(alternatives)")
        }
        if let file = passwordFile {
            let path = NetworkSyntax.resolvePath(file, baseDirectory: FileManager.default.currentDirectoryPath)
            switch PasswordFile.read(path) {
            case .success(let password): url.password = password
            case .failure(let problem): throw DeviceCommandError.usage("--password-file: \(problem.message)")
            }
        } else if let password = environment["ATTESTCTL_REDIS_PASSWORD"] ?? environment["REDISCLI_AUTH"], !password.isEmpty {
            url.password = password
        }
        if let username = username ?? environment["ATTESTCTL_REDIS_USERNAME"], !username.isEmpty {
            guard url.password != nil else { throw DeviceCommandError.usage("--username needs a password: \(alternatives)") }
            if url.username == nil { url.username = username }
        }
        return url
    }
}
