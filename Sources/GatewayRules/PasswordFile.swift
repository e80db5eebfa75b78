#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading a secret from a file, one rule for the gateway (`store.password_file`) and `attestctl`
/// (`--password-file`): Kubernetes Secret volumes, systemd credentials, Docker secrets.
///
/// The file's text without one trailing `\n` or `\r\n`. Refused: missing, unreadable, a folder, not
/// UTF-8, empty, larger than 4KiB, or holding another line break. Messages name the path, never the
/// content.
public enum PasswordFile {
    /// Largest accepted file, in bytes.
    public static let maximumBytes = 4096

    /// A problem reading the file.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        /// What went wrong, naming the file (never its content).
        public let message: String
        /// `message`.
        public var description: String { message }
    }

    /// The secret held in the file at `path` (absolute, or relative to the current directory).
    public static func read(_ path: String) -> Result<String, Problem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Problem(message: "cannot read \(path): \(errorText(errno))")) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            return .failure(Problem(message: "cannot read \(path): it is a folder"))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: maximumBytes + 1)
        while bytes.count <= maximumBytes {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(Problem(message: "cannot read \(path): \(errorText(errno))"))
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= maximumBytes else {
            return .failure(Problem(message: "\(path) is larger than 4KiB: it should hold only the password"))
        }
        guard var text = String(validating: bytes, as: UTF8.self) else { return .failure(Problem(message: "\(path) is not UTF-8 text")) }
        // "\r\n" is one Character in Swift: removeLast() drops both bytes.
        if text.hasSuffix("\r\n") || text.hasSuffix("\n") { text.removeLast() }
        guard !text.isEmpty else { return .failure(Problem(message: "\(path) is empty")) }
        guard !text.contains(where: { $0.isNewline }) else {
            return .failure(Problem(message: "\(path) holds more than one line: it should hold only the password"))
        }
        return .success(text)
    }

    private static func errorText(_ code: Int32) -> String {
        switch code {
        case ENOENT: return "no such file"
        case EACCES: return "permission denied"
        default: return strerror(code).map { String(cString: $0) } ?? "errno \(code)"
        }
    }
}
