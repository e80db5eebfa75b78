import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
import GatewayRules

/// `attestctl simulate --gateway URL --app-id ID --ca DIR [--env development] [--route /v1/purchases]
/// [--requests 5] [--prefix /app-attest/v1] [--key KEYFILE] [--ios27-ext VERSION] [--method POST]
/// [--bind NAME:VALUE]... [--timeout SECONDS]`
///
/// Plays the whole client side of App Attest against a running gateway (DESIGN.md section 1) with a
/// software device whose certificates chain to the test CA in DIR (the gateway must pin DIR/root.pem):
/// 1. `POST {prefix}/challenge` `{"keyId", "purpose": "attest"}` -> expects 201 `{"challenge", "expiresAt"}`;
/// 2. mints an attestation with clientDataHash = SHA-256(challenge bytes) and
///    `POST {prefix}/attest` `{"keyId", "challenge", "attestation"}` -> expects 201;
/// 3. N times: a challenge with purpose "assert", then the protected request (method, route + `?n=i`,
///    a JSON body that differs each time) with `App-Attest-Key-Id`, `App-Attest-Challenge`,
///    `App-Attest-Assertion` over ClientDataBinding.v1(challenge, method, target as sent,
///    SHA-256(body), bound fields) -> expects 2xx from the upstream;
/// 4. replays the last protected request unchanged -> expects 401.
///
/// `--device-key` (DESIGN.md section 8) plays a device key without App Attest instead: a P-256 key
/// (`backing` `secure_enclave`; `--ios-unsupported`: `software`, as on the simulator and devices
/// without App Attest), registered with `POST {prefix}/challenge` `{"kid", "purpose": "register"}` and
/// `POST {prefix}/register` (the device key's signature over the registration client data, optional
/// `--integrity CODE,...`) -> expects 201 with tier `device`; then N requests signed with
/// `App-Attest-Signature` over the same binding v1 client data (the route needs `min_tier: device`)
/// -> 2xx, and the replay -> 401. `--ca` is not needed there.
///
/// Prints one block per step (request, status, relevant response headers, body) and a final
/// `summary:` line. Exit status 0 when every step answered as expected, 1 otherwise (or on network
/// errors), 2 on usage errors. `--key` reuses that key file, creating it (0600) if absent; without
/// it the device key is ephemeral. `--bind NAME:VALUE` sends the header and binds it in client data.
enum SimulateCommand {
    static let usage = """
    attestctl simulate --gateway http://HOST:PORT --app-id TEAMID.bundle --ca DIR [--env development|production] \
    [--route /v1/purchases] [--requests 5] [--prefix /app-attest/v1] [--key KEYFILE] [--ios27-ext VERSION] \
    [--method POST] [--bind NAME:VALUE]... [--timeout SECONDS]
    attestctl simulate --device-key|--ios-unsupported --gateway http://HOST:PORT --app-id TEAMID.bundle \
    [--integrity CODE,...] [--route /v1/purchases] [--requests 5] [--prefix /app-attest/v1] [--method POST] \
    [--bind NAME:VALUE]... [--timeout SECONDS]
    """

    static func run(_ arguments: [String]) -> Int32 {
        if let first = arguments.first, ["-h", "--help", "help"].contains(first) {
            print("usage: \(usage)")
            return 0
        }
        do {
            var simulation = try Simulation(arguments)
            return simulation.run() ? 0 : 1
        } catch DeviceCommandError.usage(let message) {
            FileHandle.standardError.write(Data("attestctl simulate: \(message)\nusage: \(usage)\n".utf8))
            return 2
        } catch {
            FileHandle.standardError.write(Data("attestctl simulate: \(error)\n".utf8))
            return 1
        }
    }
}

/// One run of `attestctl simulate`.
private struct Simulation {
    let gateway: SimulateGatewayURL
    let appId: String
    /// The test CA (App Attest flow only).
    let ca: TestCA?
    /// `--device-key` / `--ios-unsupported`: the backing of a device key registered without App Attest.
    let deviceKeyBacking: String?
    /// `--integrity`: codes sent with the device-key registration.
    let integrity: [String]
    let environment: AppAttestEnvironment
    let route: String
    let requests: Int
    let prefix: String
    let ios27: IOS27Extension?
    let method: String
    let bound: [(name: String, value: String)]
    let timeout: Int
    var device: SoftwareDevice
    let keyNote: String

