"""bench/benchlib.py: what the benchmark scripts share (bench/run, bench/ab, bench/next_challenge).

One home for the paths to ../shared, the /proc readings, the waits, the free-port picking and the
gateway configuration the figures are measured on (its routes and settings), so that two scripts that
compare builds or peers cannot drift apart. Imported by the scripts next to it (they put bench/ on
sys.path); not a package of its own.
"""
import os
import socket
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
PEERS = os.path.join(SHARED, "bench", "peers", "start-peers")
FEED = os.path.join(ROOT, "bench", "wrk", "feed.lua")
STATS = os.path.join(ROOT, "bench", "wrk", "stats.lua")
APP_ID = "ABCDE12345.com.example.bench"
TICK = os.sysconf("SC_CLK_TCK")
ENFORCED_PATH = "/bench/enforced"
OFF_PATH = "/bench/off"


class BenchFailure(Exception):
    """A benchmark that cannot give a trustworthy figure: the script stops and says why."""


def logger(tag):
    """A `log(message)` that prints `[tag HH:MM:SS] message` to standard error."""
    def log(message):
        print(f"[{tag} {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
    return log


# ---------------------------------------------------------------- /proc

def cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks (`TICK` per second); 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


# ---------------------------------------------------------------- ports and waits

def free_ports(n):
    """`n` distinct loopback ports the kernel says are free now (bound together, then released)."""
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def wait_for(check, timeout, what):
    """Calls `check()` every 0.1 s until it returns something true (returned); an `OSError` (refused
    connection, reset, HTTP error) counts as not yet. Raises `BenchFailure` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = check()
            if result:
                return result
        except OSError:
            pass
        time.sleep(0.1)
    raise BenchFailure(f"timed out after {timeout} s waiting for {what}")


def http_get(url, timeout=5):
    """(status, body text) of a GET; raises `OSError` (urllib's `URLError`, `HTTPError`) on failure."""
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


# ---------------------------------------------------------------- the gateway under test

def gateway_config(writer, listen, admin, store, ca_root, upstream_port):
    """The YAML every benchmark runs the gateway with: the two bench routes (`ENFORCED_PATH` enforced with
    counter_window 64 and max_body 128KiB, `OFF_PATH` mode: off) on one upstream with 128 idle
    connections (as the peers' `keepalive 128`), 16384 connections at most, access log off (as the peers'
    `access_log off`).

    `listen`: (port, None) for a plain listener or (port, (chain, key)) for a TLS one, in order;
    `store`: a store URL; `ca_root`: the test CA's root (trust.extra_roots); `writer`: the script's name
    for the header comment."""
    lines = []
    for port, tls in listen:
        if tls is None:
            lines.append(f"  - 127.0.0.1:{port}                 # plain: HTTP/1.1 (and h2c)")
        else:
            chain, key = tls
            lines.append(f"  - address: 127.0.0.1:{port}     # TLS 1.2/1.3, ALPN h2 and http/1.1\n"
                         f"    tls:\n"
                         f"      certificates:\n"
                         f"        - chain: {chain}\n"
                         f"          key: {key}")
    listen_text = "\n".join(lines)
    return f"""# written by {writer}
listen:
{listen_text}
admin: 127.0.0.1:{admin}
store: {store}
apps:
  - app_id: {APP_ID}
    environment: development
trust:
  extra_roots:
    - {ca_root}                      # the benchmark's test CA (attestctl ca)
upstreams:
  backend:
    url: http://127.0.0.1:{upstream_port}
    max_idle_connections: 128        # as the peers' `keepalive 128`
routes:
  - name: enforced
    path_prefix: {ENFORCED_PATH}
    upstream: backend
    mode: enforce
    counter_window: 64               # assertions of one key may overtake each other on parallel connections
    max_body: 128KiB
  - name: off
    path_prefix: {OFF_PATH}
    upstream: backend
    mode: off
limits:
  max_connections: 16384
log:
  access: false                      # the peers run with access_log off
"""
