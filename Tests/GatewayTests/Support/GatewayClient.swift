import Foundation
import GatewayTestSupport
import XCTest

/// Which software device implementation a test drives.
enum DeviceKind {
    /// ../shared/tools/ref_device.py (child process).
    case ref
    /// AttestSimulator.SoftwareDevice (in-process).
    case sim
}

/// The client side of the protocol (DESIGN.md section 1) against a gateway listening on
/// 127.0.0.1:`port`, through curl: challenges, attestations, signed requests.
protocol GatewayClient {
    /// The gateway's data listener port.
    var port: UInt16 { get }
    /// A scratch folder for key files.
    var work: URL { get }
    /// The test CAs.
    var cas: TestCAs { get }
    /// How requests reach the data listener.
    var transport: ClientTransport { get }
}

extension GatewayClient {
    /// Plain HTTP/1.1 unless the client says otherwise.
    var transport: ClientTransport { .http1 }

    // MARK: - HTTP

    /// One request to the gateway's data listener through curl, over the client's transport unless
    /// `via` names another (an h2c request to a plain listener, for example).
    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
              chunked: Bool = false, via: ClientTransport? = nil) throws -> HTTPReply {
        try Curl.request(port: port, method: method, target: target, headers: headers, body: body, chunked: chunked,
                         transport: via ?? transport)
    }

    // MARK: - Protocol steps (client side)

    /// `POST /app-attest/v1/challenge`.
    func requestChallenge(keyId: String, purpose: String) throws -> HTTPReply {
        let body = try JSONSerialization.data(withJSONObject: ["keyId": keyId, "purpose": purpose])
        return try send("POST", "/app-attest/v1/challenge", headers: [("Content-Type", "application/json")], body: Array(body))
    }

    /// A challenge for `device` (fails the test unless the gateway answers 201 with one).
    func challenge(for device: ClientDevice, purpose: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let reply = try requestChallenge(keyId: device.keyId, purpose: purpose)
        XCTAssertEqual(reply.status, 201, "challenge: \(reply)", file: file, line: line)
        guard let challenge = reply.json["challenge"] as? String, reply.json["expiresAt"] is NSNumber else {
            throw ChildProcessError.notReady("no challenge in \(reply)")
        }
        return challenge
    }

    /// `POST /app-attest/v1/attest`.
    func attest(keyId: String, challenge: String, attestation: String) throws -> HTTPReply {
        let body = try JSONSerialization.data(withJSONObject: ["keyId": keyId, "challenge": challenge, "attestation": attestation])
        return try send("POST", "/app-attest/v1/attest", headers: [("Content-Type", "application/json")], body: Array(body))
    }

    /// A new device of `kind` (key generated, not attested).
    func makeDevice(_ kind: DeviceKind) throws -> ClientDevice {
        switch kind {
        case .ref:
            guard let ca = cas.ref else { throw XCTSkip(SharedFixtures.absentMessage) }
            return try RefDevice(directory: work, caDirectory: ca)
        case .sim:
            return try SimDevice(caDirectory: cas.sim)
        }
    }

    /// A new device whose key the gateway attested (challenge, attestation, 201).
    func attestedDevice(_ kind: DeviceKind = .ref, file: StaticString = #filePath, line: UInt = #line) throws -> ClientDevice {
        let device = try makeDevice(kind)
        let challenge = try self.challenge(for: device, purpose: "attest", file: file, line: line)
        let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                 caDirectory: device.caDirectory)
        let reply = try attest(keyId: device.keyId, challenge: challenge, attestation: attestation)
        XCTAssertEqual(reply.status, 201, "attest (\(device.kind)): \(reply)", file: file, line: line)
        guard reply.status == 201 else { throw ChildProcessError.notReady("attestation refused: \(reply)") }
        return device
    }

    /// A protected request signed by `device`: fetches an `assert` challenge unless one is given.
    func signedRequest(_ device: ClientDevice, method: String = "POST", target: String, body: [UInt8] = [],
                       counter: UInt32, challenge given: String? = nil, appId: String = E2EEnvironment.appId) throws -> SignedRequest {
        let challenge = try given ?? self.challenge(for: device, purpose: "assert")
        let assertion = try device.assertion(challenge: challenge, method: method, target: target, body: body,
                                             counter: counter, appId: appId)
        return SignedRequest(method: method, target: target, body: body, keyId: device.keyId, challenge: challenge,
                             assertion: assertion, counter: counter)
    }

    /// Sends a signed request (optionally with another method, target, body or extra fields: the
    /// evidence stays the same).
    func send(_ request: SignedRequest, method: String? = nil, target: String? = nil, body: [UInt8]? = nil,
              extraHeaders: [(String, String)] = [], via: ClientTransport? = nil) throws -> HTTPReply {
        let sentBody = body ?? request.body
        return try send(method ?? request.method, target ?? request.target, headers: request.evidenceHeaders + extraHeaders,
                        body: sentBody.isEmpty && (method ?? request.method) == "GET" ? nil : sentBody, via: via)
    }

}
