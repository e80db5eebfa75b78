import Foundation
import GatewayTestSupport
import XCTest

/// A tiny stand-in for the gateway (Python, http.server) that implements just enough of DESIGN.md
/// section 1 for `attestctl simulate`: the challenge and attest endpoints and one protected route.
/// It verifies with the independent reference code (shared/tools/ref_verify.py functions and
/// ref_device.client_data_v1), never with our Swift verifier. The real end-to-end test comes with
/// the gateway. The script is kept here (written to a temporary file at run time) so the test
/// target needs no resource declarations.
///
/// Answers use all three HTTP/1.1 body framings so the client's parser is exercised over a real
/// socket: challenge = Content-Length; attest = an interim `100 Continue`, then chunked with chunk
/// extensions and a trailer, written one byte per TCP segment; protected responses alternate chunked
/// / close-delimited; refusals = Content-Length.
/// Every verification decision is logged to stdout as `fake-gateway: <event>`.
final class SimulatorFakeGateway {
    let port: UInt16
    let process: ChildProcess

    /// Starts the fake on a free loopback port.
    /// - Parameters:
    ///   - root: PEM of the pinned App Attest root.
    ///   - appId: "TEAMID.bundle".
    ///   - bind: header name the route binds (sent as `name:value` in client data), if any.
    ///   - acceptReplays: a deliberately broken gateway that skips challenge and counter checks.
    init(root: String, appId: String, environment: String = "development", prefix: String = "/app-attest/v1",
         route: String = "/v1/purchases", bind: String? = nil, acceptReplays: Bool = false, directory: URL) throws {
        let tools = try SimulatorSupport.toolsDirectory().path
        let script = directory.appendingPathComponent("fake_gateway.py")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        var arguments = [script.path, "--tools", tools, "--port", "0", "--root", root, "--app-id", appId,
                         "--env", environment, "--prefix", prefix, "--route", route]
        if let bind { arguments += ["--bind", bind] }
        if acceptReplays { arguments.append("--accept-replays") }
        process = try ChildProcess("python3", arguments)
        // It binds port 0 and logs the port it got.
        let deadline = Date().addingTimeInterval(20)
        var bound: UInt16?
        while bound == nil {
            bound = process.output.split(separator: "\n").lazy
                .compactMap { $0.hasPrefix("fake-gateway: listening on ") ? UInt16($0.dropFirst("fake-gateway: listening on ".count)) : nil }
                .first
            if bound != nil { break }
            if !process.isRunning || Date() > deadline {
                process.stop()
                throw SetupFailure("the fake gateway did not report its port: \(process.output)")
            }
            usleep(20_000)
        }
        port = bound!
    }

    /// `http://127.0.0.1:<port>`.
    var url: String { "http://127.0.0.1:\(port)" }

    /// Lines the fake logged, `fake-gateway: ` prefix removed.
    var events: [String] {
        process.output.split(separator: "\n").compactMap { line in
            line.hasPrefix("fake-gateway: ") ? String(line.dropFirst("fake-gateway: ".count)) : nil
        }
    }

    func stop() { process.stop() }

    deinit { process.stop(signal: SIGKILL, grace: 1) }

    static let script = #"""
    import argparse, base64, datetime, hashlib, json, os, socket, sys, threading, time
    from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler

