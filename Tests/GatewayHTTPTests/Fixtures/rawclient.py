#!/usr/bin/env python3
"""Raw-socket HTTP client for tests: sends exact bytes (smuggling attempts, slow headers, pipelining).

Reads a JSON list of steps on stdin: {"send": "<base64>"}, {"sleep": ms}, {"shutdown": true},
{"await": "<base64 marker>", "count": n}: wait (at most --timeout seconds) until what was received
holds the marker n times, e.g. the first response's status line before sending the next request:
readiness by behaviour instead of a sleep (plain connections only).
Reads concurrently until the server closes or --timeout seconds pass after the last step.
With --tls CAFILE the connection is TLS (server name --sni, default 127.0.0.1, verified against
CAFILE); then the steps are sent first and the answer read afterwards (one thread: an SSL object is
not shared between threads).
Prints JSON: {"response": "<base64 of everything received>", "closed": true|false, "sendError": str|null}.
"""
import argparse
import base64
import json
import socket
import sys
import threading
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--unix")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--tls")
    parser.add_argument("--sni", default="127.0.0.1")
    args = parser.parse_args()
    steps = json.load(sys.stdin)
    if args.unix:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(args.unix)
    else:
        sock = socket.create_connection(("127.0.0.1", args.port))
    if args.tls:
        import ssl
        context = ssl.create_default_context(cafile=args.tls)
        sock = context.wrap_socket(sock, server_hostname=args.sni)
        tls_main(sock, steps, args.timeout)
        return
    received = bytearray()
    state = {"closed": False}
    done = threading.Event()

    def reader():
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    state["closed"] = True
                    break
                received.extend(data)
        except OSError:
            state["closed"] = True
        done.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    send_error = send_steps(sock, steps, received, args.timeout)
    done.wait(args.timeout)
    print(json.dumps({"response": base64.b64encode(bytes(received)).decode(), "closed": state["closed"],
                      "sendError": send_error}))


def send_steps(sock, steps, received=None, timeout=5.0):
    """Runs the steps in order; returns the error that stopped them, or None."""
    for step in steps:
        try:
            if "await" in step:
                if received is None:
                    return "await is not supported on TLS connections"
                marker, count = base64.b64decode(step["await"]), step.get("count", 1)
                deadline = time.monotonic() + timeout
                while bytes(received).count(marker) < count:
                    if time.monotonic() > deadline:
                        return "await timed out: %r x%d" % (marker, count)
                    time.sleep(0.005)
            elif "send" in step:
                sock.sendall(base64.b64decode(step["send"]))
            elif "sleep" in step:
                time.sleep(step["sleep"] / 1000)
            elif "shutdown" in step:
                sock.shutdown(socket.SHUT_WR)
        except OSError as e:
            return str(e)
    return None


def tls_main(sock, steps, timeout):
    received = bytearray()
    closed = False
    send_error = send_steps(sock, steps)
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                closed = True
                break
            received.extend(data)
    except socket.timeout:
        pass
    except OSError:
        closed = True
    print(json.dumps({"response": base64.b64encode(bytes(received)).decode(), "closed": closed,
                      "sendError": send_error}))


if __name__ == "__main__":
    main()