    init(_ arguments: [String]) throws {
        let options = try DeviceCommandOptions(arguments, valued: ["gateway", "app-id", "ca", "env", "route", "requests", "prefix", "key",
                                                                   "ios27-ext", "validation-category", "method", "bind", "timeout",
                                                                   "integrity"],
                                               flags: ["device-key", "ios-unsupported"])
        gateway = try SimulateGatewayURL(try options.required("gateway"))
        appId = try options.required("app-id")
        if options.flag("device-key") && options.flag("ios-unsupported") {
            throw DeviceCommandError.usage("--device-key and --ios-unsupported are two flows: choose one")
        }
        deviceKeyBacking = options.flag("ios-unsupported") ? "software" : (options.flag("device-key") ? "secure_enclave" : nil)
        integrity = try options.value("integrity").map { $0.split(separator: ",").map(String.init) } ?? []
        if deviceKeyBacking == nil, !integrity.isEmpty { throw DeviceCommandError.usage("--integrity goes with --device-key or --ios-unsupported") }
        if let problem = IntegrityCodes.problem(integrity) { throw DeviceCommandError.usage("--integrity: \(problem)") }
        if deviceKeyBacking == nil {
            ca = try TestCA.load(directory: try options.required("ca"))
        } else {
            ca = try options.value("ca").map { try TestCA.load(directory: $0) }
        }
        environment = try DeviceCommand.environment(try options.value("env") ?? "development")
        route = try options.value("route") ?? "/v1/purchases"
        prefix = try options.value("prefix") ?? "/app-attest/v1"
        for (name, path) in [("route", route), ("prefix", prefix)] where !path.hasPrefix("/") {
            throw DeviceCommandError.usage("--\(name) must start with /")
        }
        requests = try options.integer("requests", default: 5, in: 0...10_000) ?? 5
        timeout = try options.integer("timeout", default: 10, in: 1...3600) ?? 10
        ios27 = try DeviceCommand.ios27Extension(options)
        method = (try options.value("method") ?? "POST").uppercased()
        guard !method.isEmpty, method.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else {
            throw DeviceCommandError.usage("--method must be a token such as POST")
        }
        bound = try options.all("bind").map(DeviceCommand.boundField)
        if let keyFile = try options.value("key") {
            if FileManager.default.fileExists(atPath: keyFile) {
                device = try SoftwareDevice.load(from: keyFile)
                keyNote = "key file \(keyFile) (reused)"
            } else {
                device = try SoftwareDevice()
                try device.save(to: keyFile)
                keyNote = "key file \(keyFile) (created)"
            }
        } else {
            device = try SoftwareDevice()
            keyNote = "ephemeral key"
        }
    }

    /// A request as sent (kept for the replay).
    struct Sent {
        var method: String
        var target: String
        var headers: [(name: String, value: String)]
        var body: [UInt8]
    }

