import Foundation
import GatewayTestSupport

/// A root file system holding only some binaries and the Debian libraries `ldd` resolves for them,
/// copied from this machine, nothing from the Swift toolchain: what a Debian 12 host with the runtime
/// packages and without Swift offers a binary. Commands run in it through `unshare --mount` (a private
/// mount namespace: its `/proc` disappears with the process) and `chroot`, keeping their process ID.
struct CleanRoot {
    /// The root folder.
    let path: URL
    /// The libraries copied in, as paths inside the root (`/lib/x86_64-linux-gnu/libssl.so.3`).
    let libraries: [String]

    /// Builds a root with `binaries` in `/bin` and their non-toolchain libraries at the paths the
    /// loader looks for them; plus empty `/proc`, `/tmp` and `/etc/attest-gateway`.
    init(binaries: [String]) throws {
        path = try DeployTools.temporaryDirectory("root")
        let fm = FileManager.default
        for folder in ["bin", "proc", "tmp", "etc/attest-gateway"] {
            try fm.createDirectory(at: path.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        let toolchain = try DeployTools.toolchainRoot()
        var copied = Set<String>()
        for binary in binaries {
            try fm.copyItem(atPath: binary, toPath: path.appendingPathComponent("bin/\((binary as NSString).lastPathComponent)").path)
            for library in try LinkedLibraries.of(binary).libraries {
                guard let source = library.path, !copied.contains(source) else { continue }
                let resolved = URL(fileURLWithPath: source).resolvingSymlinksInPath().path
                if resolved.hasPrefix(toolchain + "/") { continue }  // never the toolchain
                let target = path.appendingPathComponent(String(source.dropFirst()))
                try fm.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                try fm.copyItem(atPath: resolved, toPath: target.path)
                copied.insert(source)
            }
        }
        libraries = copied.sorted()
    }

    /// The command line running `arguments` (`/bin/attest-gateway`, ...) inside the root: a private
    /// mount namespace mounts `/proc` (the Swift runtime reads its arguments from /proc/self/cmdline),
    /// then `chroot`. `unshare`, `sh` and `chroot` exec each other, so the process ID is the binary's.
    func command(_ arguments: [String]) throws -> (executable: String, arguments: [String]) {
        let script = #"mount -t proc proc "$0/proc" && exec chroot "$0" "$@""#
        return (try DeployTools.system("unshare"), ["--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, path.path] + arguments)
    }

    /// Runs `arguments` inside the root to completion.
    func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let (executable, args) = try command(arguments)
        return try DeployTools.run(executable, args)
    }

    /// Starts `arguments` inside the root as a child process.
    func start(_ arguments: [String]) throws -> ChildProcess {
        let (executable, args) = try command(arguments)
        return try ChildProcess(executable, args)
    }

    /// Writes `text` to `relativePath` inside the root; returns its path as seen inside.
    @discardableResult
    func write(_ text: String, to relativePath: String) throws -> String {
        try text.write(to: path.appendingPathComponent(relativePath), atomically: true, encoding: .utf8)
        return "/" + relativePath
    }

    /// Removes the root.
    func remove() { try? FileManager.default.removeItem(at: path) }
}
