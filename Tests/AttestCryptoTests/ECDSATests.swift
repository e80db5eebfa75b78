import AttestCrypto
import Foundation
import XCTest

final class ECDSATests: XCTestCase {
    /// r || s (32 bytes each) from a strict DER signature.
    static func raw(_ der: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 2
        for _ in 0..<2 {
            let length = Int(der[i + 1])
            let value = Array(der[(i + 2)..<(i + 2 + length)].drop { $0 == 0 })
            out += [UInt8](repeating: 0, count: 32 - value.count) + value
            i += 2 + length
        }
        return out
    }

    func testDERSignaturesOf70To72BytesVerifyAndDamagedOnesFail() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let publicKey = try key.publicKey()
        var found: [Int: ([UInt8], [UInt8])] = [:]
        var attempt = 0
        while found.count < 3 && attempt < 5000 {
            attempt += 1
            let message = Array("message \(attempt)".utf8)
            let signature = try key.signature(for: message)
            if (70...72).contains(signature.count) && found[signature.count] == nil { found[signature.count] = (message, signature) }
        }
        XCTAssertEqual(found.keys.sorted(), [70, 71, 72], "could not get every DER length")
        for (length, (message, signature)) in found {
            XCTAssertTrue(ECDSASignature.isStrictDER(signature))
            XCTAssertEqual(publicKey.verify(signature: signature, message: message), .valid, "length \(length)")
            XCTAssertEqual(publicKey.verify(signature: signature, message: message + [0]), .invalid)
            XCTAssertEqual(publicKey.verify(signature: Array(signature.dropLast()), message: message), .malformedEncoding, "truncated \(length)")
            XCTAssertEqual(publicKey.verify(signature: signature + [0], message: message), .malformedEncoding, "padded \(length)")
            XCTAssertEqual(publicKey.verify(signature: Self.raw(signature), message: message), .malformedEncoding, "raw r||s")
            // Long-form length for a short content: BER, not DER.
            let longForm = [0x30, 0x81] + signature.dropFirst()
            XCTAssertEqual(publicKey.verify(signature: Array(longForm), message: message), .malformedEncoding)
            // A needless leading zero in r.
            let rLength = Int(signature[3])
            var padded = [0x30, signature[1] + 1, 0x02, UInt8(rLength + 1), 0x00] + signature[4...]
            if signature[4] & 0x80 == 0 {
                XCTAssertEqual(publicKey.verify(signature: padded, message: message), .malformedEncoding)
            }
            padded = []
            // Prehashed digest API agrees with the message API.
            XCTAssertEqual(publicKey.verify(signature: signature, digest: SHA256.hash(message)), .valid)
        }
        XCTAssertEqual(publicKey.verify(signature: [], message: []), .malformedEncoding)
        XCTAssertEqual(publicKey.verify(signature: [UInt8](repeating: 0x30, count: 64), message: []), .malformedEncoding)
    }

    func testSignatureOverDigestIsNotASignatureOverMessage() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let nonce = try SecureRandom.bytes(count: 32)
        let prehashed = try key.signature(forDigest: nonce)
        XCTAssertEqual(try key.publicKey().verify(signature: prehashed, digest: nonce), .valid)
        XCTAssertEqual(try key.publicKey().verify(signature: prehashed, message: nonce), .invalid)
    }

    func testKeysWithLeadingZeroCoordinates() throws {
        var zeroX: ECPrivateKey? = nil
        var zeroY: ECPrivateKey? = nil
        var tries = 0
        while (zeroX == nil || zeroY == nil) && tries < 20_000 {
            tries += 1
            let key = try ECPrivateKey(generatingOn: .p256)
            if key.publicKeyPoint[1] == 0 && zeroX == nil { zeroX = key }
            if key.publicKeyPoint[33] == 0 && zeroY == nil { zeroY = key }
        }
        for key in [zeroX, zeroY] {
            let key = try XCTUnwrap(key)
            XCTAssertEqual(key.publicKeyPoint.count, 65)
            let fromPoint = try P256PublicKey(x963: key.publicKeyPoint)
            XCTAssertEqual(fromPoint.x963Representation, key.publicKeyPoint)
            let fromSPKI = try P256PublicKey(subjectPublicKeyInfo: fromPoint.subjectPublicKeyInfo)
            XCTAssertEqual(fromSPKI.x963Representation, key.publicKeyPoint)
            let message = Array("leading zero".utf8)
            XCTAssertEqual(fromSPKI.verify(signature: try key.signature(for: message), message: message), .valid)
            // The PKCS#8 round trip keeps the padded point.
            XCTAssertEqual(try ECPrivateKey(pem: key.pkcs8PEM()).publicKeyPoint, key.publicKeyPoint)
        }
    }

    func testInvalidPublicKeysAreRefused() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        var point = key.publicKeyPoint
        XCTAssertNoThrow(try P256PublicKey(x963: point))
        point[64] ^= 1  // off the curve
        XCTAssertThrowsError(try P256PublicKey(x963: point))
        XCTAssertThrowsError(try P256PublicKey(x963: Array(key.publicKeyPoint.dropLast())))
        XCTAssertThrowsError(try P256PublicKey(x963: [0x02] + key.publicKeyPoint.dropFirst()))
        XCTAssertThrowsError(try P256PublicKey(x963: [0x04] + [UInt8](repeating: 0, count: 64)))
        XCTAssertThrowsError(try P256PublicKey(x963: []))
        let p384 = try ECPrivateKey(generatingOn: .p384)
        XCTAssertThrowsError(try P256PublicKey(subjectPublicKeyInfo: p384.subjectPublicKeyInfo()))
        XCTAssertThrowsError(try P256PublicKey(subjectPublicKeyInfo: key.subjectPublicKeyInfo() + [0]))
        XCTAssertThrowsError(try P256PublicKey(subjectPublicKeyInfo: [0x30, 0x00]))
        XCTAssertEqual(try P256PublicKey(pem: PEM.encode(key.subjectPublicKeyInfo(), label: "PUBLIC KEY")).x963Representation, key.publicKeyPoint)
    }

    func testPKCS8RoundTripsAndP384Signing() throws {
        for curve in ECCurve.allCases {
            let key = try ECPrivateKey(generatingOn: curve)
            XCTAssertEqual(key.curve, curve)
            XCTAssertEqual(key.publicKeyPoint.count, 1 + 2 * curve.coordinateByteCount)
            let pem = try key.pkcs8PEM()
            XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
            let again = try ECPrivateKey(pem: pem)
            XCTAssertEqual(again.publicKeyPoint, key.publicKeyPoint)
            XCTAssertEqual(try ECPrivateKey(pkcs8DER: key.pkcs8DER()).publicKeyPoint, key.publicKeyPoint)
            XCTAssertThrowsError(try ECPrivateKey(pkcs8DER: key.pkcs8DER() + [0]))
        }
        XCTAssertThrowsError(try ECPrivateKey(pem: "not a key"))
        // P-384 / SHA-384 signatures verify through a certificate chain (see X509Tests); here: DER shape.
        let p384 = try ECPrivateKey(generatingOn: .p384)
        let signature = try p384.signature(for: Array("x".utf8), digest: .sha384)
        XCTAssertTrue(ECDSASignature.isStrictDER(signature, maxScalarBytes: 48))
    }

    func testParsedKeyIsSafeToShareAcrossThreads() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let publicKey = try key.publicKey()
        let messages = (0..<8).map { Array("m\($0)".utf8) }
        let signatures = try messages.map { try key.signature(for: $0) }
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 400) { i in
            let m = i % messages.count
            let good = publicKey.verify(signature: signatures[m], message: messages[m]) == .valid
            let bad = publicKey.verify(signature: signatures[m], message: messages[(m + 1) % messages.count]) == .invalid
            results.record(good && bad)
        }
        XCTAssertEqual(results.failures, 0)
        XCTAssertEqual(results.count, 400)
    }
}

final class Results: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private(set) var count = 0
    private(set) var failures = 0
    func record(_ ok: Bool) {
        lock.lock()
        count += 1
        if !ok { failures += 1 }
        lock.unlock()
    }
}
