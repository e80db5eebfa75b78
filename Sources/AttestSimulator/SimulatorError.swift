/// Errors of the simulator: bad arguments, incomplete or inconsistent CA folders, key files, I/O.
///
/// Every failure is reported as one of these values with a human-readable detail; nothing is
/// written partially (files are written to a temporary name and renamed into place).
public enum SimulatorError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A CA folder holds some but not all of `root.pem`, `root.key.pem`, `intermediate.pem`,
    /// `intermediate.key.pem` (or none when loading); `missing` lists the absent file names.
    case incompleteCA(directory: String, missing: [String])
    /// The CA material is inconsistent (a key does not match its certificate, the intermediate is
    /// not issued by the root, a certificate or key cannot be parsed, ...).
    case invalidCA(String)
    /// A device key is not a P-256 private key, or cannot be parsed.
    case invalidKey(String)
    /// An argument is outside its documented range (counter overflow, bad validity window, ...).
    case invalidArgument(String)
    /// A file operation failed: `path` and the errno text.
    case fileSystem(path: String, detail: String)

    /// One line of text naming the failure and its detail (for logs and command-line errors).
    public var description: String {
        switch self {
        case .incompleteCA(let directory, let missing):
            return "no complete test CA in \(directory) (missing \(missing.joined(separator: ", ")))"
        case .invalidCA(let detail): return "invalid test CA: \(detail)"
        case .invalidKey(let detail): return "invalid device key: \(detail)"
        case .invalidArgument(let detail): return "invalid argument: \(detail)"
        case .fileSystem(let path, let detail): return "\(path): \(detail)"
        }
    }
}