    mutating func run() -> Bool {
        if let backing = deviceKeyBacking { return runDeviceKey(backing: backing) }
        guard let ca else { return summary(false, "no test CA") }
        let keyId = Base64.encode(device.keyId)
        print("attestctl simulate: gateway http://\(gateway.hostHeader)\(gateway.basePath), app \(appId), environment \(environment.rawValue)")
        print("device keyId \(keyId) (\(keyNote)); test CA root: \(ca.root.subject)")
        print("")

        // 1. challenge for the attestation.
        guard let (attestChallenge, _) = challenge(step: "1", purpose: "attest", keyId: keyId) else {
            return summary(false, "no attestation challenge")
        }
        // 2. attestation.
        let minted: MintedAttestation
        do {
            minted = try device.mintAttestation(ca: ca, appId: appId, environment: environment, challenge: attestChallenge,
                                                options: AttestationOptions(ios27Extension: ios27))
        } catch {
            print("cannot mint the attestation: \(error)")
            return summary(false, "attestation not minted")
        }
        let attestBody = JSONText.object([("keyId", .string(keyId)), ("challenge", .string(Base64.encode(attestChallenge))),
                                          ("attestation", .string(Base64.encode(minted.attestationObject)))])
        let attest = exchange(step: "2", title: "attestation (\(minted.attestationObject.count) bytes CBOR)",
                              Sent(method: "POST", target: gateway.basePath + prefix + "/attest",
                                   headers: [("Content-Type", "application/json")], body: Array(attestBody.rendered.utf8)),
                              expect: { $0 == 201 }, expectation: "201")
        guard let attest, attest.status == 201 else { return summary(false, "attestation refused") }

        // 3. protected requests.
        var accepted = 0
        var last: Sent? = nil
        for n in 1...max(requests, 1) where requests > 0 {
            guard let (challengeBytes, challengeText) = challenge(step: "3.\(n)a", purpose: "assert", keyId: keyId) else { continue }
            let separator = route.contains("?") ? "&" : "?"
            let target = gateway.basePath + route + separator + "n=\(n)"
            let body: [UInt8] = ["GET", "HEAD", "DELETE", "OPTIONS"].contains(method)
                ? [] : Array(JSONText.object([("item", .string("sku-\(n)")), ("quantity", .integer(Int64(n))),
                                               ("note", .string("attestctl simulate request \(n) of \(requests)"))]).rendered.utf8)
            let assertion: MintedAssertion
            do {
                assertion = try device.mintAssertion(appId: appId, challenge: challengeBytes, method: method, target: target, body: body,
                                                     boundFields: bound, options: AssertionOptions(ios27Extension: ios27))
            } catch {
                print("cannot mint assertion \(n): \(error)\n")
                continue
            }
            var headers: [(name: String, value: String)] = [("App-Attest-Key-Id", keyId), ("App-Attest-Challenge", challengeText),
                                                            ("App-Attest-Assertion", Base64.encode(assertion.assertionObject))]
            if !body.isEmpty { headers.append(("Content-Type", "application/json")) }
            headers += bound
            let sent = Sent(method: method, target: target, headers: headers, body: body)
            last = sent
            if let response = exchange(step: "3.\(n)b", title: "protected request \(n)/\(requests), counter \(assertion.counter)", sent,
                                       expect: { (200..<300).contains($0) }, expectation: "2xx"),
               (200..<300).contains(response.status) {
                accepted += 1
            }
        }

        // 4. replay.
        let (replayRefused, replayNote) = replay(last, requests: requests, what: "protected request",
                                                 proof: "same challenge and assertion")
        let ok = accepted == requests && replayRefused
        return summary(ok, "attestation 201, protected requests \(accepted)/\(requests) accepted, replay \(replayNote)")
    }

    /// Step 4 of both flows: sends `last` again and expects `401`. Returns whether it was refused (true
    /// when no request was sent: nothing to replay) and the summary's note ("401 refused (challenge_unknown)").
    private func replay(_ last: Sent?, requests: Int, what: String, proof: String) -> (refused: Bool, note: String) {
        guard let last else { return (requests == 0, "skipped (no \(what))") }
        let response = exchange(step: "4", title: "replay of the last \(what) (\(proof))", last,
                                expect: { $0 == 401 }, expectation: "401")
        let reason = response.flatMap { reasonCode($0) } ?? "-"
        let note = response.map { "\($0.status)\($0.status == 401 ? " refused" : " NOT refused") (\(reason))" } ?? "no answer"
        return (response?.status == 401, note)
    }

