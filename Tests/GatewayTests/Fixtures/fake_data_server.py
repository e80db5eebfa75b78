#!/usr/bin/env python3
"""A stand-in for Apple's App Attest data server (POST /v1/attestationData) over TLS on loopback.

Checks every request's Authorization JWT independently of the gateway (PyPI `cryptography`):
JWS compact, header alg ES256 and kid, claims iss and iat (within the last hour), ES256 signature
(r || s) with the DeviceCheck public key. A bad JWT answers 401 (as Apple does).

The body is the base64 receipt the gateway stored. Receipts minted by the tests at attestation are
`test-receipt:<name>`; <name> selects the scenario files in --dir:
  <name>.status       the status to answer (default 200)
  <name>.retry_after  a Retry-After value (optional)
  <name>.delay        seconds to wait before answering (optional)
  <name>.receipt      the base64 receipt answered with 200 (absent: 404); a request carrying this
                      receipt (the gateway refreshing again) selects <name> too
Each request is appended as one JSON line to <dir>/requests.log: name, status, jwt ("ok" or why not).

Prints "READY <port>" once listening.
"""
import argparse, base64, json, os, ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.exceptions import InvalidSignature

LOCK = threading.Lock()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_jwt(token, public_key, kid, iss):
    parts = token.split(".")
    if len(parts) != 3:
        return "not a JWS compact serialization"
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        signature = b64url_decode(parts[2])
    except Exception as error:  # noqa: BLE001
        return "undecodable: %s" % error
    if header.get("alg") != "ES256":
        return "alg %r" % header.get("alg")
    if header.get("kid") != kid:
        return "kid %r" % header.get("kid")
    if claims.get("iss") != iss:
        return "iss %r" % claims.get("iss")
    iat = claims.get("iat")
    if not isinstance(iat, int) or iat > time.time() + 60 or iat < time.time() - 3600:
        return "iat %r" % iat
    if len(signature) != 64:
        return "signature is %d bytes, not r || s (64)" % len(signature)
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        public_key.verify(der, (parts[0] + "." + parts[1]).encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return "bad signature"
    return "ok"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--public-key", required=True)
    parser.add_argument("--kid", required=True)
    parser.add_argument("--iss", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with open(args.public_key, "rb") as f:
        public_key = serialization.load_pem_public_key(f.read())

    answered = {}  # receipt bytes -> name, for every receipt answered with 200

    def lookup(receipt):
        """The scenario whose .receipt file holds `receipt`, or that was answered with it before."""
        with LOCK:
            if receipt in answered:
                return answered[receipt]
        for entry in os.listdir(args.dir):
            if entry.endswith(".receipt"):
                with open(os.path.join(args.dir, entry), "rb") as f:
                    try:
                        if base64.b64decode(f.read().strip()) == receipt:
                            return entry[:-len(".receipt")]
                    except Exception:  # noqa: BLE001
                        pass
        return "unknown"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, body=b"", extra=()):
            self.send_response(status)
            for name, value in extra:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if body:
                self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                receipt = base64.b64decode(raw, validate=True)
            except Exception:  # noqa: BLE001
                receipt = b""
            name = receipt.decode("latin-1")[len("test-receipt:"):] if receipt.startswith(b"test-receipt:") else lookup(receipt)
            if not all(c.isalnum() or c in "-_" for c in name):
                name = "unknown"
            token = self.headers.get("Authorization") or ""
            jwt = check_jwt(token, public_key, args.kid, args.iss) if self.path == "/v1/attestationData" else "wrong path " + self.path
            status, body, extra = 200, b"", []
            if jwt != "ok":
                status = 401
            else:
                path = os.path.join(args.dir, name)
                if os.path.exists(path + ".status"):
                    with open(path + ".status") as f:
                        status = int(f.read().strip())
                if os.path.exists(path + ".delay"):
                    with open(path + ".delay") as f:
                        time.sleep(float(f.read().strip()))
                if os.path.exists(path + ".retry_after"):
                    with open(path + ".retry_after") as f:
                        extra.append(("Retry-After", f.read().strip()))
                if status == 200:
                    if os.path.exists(path + ".receipt"):
                        with open(path + ".receipt", "rb") as f:
                            body = f.read().strip()
                    else:
                        status = 404
            with LOCK:
                if status == 200 and body:
                    try:
                        answered[base64.b64decode(body)] = name
                    except Exception:  # noqa: BLE001
                        pass
                with open(os.path.join(args.dir, "requests.log"), "a") as log:
                    log.write(json.dumps({"name": name, "status": status, "jwt": jwt}) + "\n")
            self.answer(status, body, extra)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
