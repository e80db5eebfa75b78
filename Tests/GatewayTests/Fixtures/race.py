#!/usr/bin/env python3
"""Race client for the gateway end-to-end tests: the same bytes on several connections at once.

Reads JSON on stdin: {"requests": ["<base64 of one complete HTTP/1.1 request>", ...]}. Opens one
connection per request, sends each request except its last byte, waits until every connection is
at that point (a barrier), then sends the last bytes together so the gateway receives the complete
requests as close in time as the machine allows. Each request should carry "Connection: close";
every connection is read until the server closes it (or --timeout seconds pass).

Prints JSON: {"responses": ["<base64 of everything received on connection i>", ...]}.
"""
import argparse
import base64
import json
import socket
import sys
import threading


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--tls", help="CA file: connect with TLS (server name 127.0.0.1)")
    args = parser.parse_args()
    requests = [base64.b64decode(r) for r in json.load(sys.stdin)["requests"]]
    barrier = threading.Barrier(len(requests))
    results = [b""] * len(requests)

    def run(i, data):
        sock = socket.create_connection(("127.0.0.1", args.port), timeout=args.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if args.tls:
            import ssl
            sock = ssl.create_default_context(cafile=args.tls).wrap_socket(sock, server_hostname="127.0.0.1")
        received = bytearray()
        try:
            sock.sendall(data[:-1])
            barrier.wait()
            sock.sendall(data[-1:])
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received.extend(chunk)
        except OSError:
            pass
        finally:
            sock.close()
        results[i] = bytes(received)

    threads = [threading.Thread(target=run, args=(i, r)) for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"responses": [base64.b64encode(r).decode() for r in results]}))


if __name__ == "__main__":
    sys.exit(main())
