import AttestCrypto
import Foundation
import GatewayTestSupport
import XCTest

/// A device key held and used by the `openssl` command line (an independent signer, DESIGN.md
/// section 8): `openssl ecparam -genkey`, the point from `openssl ec -pubout`, signatures from
/// `openssl dgst -sha256 -sign` (DER ECDSA over SHA-256 of the bytes).
final class OpenSSLDeviceKey {
    let keyFile: URL
    /// The public key as sent: X9.63 bytes (65 for P-256, 97 for P-384).
    let point: [UInt8]

    /// Generates a key on `curve` (`prime256v1`, or `secp384r1` for the wrong-curve cases) in `directory`.
    init(directory: URL, curve: String = "prime256v1") throws {
        _ = try ChildProcess.require("openssl")
        keyFile = directory.appendingPathComponent("device-\(UUID().uuidString.prefix(8)).pem")
        let generated = try ChildProcess.run("openssl", ["ecparam", "-name", curve, "-genkey", "-noout", "-out", keyFile.path])
        guard generated.status == 0 else { throw ChildProcessError.notReady("openssl ecparam: \(generated.output)") }
        let derFile = keyFile.appendingPathExtension("pub.der")
        let exported = try ChildProcess.run("openssl", ["ec", "-in", keyFile.path, "-pubout", "-outform", "DER", "-out", derFile.path])
        guard exported.status == 0, let spki = FileManager.default.contents(atPath: derFile.path) else {
            throw ChildProcessError.notReady("openssl ec -pubout: \(exported.output)")
        }
        // SubjectPublicKeyInfo ends with the BIT STRING holding the uncompressed point.
        point = Array(spki.suffix(curve == "prime256v1" ? 65 : 97))
        guard point.first == 0x04 else { throw ChildProcessError.notReady("unexpected SPKI \(Data(spki).base64EncodedString())") }
    }

    /// The point, standard base64.
    var publicKeyBase64: String { Data(point).base64EncodedString() }

    /// keyId = SHA-256 of the point, standard base64 (the `kid`).
    var kid: String { Data(SHA256.hash(point)).base64EncodedString() }

    /// DER ECDSA signature over SHA-256 of `message`, by `openssl dgst -sha256 -sign`.
    func sign(_ message: [UInt8]) throws -> [UInt8] {
        let input = keyFile.appendingPathExtension("msg-\(UUID().uuidString.prefix(6))")
        let output = input.appendingPathExtension("sig")
        _ = FileManager.default.createFile(atPath: input.path, contents: Data(message))
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: output)
        }
        let signed = try ChildProcess.run("openssl", ["dgst", "-sha256", "-sign", keyFile.path, "-out", output.path, input.path])
        guard signed.status == 0, let signature = FileManager.default.contents(atPath: output.path) else {
            throw ChildProcessError.notReady("openssl dgst -sign: \(signed.output)")
        }
        return Array(signature)
    }

}
