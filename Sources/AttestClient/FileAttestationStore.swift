import Foundation

/// An `AttestationStore` in a directory: one file per item (mode 0600), replaced atomically. The
/// default on Linux; usable anywhere a process has a private directory.
public struct FileAttestationStore: AttestationStore {
    /// The directory holding the items (created 0700 on first write).
    public let directory: URL

    /// A store in `directory`.
    public init(directory: URL) {
        self.directory = directory
    }

    /// The default directory for `name`: `~/.attest-client/<name>` on Linux, `Application Support/attest-client/<name>`
    /// on Apple platforms.
    public static func defaultDirectory(name: String = "default") -> URL {
        #if os(Linux)
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".attest-client").appendingPathComponent(name)
        #else
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("attest-client").appendingPathComponent(name)
        #endif
    }

    /// The file of item `name` (names are the SDK's own identifiers; anything but `[A-Za-z0-9._-]` becomes `_`).
    func file(_ name: String) -> URL {
        let safe = String(name.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-" ? $0 : "_" })
        return directory.appendingPathComponent(safe)
    }

    /// The file's bytes, nil when absent or unreadable.
    public func data(for name: String) -> Data? {
        try? Data(contentsOf: file(name))
    }

    /// The file's bytes, nil when there is no file.
    /// - Throws: the file system's error when the file exists but cannot be read.
    public func read(_ name: String) throws -> Data? {
        let url = file(name)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try Data(contentsOf: url)
    }

    /// Writes (atomically, mode 0600) or removes the item's file.
    /// - Throws: file system errors.
    public func set(_ data: Data?, for name: String) throws {
        let url = file(name)
        guard let data else {
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
            return
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UInt32.random(in: 0 ... .max)).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        if rename(temporary.path, url.path) != 0 {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }
}