    /// The `--device-key` / `--ios-unsupported` flow: register the device key without App Attest, sign
    /// requests with it, replay the last one.
    func runDeviceKey(backing: String) -> Bool {
        let key = device.privateKey
        let point = key.publicKeyPoint
        let kid = Base64.encode(SHA256.hash(point))
        print("attestctl simulate (\(backing == "software" ? "iOS without App Attest" : "device key without App Attest")): gateway http://\(gateway.hostHeader)\(gateway.basePath), app \(appId)")
        print("device key kid \(kid) (\(keyNote)), backing \(backing)\(integrity.isEmpty ? "" : ", integrity \(integrity.joined(separator: ","))")")
        print("")

        // 1. challenge for the registration.
        guard let (registerChallenge, registerText) = challenge(step: "1", purpose: "register", keyId: kid) else {
            return summary(false, "no register challenge")
        }
        // 2. registration, signed by the device key.
        let clientData = DeviceKeyRegistration.clientData(challenge: registerChallenge, publicKey: point, backing: backing, integrity: integrity)
        let signature: [UInt8]
        do { signature = try key.signature(for: clientData) } catch { return summary(false, "cannot sign: \(error)") }
        let registerBody = JSONText.object([("publicKey", .string(Base64.encode(point))), ("challenge", .string(registerText)),
                                            ("signature", .string(Base64.encode(signature))), ("backing", .string(backing)),
                                            ("integrity", .array(integrity.map { .string($0) })), ("appId", .string(appId))])
        let registered = exchange(step: "2", title: "registration without App Attest (expects tier device)",
                                  Sent(method: "POST", target: gateway.basePath + prefix + "/register",
                                       headers: [("Content-Type", "application/json")], body: Array(registerBody.rendered.utf8)),
                                  expect: { $0 == 201 }, expectation: "201")
        guard let registered, registered.status == 201 else { return summary(false, "registration refused") }
        let answer = (try? JSONSerialization.jsonObject(with: Data(registered.body))) as? [String: Any]
        let tier = answer?["tier"] as? String ?? "?"

        // 3. signed requests.
        var accepted = 0
        var last: Sent? = nil
        for n in 1...max(requests, 1) where requests > 0 {
            guard let (challengeBytes, challengeText) = challenge(step: "3.\(n)a", purpose: "assert", keyId: kid) else { continue }
            let separator = route.contains("?") ? "&" : "?"
            let target = gateway.basePath + route + separator + "n=\(n)"
            let body: [UInt8] = ["GET", "HEAD", "DELETE", "OPTIONS"].contains(method)
                ? [] : Array(JSONText.object([("item", .string("sku-\(n)")), ("quantity", .integer(Int64(n)))]).rendered.utf8)
            let signed: [UInt8]
            do {
                let data = try ClientDataBinding.v1(challenge: challengeBytes, method: method, target: target,
                                                    bodySHA256: SHA256.hash(body), boundFields: bound)
                signed = try key.signature(for: data)
            } catch {
                print("cannot sign request \(n): \(error)\n")
                continue
            }
            var headers: [(name: String, value: String)] = [("App-Attest-Key-Id", kid), ("App-Attest-Challenge", challengeText),
                                                            ("App-Attest-Signature", Base64.encode(signed))]
            if !body.isEmpty { headers.append(("Content-Type", "application/json")) }
            headers += bound
            let sent = Sent(method: method, target: target, headers: headers, body: body)
            last = sent
            if let response = exchange(step: "3.\(n)b", title: "signed request \(n)/\(requests)", sent,
                                       expect: { (200..<300).contains($0) }, expectation: "2xx (the route needs min_tier: device)"),
               (200..<300).contains(response.status) {
                accepted += 1
            }
        }
        let (replayRefused, replayNote) = replay(last, requests: requests, what: "signed request",
                                                 proof: "same challenge and signature")
        let ok = tier == "device" && accepted == requests && replayRefused
        return summary(ok, "registration 201 tier \(tier), signed requests \(accepted)/\(requests) accepted, replay \(replayNote)")
    }

