import Glibc
import AttestCrypto

/// Whole-file reads and atomic writes for key and certificate files (POSIX, no Foundation).
///
/// Writes go to a fresh temporary file in the same folder, created with the final mode from the
/// start (so a private key is never readable by others, not even briefly), fsync'ed, then moved
/// into place: readers see the old file or the whole new one, never a partial write.
enum SecureFile {
    /// Largest file `read` accepts (PEM keys and certificates are a few KiB).
    static let maxReadLength = 1 << 20

    /// Whether something exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// The bytes of the file at `path`.
    /// - Throws: `SimulatorError.fileSystem` when it cannot be read or exceeds `maxReadLength`.
    static func read(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw error(path) }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw error(path)
            }
            if count == 0 { break }
            out += buffer[0..<count]
            guard out.count <= maxReadLength else {
                throw SimulatorError.fileSystem(path: path, detail: "larger than \(maxReadLength) bytes")
            }
        }
        return out
    }

    /// The UTF-8 text of the file at `path`.
    static func readText(_ path: String) throws -> String {
        String(decoding: try read(path), as: UTF8.self)
    }

    /// Writes `bytes` to `path` atomically with permission bits `mode`.
    /// - Parameter replace: when false, an existing file at `path` is left alone and the call
    ///   throws (`EEXIST`); when true, it is replaced.
    /// - Throws: `SimulatorError.fileSystem`.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t, replace: Bool) throws {
        let suffix = (try? SecureRandom.bytes(count: 6))?.map { String($0, radix: 16) }.joined() ?? String(getpid())
        let temporary = "\(path).tmp-\(getpid())-\(suffix)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw error(temporary) }
        var ok = false
        defer { if !ok { unlink(temporary) } }
        do {
            defer { close(fd) }
            guard fchmod(fd, mode) == 0 else { throw error(temporary) }  // the umask may have cleared bits
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw error(temporary)
                }
                offset += written
            }
            guard fsync(fd) == 0 else { throw error(temporary) }
        }
        if replace {
            guard rename(temporary, path) == 0 else { throw error(path) }
        } else {
            // link(2) fails with EEXIST instead of replacing: a concurrent writer never loses its file.
            guard link(temporary, path) == 0 else { throw error(path) }
            unlink(temporary)
        }
        ok = true
    }

    /// Creates `path` (and missing parents) as folders with mode 0755 (less the umask).
    static func makeDirectories(_ path: String) throws {
        guard !path.isEmpty else { return }
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw SimulatorError.fileSystem(path: path, detail: "exists and is not a folder")
            }
            return
        }
        var parent = path
        while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
        if let slash = parent.lastIndex(of: "/"), slash != parent.startIndex {
            try makeDirectories(String(parent[..<slash]))
        }
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw error(path) }
    }

    private static func error(_ path: String) -> SimulatorError {
        .fileSystem(path: path, detail: String(cString: strerror(errno)))
    }
}
