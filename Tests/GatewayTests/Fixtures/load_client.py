#!/usr/bin/env python3
"""Load client for the reload and handover tests: requests sent continuously, none may fail.

  load_client.py load --port P [--unix PATH] [--threads N] [--path /a --path /b ...] --stop-file F
      Each thread loops over the paths: a new connection per request (Connection: close), GET, the
      whole response read. Runs until F exists, then prints one JSON line:
      {"total": n, "statuses": {"200": n, ...}, "failures": k, "errors": ["..." (first 20)],
       "by_path": {"/a": {"200": n}}}
      A failure is an exception (refused, reset, timeout, truncated) - a status is not a failure here.
      Prints "RUNNING" once the first response arrived.

  load_client.py hold --port P --ca FILE --continue-file F
      One TLS connection (keep-alive): a GET, prints {"step": 1, "status": s, "subject": CN}, waits
      for F to exist, a second GET on the same connection, prints {"step": 2, ...}.
"""
import argparse
import http.client
import json
import os
import socket
import ssl
import sys
import threading
import time


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def load(args):
    paths = args.path or ["/"]
    lock = threading.Lock()
    result = {"total": 0, "statuses": {}, "failures": 0, "errors": [], "by_path": {}}
    running = threading.Event()

    def worker(index):
        i = index
        while not os.path.exists(args.stop_file):
            path = paths[i % len(paths)]
            i += 1
            try:
                if args.unix:
                    conn = UnixHTTPConnection(args.unix, timeout=args.timeout)
                else:
                    conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=args.timeout)
                conn.request("GET", path, headers={"Connection": "close"})
                response = conn.getresponse()
                response.read()
                status = str(response.status)
                conn.close()
                with lock:
                    result["total"] += 1
                    result["statuses"][status] = result["statuses"].get(status, 0) + 1
                    per = result["by_path"].setdefault(path, {})
                    per[status] = per.get(status, 0) + 1
                if not running.is_set():
                    running.set()
                    print("RUNNING", flush=True)
            except Exception as error:  # noqa: BLE001 - every failure counts
                with lock:
                    result["total"] += 1
                    result["failures"] += 1
                    if len(result["errors"]) < 20:
                        result["errors"].append("%s: %s: %r" % (time.strftime("%H:%M:%S"), path, error))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(result), flush=True)


def hold(args):
    context = ssl.create_default_context(cafile=args.ca)
    context.check_hostname = False
    conn = http.client.HTTPSConnection("127.0.0.1", args.port, context=context, timeout=args.timeout)

    def step(n):
        conn.request("GET", args.target)
        response = conn.getresponse()
        response.read()
        subject = dict(x[0] for x in conn.sock.getpeercert()["subject"]).get("commonName")
        print(json.dumps({"step": n, "status": response.status, "subject": subject}), flush=True)

    step(1)
    while not os.path.exists(args.continue_file):
        time.sleep(0.02)
    step(2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["load", "hold"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--unix")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--path", action="append")
    parser.add_argument("--stop-file")
    parser.add_argument("--continue-file")
    parser.add_argument("--ca")
    parser.add_argument("--target", default="/")
    parser.add_argument("--timeout", type=float, default=10.0)
    args = parser.parse_args()
    if args.mode == "load":
        load(args)
    else:
        hold(args)


if __name__ == "__main__":
    sys.exit(main())