    p = argparse.ArgumentParser()
    for name in ("tools", "port", "root", "app-id", "env", "prefix", "route"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--bind")
    p.add_argument("--accept-replays", action="store_true")
    args = p.parse_args()
    sys.dont_write_bytecode = True
    sys.path.insert(0, args.tools)
    import cbor2, ref_device, ref_verify
    from cryptography import x509

    ROOT = ref_verify.load_pem_cert(args.root)
    TEAM, BUNDLE = args.app_id.split(".", 1)
    LOCK = threading.Lock()
    CHALLENGES = {}   # challenge bytes -> (purpose, keyId bytes, expiry)
    KEYS = {}         # keyId bytes -> {"point": bytes, "counter": int}
    ATTEST_CHECKS = ("cbor_decodes", "fmt", "chain", "nonce", "keyId", "rpIdHash", "counter_zero", "aaguid",
                     "credentialId", "cose_key_matches_leaf")

    def log(event):
        print("fake-gateway: " + event, flush=True)

    def b64e(b):
        return base64.b64encode(b).decode()

    def b64d(text):
        if not isinstance(text, str):
            raise ValueError("not a string")
        return ref_device.b64d(text)

    def new_challenge(purpose, key_id):
        value = os.urandom(32)
        expires = int(time.time()) + 300
        with LOCK:
            CHALLENGES[value] = (purpose, key_id, expires)
        return {"challenge": b64e(value), "expiresAt": expires}

    def take_challenge(value, purpose, key_id):
        """Consume a challenge of `purpose` for `key_id`; returns an error code or None."""
        with LOCK:
            entry = CHALLENGES.get(value)
            if entry is None:
                return "challenge_unknown"
            if entry[2] < time.time():
                return "challenge_expired"
            if entry[0] != purpose or entry[1] != key_id:
                return "challenge_mismatch"
            del CHALLENGES[value]
        return None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        count = 0

        def log_message(self, fmt, *a):
            sys.stderr.write("fake-gateway-http: " + (fmt % a) + "\n")

        def body(self):
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def answer(self, status, obj, framing="length", headers=()):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for name, value in headers:
                self.send_header(name, value)
            if framing == "dribble":
                # An interim 100 response, then a chunked answer sent one byte per TCP segment.
                head = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 %d Created\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n" % status)
                half = len(data) // 2
                raw = head + b"".join(b"%x;n=%d\r\n%s\r\n" % (len(c), i, c) for i, c in enumerate((data[:half], data[half:])))
                raw += b"0\r\nX-Fake-Trailer: done\r\n\r\n"
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                for i in range(len(raw)):
                    self.wfile.write(raw[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.0005)
                self.close_connection = True
            elif framing == "chunked":
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Trailer", "X-Fake-Trailer")
                self.end_headers()
                half = len(data) // 2
                for chunk, ext in ((data[:half], ";fake=1"), (data[half:], "")):
                    self.wfile.write(b"%x%s\r\n%s\r\n" % (len(chunk), ext.encode(), chunk))
                self.wfile.write(b"0\r\nX-Fake-Trailer: done\r\n\r\n")
            elif framing == "close":
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True
            else:
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def refuse(self, status, code, action, key_id=None):
            obj = {"error": code, "action": action}
            if key_id is not None and code.startswith("challenge_"):
                obj.update(new_challenge("assert", key_id))
            log("refused %s %s" % (status, code))
            self.answer(status, obj, headers=[("App-Attest-Error", code)])

        def do_POST(self):
            path = self.path.split("?", 1)[0]
            if path == args.prefix + "/challenge":
                return self.challenge()
            if path == args.prefix + "/attest":
                return self.attest()
            return self.protected()

        def do_GET(self):
            return self.protected()

        do_PUT = do_PATCH = do_DELETE = do_GET

        def challenge(self):
            try:
                req = json.loads(self.body())
                key_id = b64d(req["keyId"])
                purpose = req["purpose"]
                if len(key_id) != 32 or purpose not in ("attest", "assert"):
                    raise ValueError("bad keyId or purpose")
            except Exception as e:
                return self.refuse(400, "encoding_invalid", "deny")
            log("challenge %s" % purpose)
            self.answer(201, new_challenge(purpose, key_id))

        def attest(self):
            try:
                req = json.loads(self.body())
                key_id, challenge, attestation = b64d(req["keyId"]), b64d(req["challenge"]), b64d(req["attestation"])
            except Exception:
                return self.refuse(400, "encoding_invalid", "deny")
            vec = {"attestationObject": b64e(attestation), "keyId": b64e(key_id), "teamId": TEAM, "bundleId": BUNDLE,
                   "environment": args.env, "clientDataHash": b64e(hashlib.sha256(challenge).digest()),
                   "validationTime": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
            try:
                results, _, _ = ref_verify.verify_attestation(vec, ROOT, None)
            except Exception as e:
                results = {"cbor_decodes": False}
            failed = [c for c in ATTEST_CHECKS if results.get(c) is not True]
            if failed:
                return self.refuse(401, "attestation_invalid:" + ",".join(failed), "reattest")
            error = take_challenge(challenge, "attest", key_id)
            if error and not args.accept_replays:
                return self.refuse(401, error, "refresh_challenge")
            leaf = x509.load_der_x509_certificate(cbor2.loads(attestation)["attStmt"]["x5c"][0])
            with LOCK:
                KEYS[key_id] = {"point": ref_verify.point_bytes(leaf), "counter": 0}
            log("attested %s" % b64e(key_id))
            self.answer(201, {"keyId": b64e(key_id), "environment": args.env}, framing="dribble")

        def protected(self):
            if self.path.split("?", 1)[0] != args.route:
                return self.refuse(404, "not_found", "deny")
            body = self.body()
            try:
                key_id = b64d(self.headers["App-Attest-Key-Id"])
                challenge = b64d(self.headers["App-Attest-Challenge"])
                assertion = b64d(self.headers["App-Attest-Assertion"])
            except Exception:
                return self.refuse(401, "evidence_missing", "refresh_challenge")
            with LOCK:
                key = KEYS.get(key_id)
            if key is None:
                return self.refuse(401, "key_unknown", "reattest")
            extra = []
            if args.bind:
                value = self.headers.get(args.bind)
                if value is None:
                    return self.refuse(401, "binding_missing", "deny")
                extra.append("%s:%s" % (args.bind, value))
            client_data = ref_device.client_data_v1(challenge, self.command, self.path, body, extra)
            vec = {"assertion": b64e(assertion), "clientData": b64e(client_data),
                   "clientDataHash": b64e(hashlib.sha256(client_data).digest()), "publicKeyX963": b64e(key["point"]),
                   "teamId": TEAM, "bundleId": BUNDLE, "previousCounter": 0 if args.accept_replays else key["counter"]}
            try:
                results, _, info = ref_verify.verify_assertion(vec)
            except Exception:
                return self.refuse(401, "assertion_malformed", "refresh_challenge", key_id)
            if not results["signature"]:
                return self.refuse(401, "bad_signature", "refresh_challenge", key_id)
            if not results["rpIdHash"]:
                return self.refuse(401, "rp_id_mismatch", "deny")
            if not args.accept_replays:
                error = take_challenge(challenge, "assert", key_id)
                if error:
                    return self.refuse(401, error, "refresh_challenge", key_id)
                if not results["counter_greater_than_previous"]:
                    return self.refuse(401, "counter_replay", "refresh_challenge", key_id)
            with LOCK:
                key["counter"] = max(key["counter"], info["counter"])
            log("assert ok counter=%d target=%s" % (info["counter"], self.path))
            Handler.count += 1
            self.answer(200, {"upstream": "fake", "method": self.command, "target": self.path,
                              "bodySHA256": hashlib.sha256(body).hexdigest(), "counter": info["counter"]},
                        framing="chunked" if Handler.count % 2 else "close",
                        headers=[("App-Attest-Verdict", "valid"), ("App-Attest-Counter", str(info["counter"]))])

    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", int(args.port)), Handler)
    log("listening on %d" % server.server_address[1])
    server.serve_forever()
    """#
}