    /// Requests a challenge; returns its bytes and its text as received.
    func challenge(step: String, purpose: String, keyId: String) -> ([UInt8], String)? {
        let body = JSONText.object([("keyId", .string(keyId)), ("purpose", .string(purpose))])
        guard let response = exchange(step: step, title: "challenge (purpose \(purpose))",
                                      Sent(method: "POST", target: gateway.basePath + prefix + "/challenge",
                                           headers: [("Content-Type", "application/json")], body: Array(body.rendered.utf8)),
                                      expect: { $0 == 201 }, expectation: "201"),
              response.status == 201 else { return nil }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any],
              let text = object["challenge"] as? String, let bytes = Base64.decode(text), !bytes.isEmpty,
              object["expiresAt"] is NSNumber else {
            print("   !! the answer is not {\"challenge\": base64, \"expiresAt\": unix-seconds}\n")
            return nil
        }
        return (bytes, text)
    }

    /// Sends `request`, prints the exchange, and returns the response (nil on network errors).
    func exchange(step: String, title: String, _ request: Sent, expect: (Int) -> Bool, expectation: String) -> SimulateHTTPResponse? {
        print("== step \(step): \(title)")
        print("> \(request.method) \(request.target)")
        for header in request.headers where header.name.lowercased().hasPrefix("app-attest-") || bound.contains(where: { $0.name == header.name }) {
            print("> \(header.name): \(Self.abbreviated(header.value))")
        }
        if !request.body.isEmpty { print("> body (\(request.body.count) bytes): \(Self.abbreviated(String(decoding: request.body, as: UTF8.self), limit: 160))") }
        let response: SimulateHTTPResponse
        do {
            response = try SimulateHTTPClient.send(method: request.method, target: request.target, headers: request.headers,
                                                   body: request.body, to: gateway, timeout: timeout)
        } catch {
            print("< network error: \(error)")
            print("-> FAILED (expected \(expectation))\n")
            return nil
        }
        print("< HTTP \(response.status) \(response.reason)")
        for header in response.headers {
            let name = header.name.lowercased()
            if name.hasPrefix("app-attest-") || name == "content-type" || name == "retry-after" || name == "www-authenticate" {
                print("< \(header.name): \(Self.abbreviated(header.value))")
            }
        }
        if !response.body.isEmpty { print(Self.describe(response.body)) }
        print(expect(response.status) ? "-> ok\n" : "-> FAILED (expected \(expectation), got \(response.status))\n")
        return response
    }

    func summary(_ ok: Bool, _ text: String) -> Bool {
        print("summary: \(ok ? "PASS" : "FAIL") - \(text)")
        return ok
    }

    /// The refusal reason: JSON `error`, else the `App-Attest-Error` header.
    func reasonCode(_ response: SimulateHTTPResponse) -> String? {
        if let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any], let code = object["error"] as? String {
            return code
        }
        return response.header("App-Attest-Error")
    }

    /// A body for display: JSON re-indented (keys in the order received), else UTF-8 text, else a
    /// byte count; at most 4000 characters.
    static func describe(_ body: [UInt8]) -> String {
        if (try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])) != nil {
            return abbreviated(indentJSON(body), limit: 4000)
        }
        if let text = String(validating: body, as: UTF8.self) { return abbreviated(text, limit: 4000) }
        return "(\(body.count) bytes of binary data)"
    }

    /// Re-indents valid JSON text with two spaces per level and `"key": value`, keeping every token
    /// (strings, numbers, key order) exactly as received.
    static func indentJSON(_ json: [UInt8]) -> String {
        var out: [UInt8] = []
        var depth = 0
        var inString = false, escaped = false
        func newline() { out.append(10); out += [UInt8](repeating: 32, count: 2 * depth) }
        var index = 0
        while index < json.count {
            let c = json[index]
            index += 1
            if inString {
                out.append(c)
                if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch c {
            case UInt8(ascii: "\""):
                inString = true
                out.append(c)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var next = index
                while next < json.count, [9, 10, 13, 32].contains(json[next]) { next += 1 }
                if next < json.count, json[next] == (c == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    out += [c, json[next]]  // empty container stays on one line
                    index = next + 1
                } else {
                    out.append(c)
                    depth += 1
                    newline()
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
                newline()
                out.append(c)
            case UInt8(ascii: ","):
                out.append(c)
                newline()
            case UInt8(ascii: ":"):
                out += [c, 32]
            case 9, 10, 13, 32:
                break
            default:
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func abbreviated(_ text: String, limit: Int = 100) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "... (\(text.count) characters)"
    }
}
