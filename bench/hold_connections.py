#!/usr/bin/env python3
"""Opens N keep-alive connections to HOST:PORT, makes one GET PATH on each, then holds them idle.

usage: hold_connections.py HOST PORT N PATH [--tls CA_FILE]

Connections are opened in batches of 500 (non-blocking connect, selectors), each sends one
HTTP/1.1 request and reads its whole response (Content-Length framing; the connection must stay
open). With --tls, each connection first makes a TLS handshake (Python's ssl, non-blocking; ALPN
http/1.1, the server's certificate verified against CA_FILE, SNI = HOST), then sends the request over
TLS: an idle TLS connection as a browser or an app leaves it. When all N have answered, prints one
line `HOLDING {"open": N, "failed": F, "statuses": {...}}` on standard output (with --tls also
"tls": the protocol version and ALPN of the last connection, and "resumed": how many handshakes were
resumed, none) and waits, holding every connection, until standard input closes or SIGTERM. Used by
bench/run to measure the gateway's resident memory with N idle keep-alive connections.
"""
import json
import selectors
import signal
import socket
import ssl
import sys


def main():
    args = sys.argv[1:]
    ca = None
    if "--tls" in args:
        i = args.index("--tls")
        ca = args[i + 1]
        del args[i:i + 2]
    host, port, total, path = args[0], int(args[1]), int(args[2]), args[3]
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: bench-hold\r\n\r\n".encode()
    context = None
    if ca:
        context = ssl.create_default_context(cafile=ca)
        context.set_alpn_protocols(["http/1.1"])
    held, failed, statuses = [], 0, {}
    tls_info, resumed = None, 0
    selector = selectors.DefaultSelector()
    opened = 0
    while opened < total:
        batch = min(500, total - opened)
        state = {}
        for _ in range(batch):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((host, port))
            fd = s.fileno()
            state[fd] = {"sock": s, "phase": "connect", "sent": 0, "buf": b""}
            selector.register(fd, selectors.EVENT_WRITE)
        opened += batch
        pending = len(state)
        while pending:
            events = selector.select(timeout=30)
            if not events:
                break
            for key, mask in events:
                fd = key.fd
                st = state[fd]
                s = st["sock"]
                try:
                    if st["phase"] == "connect":
                        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        if err:
                            raise OSError(err, "connect")
                        if context:
                            st["sock"] = s = context.wrap_socket(s, server_hostname=host, do_handshake_on_connect=False)
                            st["phase"] = "handshake"
                        else:
                            st["phase"] = "send"
                    if st["phase"] == "handshake":
                        try:
                            s.do_handshake()
                        except ssl.SSLWantReadError:
                            selector.modify(fd, selectors.EVENT_READ)
                            continue
                        except ssl.SSLWantWriteError:
                            selector.modify(fd, selectors.EVENT_WRITE)
                            continue
                        tls_info = {"version": s.version(), "alpn": s.selected_alpn_protocol(), "cipher": s.cipher()[0]}
                        resumed += 1 if s.session_reused else 0
                        st["phase"] = "send"
                    if st["phase"] == "send":
                        try:
                            st["sent"] += s.send(request[st["sent"]:])
                        except (ssl.SSLWantWriteError, BlockingIOError):
                            selector.modify(fd, selectors.EVENT_WRITE)
                            continue
                        except ssl.SSLWantReadError:
                            selector.modify(fd, selectors.EVENT_READ)
                            continue
                        if st["sent"] < len(request):
                            selector.modify(fd, selectors.EVENT_WRITE)
                            continue
                        st["phase"] = "read"
                        selector.modify(fd, selectors.EVENT_READ)
                        continue
                    # read: with TLS, drain what the TLS layer already decrypted (pending) as well
                    while True:
                        try:
                            data = s.recv(65536)
                        except (ssl.SSLWantReadError, BlockingIOError):
                            data = None
                        except ssl.SSLWantWriteError:
                            data = None
                        if data is None:
                            break
                        if not data:
                            raise OSError("closed by the server")
                        st["buf"] += data
                        if not (context and s.pending()):
                            break
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
                    selector.unregister(fd)
                    st["phase"] = "held"
                    held.append(s)
                    pending -= 1
                except (OSError, ssl.SSLError):
                    failed += 1
                    selector.unregister(fd)
                    s.close()
                    st["phase"] = "failed"
                    pending -= 1
        for fd, st in state.items():
            if st["phase"] not in ("held", "failed"):
                try:
                    selector.unregister(fd)
                except (KeyError, ValueError):
                    pass
                failed += 1
                st["sock"].close()
    report = {"open": len(held), "failed": failed, "statuses": statuses}
    if context:
        report["tls"] = tls_info
        report["resumed"] = resumed
    print("HOLDING " + json.dumps(report), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        sys.stdin.read()
    finally:
        for s in held:
            s.close()


if __name__ == "__main__":
    main()
