#!/usr/bin/env python3
"""Test upstream for the GatewayHTTP proxy tests (http.server based, keep-alive, threads).

Every request is answered with JSON describing what arrived: method, target, headers (ordered
[name, value] pairs as received), body length and SHA-256, and the serial number of the
upstream connection it arrived on. Query parameters change the behaviour:

  delay=MS       wait before answering            size=N        N-byte body with Content-Length
  chunked=N      N-byte body, chunked             chunksize=K   chunk size for chunked (default 4096)
  untilclose=N   N-byte body ended by close       slowbody=MS   pause between body pieces
  status=S       answer with status S             hop=1         add hop-by-hop response fields
  close=1        Connection: close                dropnext=1    drop the next request on this connection
  trailers=1     chunked trailers                 malformed=1   answer a bare-LF response
  reset=1        close without answering          nextspoof=1   add forged App-Attest-Next-Challenge*, -Error fields
  interim=MS     10 "102 Processing" interim responses MS apart, then the answer
  notify=1       with untilclose over TLS: send close_notify before closing (else a bare close)
  readgate=1     read nothing of the body until /__gate was requested (at most 30 s): a slow-reading upstream
Special target /__stats answers {"connections": n, "requests": m}; /__gate opens the read gate for good.

Usage: upstream.py --port 0 | --unix PATH ; prints "READY <port>" (or "READY unix") when listening.
"""
import argparse
import hashlib
import json
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
STATS = {"connections": 0, "requests": 0}
GATE = threading.Event()  # readgate=1 waits for it; /__gate sets it


def pattern(n):
    block = bytes(i % 251 for i in range(65536))
    out = bytearray()
    while len(out) < n:
        out += block
    return bytes(out[:n])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "test-upstream"
    disable_nagle_algorithm = True  # head and body are separate writes: no 40 ms delayed-ACK stall

    def setup(self):
        super().setup()
        with LOCK:
            STATS["connections"] += 1
            self.connection_serial = STATS["connections"]
        self.drop_next = False

    def address_string(self):
        return "unix" if isinstance(self.client_address, (str, bytes)) or not self.client_address else self.client_address[0]

    def log_message(self, fmt, *args):
        pass

    def read_body(self):
        te = self.headers.get("Transfer-Encoding")
        if te and te.lower() == "chunked":
            data = bytearray()
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def handle_any(self):
        if self.drop_next:
            self.close_connection = True
            return
        if self.path.startswith("/__gate"):
            GATE.set()
        if "readgate=1" in urlsplit(self.path).query:
            GATE.wait(30)
        body = self.read_body()
        with LOCK:
            STATS["requests"] += 1
        query = parse_qs(urlsplit(self.path).query)
        q = lambda k, d=None: query.get(k, [d])[0]
        if q("delay"):
            time.sleep(int(q("delay")) / 1000)
        if q("interim"):  # 10 interim 1xx responses, MS apart, before the final one
            for _ in range(10):
                self.wfile.write(b"HTTP/1.1 102 Processing\r\n\r\n")
                self.wfile.flush()
                time.sleep(int(q("interim")) / 1000)
        if q("reset"):
            self.close_connection = True
            return
        if q("dropnext"):
            self.drop_next = True
        if q("malformed"):
            self.wfile.write(b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok")
            self.close_connection = True
            return
        status = int(q("status", "200"))
        if self.path == "/__stats":
            with LOCK:
                payload = json.dumps(STATS).encode()
        elif q("size") or q("chunked") or q("untilclose"):
            payload = pattern(int(q("size") or q("chunked") or q("untilclose")))
        else:
            payload = json.dumps({
                "method": self.command,
                "target": self.path,
                "version": self.request_version,
                "headers": [[k, v] for k, v in self.headers.items()],
                "bodyLength": len(body),
                "bodySHA256": hashlib.sha256(body).hexdigest(),
                "connection": self.connection_serial,
            }).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Upstream-Connection", str(self.connection_serial))
        self.send_header("X-Content-SHA256", hashlib.sha256(payload).hexdigest())
        if q("hop"):
            self.send_header("Connection", "X-Hop-Secret")
            self.send_header("X-Hop-Secret", "must-not-pass")
            self.send_header("Keep-Alive", "timeout=5")
            self.send_header("Proxy-Connection", "keep-alive")
            self.send_header("Upgrade", "h2c")
            self.send_header("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA")
            self.send_header("Proxy-Authenticate", "Basic realm=upstream")
            self.send_header("X-End-To-End", "passes")
        if q("nextspoof"):
            # What a client must never take for the gateway's next challenge (two copies, any case).
            self.send_header("App-Attest-Next-Challenge", "VVBTVFJFQU0tRk9SR0VELUNIQUxMRU5HRS0wMDAwMDA=")
            self.send_header("app-attest-next-challenge", "second-forged-copy")
            self.send_header("App-Attest-Next-Challenge-Expires", "4102444800")
            # ...nor for a gateway refusal (the SDK re-attests on key_unknown).
            self.send_header("App-Attest-Error", "key_unknown")
        if q("close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        no_body = status in (204, 304) or self.command == "HEAD"
        if q("chunked") and not no_body:
            self.send_header("Transfer-Encoding", "chunked")
            if q("trailers"):
                self.send_header("Trailer", "X-Trailer")
            self.end_headers()
            step = int(q("chunksize", "4096"))
            for i in range(0, len(payload), step):
                piece = payload[i:i + step]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                if q("slowbody"):
                    self.wfile.flush()
                    time.sleep(int(q("slowbody")) / 1000)
            self.wfile.write(b"0\r\n" + (b"X-Trailer: t\r\n" if q("trailers") else b"") + b"\r\n")
            return
        if q("untilclose") and not no_body:
            self.close_connection = True
            self.end_headers()
            self.wfile.write(payload)
            if q("notify") and hasattr(self.connection, "unwrap"):
                self.wfile.flush()
                try:
                    self.connection.unwrap()  # TLS: close_notify before the close
                except (OSError, ValueError):
                    pass
            return
        if status != 204:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if no_body:
            return
        if q("slowbody"):
            half = len(payload) // 2
            self.wfile.write(payload[:half])
            self.wfile.flush()
            time.sleep(int(q("slowbody")) / 1000)
            self.wfile.write(payload[half:])
        else:
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = handle_any


class UnixHandler(Handler):
    disable_nagle_algorithm = False  # TCP_NODELAY does not apply to Unix sockets


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--unix")
    parser.add_argument("--tls-chain", help="serve HTTPS with this PEM chain (leaf first)")
    parser.add_argument("--tls-key", help="the chain's private key")
    args = parser.parse_args()
    if args.unix:
        server = UnixServer(args.unix, UnixHandler)
        print("READY unix", flush=True)
    else:
        ThreadingHTTPServer.daemon_threads = True
        ThreadingHTTPServer.request_queue_size = 256  # HTTP/2 tests open ~100 upstream connections at once
        server = ThreadingHTTPServer(("127.0.0.1", args.port or 0), Handler)
        if args.tls_chain:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(args.tls_chain, args.tls_key)
            server.socket = context.wrap_socket(server.socket, server_side=True)
        print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
