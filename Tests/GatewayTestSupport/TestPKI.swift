import Foundation

/// Test certificates made with the `openssl` command line in a temporary folder: a root CA, an
/// intermediate CA, leaves with chosen names, key types and validity periods (`openssl ca` with
/// `-startdate` / `-enddate`, which OpenSSL 3.0 supports, for expired and future certificates).
public final class TestPKI: Sendable {
    /// A certificate file (and its key).
    public struct Issued: Sendable {
        public let certificate: String
        public let key: String
        public let subject: String
    }

    /// Key algorithms `openssl` can make.
    public enum KeyType: Sendable {
        case p256, p384, rsa2048, rsa1024, ed25519
    }

    public let directory: String
    /// "CN=Test Root": self-signed P-256 root.
    public let root: Issued
    /// "CN=Test Intermediate", issued by `root`.
    public let intermediate: Issued
    /// "CN=Wrong Root": an unrelated root (verification against it fails).
    public let wrongRoot: Issued
    /// Leaf for `a.test` (P-256), chain file leaf + intermediate.
    public let a: (chainPath: String, keyPath: String)
    /// Leaf for `b.test` (RSA 2048), chain file leaf + intermediate.
    public let b: (chainPath: String, keyPath: String)
    /// Leaf for `*.w.test` (P-256), chain file leaf + intermediate.
    public let wildcard: (chainPath: String, keyPath: String)
    /// Leaf for the address 127.0.0.1 (P-256), chain file leaf + intermediate.
    public let address: (chainPath: String, keyPath: String)
    private static let lock = NSLock()

    /// The process-wide set (made on first use; its folder is removed when the test process exits).
    public static let shared: TestPKI = {
        do {
            let pki = try TestPKI()
            atexit { try? FileManager.default.removeItem(atPath: TestPKI.shared.directory) }
            return pki
        } catch {
            fatalError("TestPKI: \(error)")
        }
    }()

