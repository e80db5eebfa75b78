import Foundation
import GatewayRules

/// The state store (`store`, DESIGN.md section 4): the in-process memory store or Redis.
///
/// YAML: `memory`, a Redis URL string (`redis://127.0.0.1:6379/0`, `unix:/run/redis.sock`; the grammar
/// is `GatewayRules.RedisURL`, the one `attestctl keys --store` reads too), or a mapping
/// `{url, username, password, password_file, command_timeout, connect_timeout}` whose `url` is one of
/// those strings. The password is given once: in the URL, as `password` (typically
/// `${REDIS_PASSWORD}`) or as `password_file` (read at load; one trailing newline stripped); it ends
/// up in `RedisURL.password` and is never printed.
/// Default when the key is absent: `memory` (with a check-config warning).
public struct StoreConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// Which store.
    public enum Kind: Sendable, Hashable {
        /// In-process store: same semantics, state lost on restart and not shared between replicas.
        case memory
        /// Redis (standalone or a Cluster node; every key of one App Attest key shares a hash tag).
        case redis(RedisURL)
    }

    /// Which store.
    public var kind: Kind
    /// Longest wait for one Redis command (the per-request commit script included) before the store
    /// counts as unavailable (default 500ms, 1ms...1m). Unused by the memory store.
    public var commandTimeout: Duration
    /// Longest wait for a Redis connection (default 1s, 1ms...1m). Unused by the memory store.
    public var connectTimeout: Duration

    /// Default `command_timeout`.
    public static let defaultCommandTimeout: Duration = .milliseconds(500)
    /// Default `connect_timeout`.
    public static let defaultConnectTimeout: Duration = .seconds(1)
    /// The default store: memory.
    public static let memory = StoreConfiguration(kind: .memory)

    /// Creates a store configuration; timeouts default as documented.
    public init(kind: Kind, commandTimeout: Duration = defaultCommandTimeout, connectTimeout: Duration = defaultConnectTimeout) {
        self.kind = kind
        self.commandTimeout = commandTimeout
        self.connectTimeout = connectTimeout
    }

    /// A problem reading `store.password_file`.
    public struct PasswordFileError: Error, Sendable {
        /// What went wrong, naming the file (never its content).
        public let message: String
    }

    /// The password held in the file at `path` (absolute): its text without one trailing `\n` or
    /// `\r\n`. Refused: unreadable, not UTF-8, empty, larger than 4KiB, or holding another line break.
    public static func readPasswordFile(_ path: String) -> Result<String, PasswordFileError> {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            return .failure(PasswordFileError(message: "cannot read \(path): it is a folder"))
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            return .failure(PasswordFileError(message: "cannot read \(path): \(exists ? "permission denied" : "no such file")"))
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: 4097) ?? Data()
        } catch {
            return .failure(PasswordFileError(message: "cannot read \(path): \(error.localizedDescription)"))
        }
        guard data.count <= 4096 else { return .failure(PasswordFileError(message: "\(path) is larger than 4KiB: it should hold only the password")) }
        guard var text = String(data: data, encoding: .utf8) else {
            return .failure(PasswordFileError(message: "\(path) is not UTF-8 text"))
        }
        // "\r\n" is one Character in Swift: removeLast() drops both bytes.
        if text.hasSuffix("\r\n") || text.hasSuffix("\n") { text.removeLast() }
        guard !text.isEmpty else { return .failure(PasswordFileError(message: "\(path) is empty")) }
        guard !text.contains(where: { $0.isNewline }) else {
            return .failure(PasswordFileError(message: "\(path) holds more than one line: it should hold only the password"))
        }
        return .success(text)
    }

    /// `memory` or the Redis URL without its password.
    public var description: String {
        switch kind {
        case .memory: return "memory"
        case .redis(let url): return url.description
        }
    }
}
