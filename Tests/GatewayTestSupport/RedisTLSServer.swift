import Foundation

/// A real `redis-server` speaking only TLS (`--port 0 --tls-port P`) on a free loopback port, with a
/// certificate made by `TestPKI` (Debian's redis-server 7 is built with TLS). Clients are verified
/// against the PKI's root when `requireClientCertificate` (`--tls-auth-clients yes`: mutual TLS),
/// else not asked for a certificate (`--tls-auth-clients no`).
public final class RedisTLSServer: @unchecked Sendable {  // immutable after init
    /// The TLS port on 127.0.0.1.
    public let port: UInt16
    /// Its working folder.
    public let directory: URL
    /// The PKI whose root signed the server (and client) certificates.
    public let pki: TestPKI
    /// The client certificate the readiness probe uses (and tests may use): chain and key paths.
    public let clientCertificate: (chainPath: String, keyPath: String)
    private let child: ChildProcess

    /// Starts the server with `certificate` (chain, key; default: the PKI's `127.0.0.1` certificate).
    /// - Throws: `SetupFailure` when it does not answer over TLS within 10 s.
    public init(pki: TestPKI = .shared, certificate: (chainPath: String, keyPath: String)? = nil,
                requireClientCertificate: Bool = false) throws {
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("attest-redis-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.pki = pki
        let server = certificate ?? pki.address
        let client = try pki.client("redis-client-\(UUID().uuidString.prefix(8))", subject: "gateway")
        clientCertificate = client
        let root = pki.root.certificate
        let started = try FreePortServer.start({ port in
            try ChildProcess("redis-server", [
                "--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
                "--tls-cert-file", server.chainPath, "--tls-key-file", server.keyPath, "--tls-ca-cert-file", root,
                "--tls-auth-clients", requireClientCertificate ? "yes" : "no",
                "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction", "--daemonize", "no",
            ])
        }, owns: { port, child in
            guard let info = try? ChildProcess.run("redis-cli", RedisTLSServer.cliArguments(port: port, root: root, client: client) + ["INFO", "server"]) else { return false }
            return info.output.split(whereSeparator: \.isNewline).contains { $0.trimmingCharacters(in: .whitespaces) == "process_id:\(child.pid)" }
        })
        port = started.port
        child = started.child
    }

    private static func cliArguments(port: UInt16, root: String, client: (chainPath: String, keyPath: String)) -> [String] {
        ["--tls", "--cacert", root, "--cert", client.chainPath, "--key", client.keyPath, "-h", "127.0.0.1", "-p", String(port)]
    }

    /// Runs `redis-cli` over TLS (with the client certificate) and returns its trimmed output.
    public func cli(_ arguments: String...) throws -> String {
        let result = try ChildProcess.run("redis-cli", RedisTLSServer.cliArguments(port: port, root: pki.root.certificate, client: clientCertificate) + arguments)
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The server's log (redis-server writes it to standard output).
    public var log: String { child.output }

    deinit {
        child.stop(signal: SIGKILL, grace: 1)
        try? FileManager.default.removeItem(at: directory)
    }
}