    public init() throws {
        directory = NSTemporaryDirectory() + "attest-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "[ req ]\ndistinguished_name = dn\n[ dn ]\n".write(toFile: directory + "/req.cnf", atomically: true, encoding: .utf8)
        try """
        [ ca ]
        default_ca = testca
        [ testca ]
        dir = \(directory)
        database = $dir/index.txt
        new_certs_dir = $dir/issued
        serial = $dir/serial
        default_md = sha256
        policy = policy_any
        unique_subject = no
        email_in_dn = no
        [ policy_any ]
        commonName = supplied
        """.write(toFile: directory + "/ca.cnf", atomically: true, encoding: .utf8)
        try "".write(toFile: directory + "/index.txt", atomically: true, encoding: .utf8)
        try "1000\n".write(toFile: directory + "/serial", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: directory + "/issued", withIntermediateDirectories: true)
        root = try TestPKI.selfSigned(directory, name: "root", subject: "Test Root")
        wrongRoot = try TestPKI.selfSigned(directory, name: "wrong-root", subject: "Wrong Root")
        intermediate = try TestPKI.issue(directory, name: "intermediate", subject: "Test Intermediate", by: root,
                                         extensions: "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
        a = try TestPKI.pair(directory, intermediate, "a", ["a.test"], .p256)
        b = try TestPKI.pair(directory, intermediate, "b", ["b.test"], .rsa2048)
        wildcard = try TestPKI.pair(directory, intermediate, "wildcard", ["*.w.test"], .p256)
        address = try TestPKI.pair(directory, intermediate, "address", ["127.0.0.1"], .p256)
    }

    private static func pair(_ directory: String, _ intermediate: Issued, _ name: String, _ names: [String],
                             _ keyType: KeyType) throws -> (chainPath: String, keyPath: String) {
        let leaf = try issue(directory, name: name, subject: names[0], by: intermediate, keyType: keyType,
                             extensions: leafExtensions(names, san: true))
        let chainPath = "\(directory)/\(name).chain.pem"
        let text = try String(contentsOfFile: leaf.certificate, encoding: .utf8) + String(contentsOfFile: intermediate.certificate, encoding: .utf8)
        try text.write(toFile: chainPath, atomically: true, encoding: .utf8)
        return (chainPath, leaf.key)
    }

    private static func leafExtensions(_ names: [String], san: Bool) -> String {
        var extensions = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        if san { extensions += "subjectAltName=" + names.map { $0.first!.isNumber ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ",") + "\n" }
        return extensions
    }

    /// Runs `openssl` with `arguments`; throws with its output when it fails.
    @discardableResult
    public static func openssl(_ arguments: [String]) throws -> String {
        let (status, output) = try ChildProcess.run("openssl", arguments)
        guard status == 0 else { throw TestPKIError.failed("openssl \(arguments.joined(separator: " ")): \(output)") }
        return output
    }

    /// A new private key file `<name>.key`.
    public static func makeKey(_ directory: String, name: String, type: KeyType) throws -> String {
        let path = "\(directory)/\(name).key"
        switch type {
        case .p256: try openssl(["ecparam", "-name", "prime256v1", "-genkey", "-out", path])  // with an EC PARAMETERS block
        case .p384: try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", path])
        case .rsa2048: try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path])
        case .rsa1024: try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", path])
        case .ed25519: try openssl(["genpkey", "-algorithm", "ED25519", "-out", path])
        }
        return path
    }

    private static func selfSigned(_ directory: String, name: String, subject: String) throws -> Issued {
        let key = try makeKey(directory, name: name, type: .p256)
        let certificate = "\(directory)/\(name).pem"
        try openssl(["req", "-config", "\(directory)/req.cnf", "-x509", "-new", "-key", key, "-subj", "/CN=\(subject)",
                     "-days", "3650", "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", certificate])
        return Issued(certificate: certificate, key: key, subject: "CN=\(subject)")
    }

    /// Issues `<name>.pem` for a new key, signed by `issuer`, valid from `start` to `end`
    /// (`YYYYMMDDHHMMSSZ`; default: from yesterday for `days` days).
    private static func issue(_ directory: String, name: String, subject: String, by issuer: Issued, keyType: KeyType = .p256,
                              extensions: String, start: String? = nil, end: String? = nil, days: Int = 365) throws -> Issued {
        lock.lock()
        defer { lock.unlock() }
        let key = try makeKey(directory, name: name, type: keyType)
        let request = "\(directory)/\(name).csr"
        let extFile = "\(directory)/\(name).ext"
        let certificate = "\(directory)/\(name).pem"
        try openssl(["req", "-config", "\(directory)/req.cnf", "-new", "-key", key, "-subj", "/CN=\(subject)", "-out", request])
        try extensions.write(toFile: extFile, atomically: true, encoding: .utf8)
        var arguments = ["ca", "-batch", "-config", "\(directory)/ca.cnf", "-cert", issuer.certificate, "-keyfile", issuer.key,
                         "-in", request, "-out", certificate, "-notext", "-extfile", extFile,
                         "-startdate", start ?? generalizedTime(Date().addingTimeInterval(-86_400))]
        if let end { arguments += ["-enddate", end] } else { arguments += ["-days", "\(days)"] }
        try openssl(arguments)
        return Issued(certificate: certificate, key: key, subject: "CN=\(subject)")
    }

    /// `YYYYMMDDHHMMSSZ` for `date`.
    public static func generalizedTime(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }

    /// A server certificate for `names` (DNS names, or IP addresses), issued by `issuer` (default the
    /// intermediate); `sanNames: false` leaves out subjectAltName.
    public func leaf(_ name: String, names: [String], keyType: KeyType = .p256, by issuer: Issued? = nil, sanNames: Bool = true,
              start: String? = nil, end: String? = nil, days: Int = 365) throws -> Issued {
        try TestPKI.issue(directory, name: name, subject: names.first ?? name, by: issuer ?? intermediate, keyType: keyType,
                          extensions: TestPKI.leafExtensions(names, san: sanNames), start: start, end: end, days: days)
    }

    /// A client certificate (extendedKeyUsage clientAuth, for mutual TLS) for `subject`, issued by
    /// `issuer` (default the intermediate); chain file (leaf, intermediate) and key paths.
    public func client(_ name: String, subject: String, by issuer: Issued? = nil) throws -> (chainPath: String, keyPath: String) {
        let leaf = try TestPKI.issue(directory, name: name, subject: subject, by: issuer ?? intermediate,
                                     extensions: "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n")
        return (try chain(name, [leaf, issuer ?? intermediate]), leaf.key)
    }

    /// A certificate for `names` usable as server and as client (extendedKeyUsage serverAuth and
    /// clientAuth), as Redis Cluster nodes need for their TLS cluster bus; chain and key paths.
    public func node(_ name: String, names: [String]) throws -> (chainPath: String, keyPath: String) {
        let extensions = TestPKI.leafExtensions(names, san: true).replacingOccurrences(of: "extendedKeyUsage=serverAuth", with: "extendedKeyUsage=serverAuth,clientAuth")
        let leaf = try TestPKI.issue(directory, name: name, subject: names[0], by: intermediate, extensions: extensions)
        return (try chain(name, [leaf, intermediate]), leaf.key)
    }

    /// A chain file `<name>.chain.pem` holding `certificates` in the given order.
    public func chain(_ name: String, _ certificates: [Issued]) throws -> String {
        let path = "\(directory)/\(name).chain.pem"
        var text = ""
        for certificate in certificates { text += try String(contentsOfFile: certificate.certificate, encoding: .utf8) }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A file `name` holding `text`.
    public func file(_ name: String, _ text: String) throws -> String {
        let path = "\(directory)/\(name)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Chain (leaf, intermediate) and key paths of a leaf issued by the intermediate.
    public func certificate(_ leaf: Issued) throws -> (chainPath: String, keyPath: String) {
        (try chain(URL(fileURLWithPath: leaf.certificate).deletingPathExtension().lastPathComponent, [leaf, intermediate]), leaf.key)
    }
}

/// A failed `openssl` command.
public enum TestPKIError: Error, CustomStringConvertible {
    case failed(String)
    public var description: String {
        switch self {
        case .failed(let text): return text
        }
    }
}
