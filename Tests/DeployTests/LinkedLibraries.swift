import Foundation

/// The shared libraries a binary loads, as `ldd` resolves them, and what the release requires of them:
/// no Swift runtime library (the standard library, Foundation and Dispatch are linked statically), no
/// file from the Swift toolchain, nothing unresolved; every library owned by a Debian package.
struct LinkedLibraries: Equatable {
    /// One line of `ldd`'s output.
    struct Library: Equatable {
        /// The name the binary asks for (`libssl.so.3`), or the loader's path.
        let name: String
        /// Where it resolved; nil when `ldd` said `not found` or for the kernel's vDSO.
        let path: String?
    }

    let libraries: [Library]

    /// Parses `ldd`'s output: `name => /path (0x...)`, `name => not found`, `/lib64/ld-linux... (0x...)`,
    /// `linux-vdso.so.1 (0x...)` (left out: it is in the kernel).
    init(lddOutput: String) {
        var libraries: [Library] = []
        for raw in lddOutput.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if let arrow = line.range(of: " => ") {
                let name = String(line[..<arrow.lowerBound])
                let rest = line[arrow.upperBound...]
                let path = rest.hasPrefix("not found") ? nil : rest.split(separator: " ").first.map(String.init)
                libraries.append(Library(name: name, path: path))
            } else if line.hasPrefix("/"), let path = line.split(separator: " ").first {
                libraries.append(Library(name: String(path), path: String(path)))
            }
        }
        self.libraries = libraries
    }

    /// Runs `ldd` on `binary`.
    static func of(_ binary: String) throws -> LinkedLibraries {
        LinkedLibraries(lddOutput: try DeployTools.output(try DeployTools.system("ldd"), [binary]))
    }

    /// Whether `name` is a library of the Swift runtime (standard library, Foundation, Dispatch, XCTest).
    static func isSwiftRuntime(_ name: String) -> Bool {
        let base = (name as NSString).lastPathComponent
        return ["libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime", "libXCTest"]
            .contains { base.hasPrefix($0) }
    }

    /// What breaks the release's promise, one sentence each (empty when the binary is self-contained).
    func violations(toolchainRoot: String) -> [String] {
        libraries.compactMap { library in
            guard let path = library.path else { return "\(library.name) is not found" }
            if LinkedLibraries.isSwiftRuntime(library.name) { return "\(library.name) (\(path)) is a Swift runtime library" }
            let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            if resolved.hasPrefix(toolchainRoot + "/") { return "\(library.name) comes from the toolchain (\(resolved))" }
            return nil
        }
    }

    /// The Debian packages owning the libraries (`dpkg -S`; Debian 12 registers some under /usr/lib
    /// while the loader finds them through the /lib link), e.g. `libssl3`.
    /// - Throws: when a library belongs to no package.
    func debianPackages() throws -> Set<String> {
        var packages = Set<String>()
        for library in libraries {
            guard let path = library.path else { throw DeployTools.SetupError.commandFailed("ldd", "\(library.name) not found") }
            let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            var owner: String?
            for candidate in [path, resolved, "/usr" + path, "/usr" + resolved] {
                let result = try DeployTools.run(try DeployTools.system("dpkg"), ["-S", candidate])
                if result.status == 0, let first = result.output.split(separator: "\n").first,
                   let package = first.split(separator: ":").first {
                    owner = String(package)
                    break
                }
            }
            guard let owner else { throw DeployTools.SetupError.commandFailed("dpkg -S \(path)", "no package owns it") }
            packages.insert(owner)
        }
        return packages
    }
}
