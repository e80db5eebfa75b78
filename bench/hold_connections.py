#!/usr/bin/env python3
"""Opens N keep-alive connections to HOST:PORT, makes one GET PATH on each, then holds them idle.

usage: hold_connections.py HOST PORT N PATH

Connections are opened in batches of 500 (non-blocking connect, selectors), each sends one
HTTP/1.1 request and reads its whole response (Content-Length framing; the connection must stay
open). When all N have answered, prints one line `HOLDING {"open": N, "failed": F, "statuses": {...}}`
on standard output and waits, holding every connection, until standard input closes or SIGTERM.
Used by bench/run to measure the gateway's resident memory with N idle keep-alive connections.
"""
import json
import selectors
import signal
import socket
import sys


def main():
    host, port, total, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: bench-hold\r\n\r\n".encode()
    held, failed, statuses = [], 0, {}
    selector = selectors.DefaultSelector()
    opened = 0
    while opened < total:
        batch = min(500, total - opened)
        state = {}
        for _ in range(batch):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((host, port))
            state[s] = {"sent": 0, "buf": b""}
            selector.register(s, selectors.EVENT_WRITE)
        opened += batch
        pending = len(state)
        while pending:
            events = selector.select(timeout=30)
            if not events:
                break
            for key, mask in events:
                s = key.fileobj
                st = state[s]
                try:
                    if mask & selectors.EVENT_WRITE:
                        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if err:
                            raise OSError(err, "connect")
                        st["sent"] += s.send(request[st["sent"]:])
                        if st["sent"] == len(request):
                            selector.modify(s, selectors.EVENT_READ)
                        continue
                    data = s.recv(65536)
                    if not data:
                        raise OSError("closed by the server")
                    st["buf"] += data
                    head, sep, body = st["buf"].partition(b"\r\n\r\n")
                    if not sep:
                        continue
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value.strip())
                    if len(body) < length:
                        continue
                    status = head.split(b" ", 2)[1].decode()
                    statuses[status] = statuses.get(status, 0) + 1
                    selector.unregister(s)
                    held.append(s)
                    pending -= 1
                except OSError:
                    failed += 1
                    selector.unregister(s)
                    s.close()
                    pending -= 1
        for s in list(state):
            if s not in held and s.fileno() >= 0:
                try:
                    selector.unregister(s)
                except (KeyError, ValueError):
                    pass
                failed += 1
                s.close()
    print("HOLDING " + json.dumps({"open": len(held), "failed": failed, "statuses": statuses}), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        sys.stdin.read()
    finally:
        for s in held:
            s.close()


if __name__ == "__main__":
    main()
