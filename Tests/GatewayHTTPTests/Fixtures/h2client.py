#!/usr/bin/env python3
"""HTTP/2 client for the GatewayHTTP tests: well-behaved requests (h2) and abuse (raw frames, hyperframe + hpack).

Usage: h2client.py --port PORT SCENARIO ; prints one JSON object on stdout (and "READY" lines when a
scenario waits for the test to act). Every scenario speaks h2c with prior knowledge (RFC 9113 section 3.3).

Scenarios:
  request PATH            one GET with h2; status, headers, body length and SHA-256
  forged-trailers PATH    a POST whose header block and trailers carry forged App-Attest- fields; the answer
  preface-only            the preface and SETTINGS, then nothing; reports the server's GOAWAY and when it closed
  rapid-reset N           N x (HEADERS + RST_STREAM CANCEL), then a request on a new connection
  continuation-flood      HEADERS without END_HEADERS, then 1000 small CONTINUATION frames
  continuation-bytes      HEADERS + 7 CONTINUATION frames of 16 KiB each (an oversized header block)
  header-too-large        a 40 KiB header list, then a normal request on the same connection
  hpack-bomb              one 4 KB field in the dynamic table, referenced 100 times
  table-size-update       a dynamic table size update above our SETTINGS_HEADER_TABLE_SIZE
  settings-flood          2000 SETTINGS frames
  ping-flood              2000 PING frames
  settings-entries        one SETTINGS frame with 40 entries
  empty-data-flood        a POST, then 200 zero-length DATA frames without END_STREAM
  max-concurrent          110 open streams before acknowledging the server's SETTINGS
  max-concurrent-acked    101 open streams after acknowledging them
  bad-headers             one stream per malformed header block, then a normal request
  content-length          DATA that disagrees with content-length, then a matching request
  zero-window             SETTINGS_INITIAL_WINDOW_SIZE 0, then a large response that cannot flow
  stalled-reader PATH     huge windows, a request, then never reads the socket (prints READY); reports the close
  slow-reader SIZE        a SIZE-byte response read slowly with a 16 KiB window, then a second request
  cancel PATH             a request reset after 300 ms, then a request on the same connection
  drain PATH              a request; prints READY; records every frame until the server closes
  upload-list SIZE@PATH,... [first-alone]  complete uploads of those sizes to those paths on one connection (the
                          others after the first body with `first-alone`): statuses in order
  early-response PATH N   a POST without content-length, N body bytes without END_STREAM: the frames the
                          server answers with on that stream, then a GET on the same connection
  uploads N SIZE PATH     N POSTs of SIZE bytes each (content-length) to PATH?n=i, every body sent whole as fast
                          as flow control allows; prints "STALLED <bytes sent>" at the first 0.5 s without room
                          to send (or once every body is sent), keeps going until every response ended (30 s)
"""
import argparse
import hashlib
import json
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from hpack import Decoder, Encoder
from hyperframe.frame import (ContinuationFrame, DataFrame, Frame, GoAwayFrame, HeadersFrame, PingFrame, PriorityFrame,
                              RstStreamFrame, SettingsFrame, WindowUpdateFrame)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 4: "SETTINGS_TIMEOUT",
          5: "STREAM_CLOSED", 6: "FRAME_SIZE_ERROR", 7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR",
          10: "CONNECT_ERROR", 11: "ENHANCE_YOUR_CALM", 12: "INADEQUATE_SECURITY", 13: "HTTP_1_1_REQUIRED"}
FRAME_NAMES = {0x0: "DATA", 0x1: "HEADERS", 0x2: "PRIORITY", 0x3: "RST_STREAM", 0x4: "SETTINGS", 0x5: "PUSH_PROMISE",
               0x6: "PING", 0x7: "GOAWAY", 0x8: "WINDOW_UPDATE", 0x9: "CONTINUATION"}
PORT = 0


class RawConnection:
    """A socket speaking raw HTTP/2 frames; received frames are summarised as dicts."""

    def __init__(self, settings=None, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.encoder = Encoder()
        self.decoder = Decoder()
        self.closed = False
        self.send_failed = False
        self.frames = []
        self.send(PREFACE + SettingsFrame(0, settings=settings or {}).serialize())

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.send_failed = True
            return False

    def send_frames(self, frames):
        return self.send(b"".join(f.serialize() for f in frames))

    def block(self, headers):
        return self.encoder.encode(headers)

    def headers_frame(self, stream_id, headers, end_stream=True, end_headers=True):
        flags = (["END_STREAM"] if end_stream else []) + (["END_HEADERS"] if end_headers else [])
        return HeadersFrame(stream_id, data=self.block(headers), flags=flags)

    def request(self, stream_id, path, method="GET", extra=(), end_stream=True):
        base = [(":method", method), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1:%d" % PORT)]
        return self.send_frames([self.headers_frame(stream_id, base + list(extra), end_stream=end_stream)])

    def read_frame(self, deadline):
        """The next frame (summarised), or None at end of stream or deadline."""
        while True:
            if len(self.buffer) >= 9:
                frame, length = Frame.parse_frame_header(memoryview(self.buffer[:9]))
                if len(self.buffer) >= 9 + length:
                    body = self.buffer[9:9 + length]
                    self.buffer = self.buffer[9 + length:]
                    frame.parse_body(memoryview(body))
                    summary = self.summarise(frame, length)
                    self.frames.append(summary)
                    return summary
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.closed:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            except OSError:
                self.closed = True
                return None
            if not chunk:
                self.closed = True
                return None
            self.buffer += chunk

    def summarise(self, frame, length):
        s = {"type": FRAME_NAMES.get(frame.type, str(frame.type)), "stream": frame.stream_id,
             "flags": sorted(frame.flags), "length": length, "t": time.monotonic()}
        if isinstance(frame, (RstStreamFrame, GoAwayFrame)):
            s["error"] = ERRORS.get(frame.error_code, frame.error_code)
        if isinstance(frame, GoAwayFrame):
            s["lastStreamID"] = frame.last_stream_id
        if isinstance(frame, HeadersFrame):
            fields = self.decoder.decode(frame.data)
            s["headers"] = [[n.decode() if isinstance(n, bytes) else n, v.decode() if isinstance(v, bytes) else v]
                            for n, v in fields]
            s["status"] = next((int(v) for n, v in s["headers"] if n == ":status"), None)
        if isinstance(frame, SettingsFrame):
            s["settings"] = {str(k): v for k, v in frame.settings.items()}
        return s

    def read_until(self, predicate, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            f = self.read_frame(deadline)
            if f is None:
                return None
            if predicate(f):
                return f

    def read_all(self, timeout=5.0):
        """Frames until the server closes (or the timeout)."""
        self.read_until(lambda f: False, timeout)
        return self.frames

    def goaway(self):
        return next((f for f in reversed(self.frames) if f["type"] == "GOAWAY"), None)

    def stream_outcome(self, stream_id, timeout=5.0):
        """("rst", code) or ("status", n) for the first answer on a stream."""
        f = self.read_until(lambda f: f["stream"] == stream_id and f["type"] in ("RST_STREAM", "HEADERS"), timeout)
        if f is None:
            return ("none", None)
        if f["type"] == "RST_STREAM":
            return ("rst", f["error"])
        return ("status", f["status"])


def h2_request(path, conn=None, method="GET", body=None):
    """One request with the h2 library on a new (or the given) connection: (status, headers, body)."""
    if conn is None:
        sock = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        h2c.initiate_connection()
        sock.sendall(h2c.data_to_send())
        conn = (sock, h2c)
    sock, h2c = conn
    stream_id = h2c.get_next_available_stream_id()
    headers = [(":method", method), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1:%d" % PORT)]
    h2c.send_headers(stream_id, headers, end_stream=body is None)
    if body is not None:
        h2c.send_data(stream_id, body, end_stream=True)
    sock.sendall(h2c.data_to_send())
    status, response_headers, data, done = None, [], b"", False
    while not done:
        chunk = sock.recv(65536)
        if not chunk:
            break
        for event in h2c.receive_data(chunk):
            if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream_id:
                response_headers = [(n.decode(), v.decode()) for n, v in event.headers]
                status = int(dict(response_headers)[":status"])
            elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
                data += event.data
                h2c.acknowledge_received_data(event.flow_controlled_length, stream_id)
            elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream_id:
                done = True
            elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream_id:
                done = True
        sock.sendall(h2c.data_to_send())
    return status, response_headers, data, conn


def forged_trailers(path):
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    h2c.initiate_connection()
    stream_id = h2c.get_next_available_stream_id()
    h2c.send_headers(stream_id, [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "127.0.0.1"),
                                 ("app-attest-verdict", "valid"), ("app-attest-counter", "7"), ("x-kept", "yes")])
    h2c.send_data(stream_id, b"abc")
    h2c.send_headers(stream_id, [("app-attest-verdict", "valid"), ("app-attest-key-id", "forged"), ("x-trailer", "t")],
                     end_stream=True)
    sock.sendall(h2c.data_to_send())
    status, headers, data, done = None, [], b"", False
    while not done:
        chunk = sock.recv(65536)
        if not chunk:
            break
        for event in h2c.receive_data(chunk):
            if isinstance(event, h2.events.ResponseReceived):
                headers = [[n.decode(), v.decode()] for n, v in event.headers]
                status = int(dict(headers)[":status"])
            elif isinstance(event, h2.events.DataReceived):
                data += event.data
                h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = True
        sock.sendall(h2c.data_to_send())
    result(status=status, headers=headers, body=data.decode("utf-8", "replace"))


def result(**fields):
    print(json.dumps(fields), flush=True)


def finish_abuse(c, **extra):
    c.read_all(timeout=5)
    g = c.goaway()
    result(goaway=g and g["error"], lastStreamID=g and g["lastStreamID"], closed=c.closed,
           sendFailed=c.send_failed, frames=[f["type"] for f in c.frames][-20:], **extra)


def preface_only():
    start = time.monotonic()
    c = RawConnection()
    c.read_all(timeout=10)
    g = c.goaway()
    result(goaway=g and g["error"], closed=c.closed, seconds=time.monotonic() - start)


def rapid_reset(count):
    c = RawConnection()
    sent = 0
    for i in range(count):
        sid = 1 + 2 * i
        ok = c.send_frames([c.headers_frame(sid, [(":method", "GET"), (":scheme", "http"), (":path", "/rr/%d?delay=2000" % i),
                                                  (":authority", "h")]),
                            RstStreamFrame(sid, error_code=8)])
        if not ok:
            break
        sent += 1
    c.read_all(timeout=5)
    g = c.goaway()
    status, _, _, _ = h2_request("/local/after-rapid-reset")
    result(sent=sent, goaway=g and g["error"], lastStreamID=g and g["lastStreamID"], closed=c.closed, after=status)


def continuation_flood():
    c = RawConnection()
    c.send_frames([c.headers_frame(1, [(":method", "GET"), (":scheme", "http"), (":path", "/local/cf"), (":authority", "h")],
                                   end_headers=False)])
    sent = 0
    for i in range(1000):
        if not c.send_frames([ContinuationFrame(1, data=c.block([("x-c%d" % i, "v")]))]):
            break
        sent += 1
    finish_abuse(c, sent=sent)


def continuation_bytes():
    c = RawConnection()
    c.send_frames([c.headers_frame(1, [(":method", "GET"), (":scheme", "http"), (":path", "/local/cb"), (":authority", "h")],
                                   end_headers=False)])
    sent = 0
    for i in range(7):
        # Never-indexed literals of incompressible values: the encoded block grows by ~16 KiB a frame.
        value = hashlib.sha512(str(i).encode()).hexdigest() * 250
        if not c.send_frames([ContinuationFrame(1, data=c.encoder.encode([("x-b%d" % i, value[:16000])], huffman=False))]):
            break
        sent += 1
    finish_abuse(c, sent=sent)


def header_too_large():
    c = RawConnection()
    extra = [("x-big-%d" % i, hashlib.sha256(str(i).encode()).hexdigest() * 15) for i in range(40)]  # 40 x ~1 KB
    block = c.block([(":method", "GET"), (":scheme", "http"), (":path", "/local/big"), (":authority", "h")] + extra)
    frames = [HeadersFrame(1, data=block[:16384], flags=["END_STREAM"])]
    rest = block[16384:]
    while rest:
        piece, rest = rest[:16384], rest[16384:]
        frames.append(ContinuationFrame(1, data=piece, flags=[] if rest else ["END_HEADERS"]))
    c.send_frames(frames)
    first = c.stream_outcome(1)
    c.request(3, "/local/after-big")
    second = c.stream_outcome(3)
    result(first=list(first), second=list(second), encoded=len(block), goaway=c.goaway() and c.goaway()["error"])


def hpack_bomb():
    c = RawConnection()
    headers = [(":method", "GET"), (":scheme", "http"), (":path", "/local/bomb"), (":authority", "h")]
    headers += [("x-bomb", "a" * 4000)] * 100
    block = c.block(headers)
    c.send_frames([HeadersFrame(1, data=block, flags=["END_STREAM", "END_HEADERS"])])
    finish_abuse(c, encoded=len(block))


def table_size_update():
    c = RawConnection()
    c.encoder.header_table_size = 65536  # the next block starts with a size update to 65536
    c.request(1, "/local/tsu")
    finish_abuse(c)


def settings_flood():
    c = RawConnection()
    c.send_frames([SettingsFrame(0, settings={})] * 2000)
    finish_abuse(c)


def ping_flood():
    c = RawConnection()
    c.send_frames([PingFrame(0, opaque_data=b"12345678")] * 2000)
    finish_abuse(c)


def priority_flood():
    # PRIORITY frames on idle streams: the session announces SETTINGS_NO_RFC7540_PRIORITIES, so
    # nghttp2 ignores them, but they still count as control frames.
    c = RawConnection()
    c.send_frames([PriorityFrame(2 * i + 1, depends_on=0, stream_weight=16) for i in range(2000)])
    finish_abuse(c)


def raw_frame(type_, stream, payload=b"", flags=0):
    return len(payload).to_bytes(3, "big") + bytes([type_, flags]) + stream.to_bytes(4, "big") + payload


def window_update_flood():
    # WINDOW_UPDATE frames with nothing sent in return (CVE-2019-9511 class): counted against the
    # DATA frames the server sent.
    c = RawConnection()
    c.send_frames([WindowUpdateFrame(0, window_increment=1)] * 2000)
    finish_abuse(c)


def priority_update_flood():
    # PRIORITY_UPDATE (RFC 9218 section 7.1, type 0x10) for stream 1, over and over.
    c = RawConnection()
    frame = raw_frame(0x10, 0, (1).to_bytes(4, "big") + b"u=3")
    c.send(frame * 2000)
    finish_abuse(c)


def unknown_frame_flood():
    # Frames of an unassigned type (0xfa): RFC 9113 section 4.1 has them ignored, not for free.
    c = RawConnection()
    c.send(raw_frame(0xFA, 0, b"") * 4000)
    finish_abuse(c)


def window_update_download(size):
    # A well-behaved client downloading `size` bytes with a small window, sending a connection and
    # a stream WINDOW_UPDATE after every DATA frame (the most a normal client sends).
    c = RawConnection(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 4096})
    c.request(1, "/zero?size=%d" % size)
    received = 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        f = c.read_frame(deadline)
        if f is None:
            break
        if f["type"] == "DATA" and f["stream"] == 1:
            received += f["length"]
            if f["length"]:
                c.send_frames([WindowUpdateFrame(0, window_increment=f["length"]),
                               WindowUpdateFrame(1, window_increment=f["length"])])
            if "END_STREAM" in f["flags"]:
                break
        if f["type"] in ("GOAWAY", "RST_STREAM"):
            break
    g = c.goaway()
    result(received=received, goaway=g and g["error"], resets=[f.get("error") for f in c.frames if f["type"] == "RST_STREAM"])


def dribble_body(count, interval):
    # A body of `count` bytes sent one byte every `interval` seconds: each gap is within the body
    # timeout, the whole body is not.
    c = RawConnection()
    c.request(1, "/local/dribble", method="POST", extra=[("content-length", str(count))], end_stream=False)
    start = time.monotonic()
    sent = 0
    outcome = None
    for i in range(count):
        last = i == count - 1
        if not c.send_frames([DataFrame(1, data=b"x", flags=["END_STREAM"] if last else [])]):
            break
        sent += 1
        f = c.read_until(lambda f: f["stream"] == 1 and f["type"] in ("RST_STREAM", "HEADERS"), timeout=interval)
        if f is not None:
            outcome = ["rst", f["error"]] if f["type"] == "RST_STREAM" else ["status", f["status"]]
            break
    if outcome is None:
        outcome = list(c.stream_outcome(1))
    result(outcome=outcome, sent=sent, seconds=time.monotonic() - start)


def unfinished_block():
    # One complete request, then a HEADERS frame without END_HEADERS and no CONTINUATION.
    c = RawConnection()
    c.request(1, "/local/first")
    first = list(c.stream_outcome(1))
    if not any(f["stream"] == 1 and "END_STREAM" in f["flags"] for f in c.frames):
        c.read_until(lambda f: f["stream"] == 1 and "END_STREAM" in f["flags"], timeout=2)
    block = c.block([(":method", "GET"), (":scheme", "http"), (":path", "/local/second"), (":authority", "h")])
    start = time.monotonic()
    c.send_frames([HeadersFrame(3, data=block[:2], flags=["END_STREAM"])])
    c.read_all(timeout=10)
    g = c.goaway()
    result(first=first, goaway=g and g["error"], closed=c.closed, seconds=time.monotonic() - start)


def body_hold(count, size, seconds):
    # `count` POST streams declaring `size` bytes each, sending everything flow control allows and
    # never finishing a body: how much the server let in (it holds all of it until the body timeout).
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    h2c.initiate_connection()
    sock.sendall(h2c.data_to_send())
    ids = []
    for i in range(count):
        sid = h2c.get_next_available_stream_id()
        h2c.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", "/local/hold%d" % i),
                               (":authority", "127.0.0.1:%d" % PORT), ("content-length", str(size))])
        ids.append(sid)
    sock.sendall(h2c.data_to_send())
    sent = {sid: 0 for sid in ids}
    deadline = time.monotonic() + seconds
    quiet_since = time.monotonic()
    closed = False
    sock.settimeout(0.05)
    while time.monotonic() < deadline and not closed:
        progress = False
        for sid in ids:
            room = min(h2c.local_flow_control_window(sid), size - 1 - sent[sid], h2c.max_outbound_frame_size)
            if room > 0:
                h2c.send_data(sid, b"x" * room)
                sent[sid] += room
                progress = True
        out = h2c.data_to_send()
        if out:
            try:
                sock.sendall(out)
            except OSError:
                closed = True
        try:
            chunk = sock.recv(65536)
            if not chunk:
                closed = True
            else:
                h2c.receive_data(chunk)
                sock.sendall(h2c.data_to_send())
        except socket.timeout:
            pass
        except (OSError, h2.exceptions.ProtocolError):
            closed = True
        if progress:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 0.5:
            break
    result(total=sum(sent.values()), largest=max(sent.values()), smallest=min(sent.values()), closed=closed)


def zero_window_streams(count, path):
    # `count` GET streams with a zero flow-control window: every response waits in the server.
    c = RawConnection(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    c.read_until(lambda f: f["type"] == "SETTINGS" and "ACK" not in f["flags"])
    c.send_frames([SettingsFrame(0, flags=["ACK"])])
    for i in range(count):
        c.request(1 + 2 * i, path)
    print("READY", flush=True)
    c.read_all(timeout=3)
    result(headers=sum(1 for f in c.frames if f["type"] == "HEADERS"), goaway=c.goaway() and c.goaway()["error"])


def settings_entries():
    c = RawConnection()
    f = SettingsFrame(0)
    payload = b"".join((0x4).to_bytes(2, "big") + (65535 + i).to_bytes(4, "big") for i in range(40))
    raw = len(payload).to_bytes(3, "big") + b"\x04\x00" + (0).to_bytes(4, "big") + payload
    c.send(raw)
    finish_abuse(c)


def empty_data_flood():
    c = RawConnection()
    c.request(1, "/local/edf", method="POST", end_stream=False)
    c.send_frames([DataFrame(1, data=b"")] * 200)
    finish_abuse(c)


def max_concurrent(acked):
    if acked:
        c = RawConnection()
        server_settings = c.read_until(lambda f: f["type"] == "SETTINGS" and "ACK" not in f["flags"])
        c.send_frames([SettingsFrame(0, flags=["ACK"])])
        c.read_until(lambda f: f["type"] == "SETTINGS" and "ACK" in f["flags"])
        count = 101
    else:
        c = RawConnection()
        server_settings = None
        count = 110
    frames = []
    for i in range(count):
        frames.append(c.headers_frame(1 + 2 * i, [(":method", "POST"), (":scheme", "http"), (":path", "/local/mc%d" % i),
                                                  (":authority", "h")], end_stream=False))
    c.send_frames(frames)
    deadline = time.monotonic() + 1
    while c.read_frame(deadline) is not None:
        if any(f["type"] == "GOAWAY" for f in c.frames):
            break
    refused = sorted(f["stream"] for f in c.frames if f["type"] == "RST_STREAM" and f["error"] == "REFUSED_STREAM")
    # NO_ERROR resets follow the 408 answers of streams whose body never came (body timeout).
    other = sorted(f["stream"] for f in c.frames if f["type"] == "RST_STREAM" and f["error"] not in ("REFUSED_STREAM", "NO_ERROR"))
    g = c.goaway()
    result(refused=refused, otherResets=other, goaway=g and g["error"],
           advertised=server_settings and server_settings["settings"].get("3"))


BAD_CASES = [
    ("missing :path", [(":method", "GET"), (":scheme", "http"), (":authority", "h")]),
    ("missing :method", [(":scheme", "http"), (":path", "/local/x"), (":authority", "h")]),
    ("missing :scheme", [(":method", "GET"), (":path", "/local/x"), (":authority", "h")]),
    ("empty :path", [(":method", "GET"), (":scheme", "http"), (":path", ""), (":authority", "h")]),
    ("duplicated :method", [(":method", "GET"), (":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h")]),
    ("duplicated :path", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":path", "/local/y"), (":authority", "h")]),
    ("unknown pseudo-header", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), (":foo", "bar")]),
    ("response pseudo-header", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), (":status", "200")]),
    ("pseudo-header after regular", [(":method", "GET"), (":scheme", "http"), ("x-a", "1"), (":path", "/local/x"), (":authority", "h")]),
    ("uppercase name", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("X-Upper", "1")]),
    ("connection", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("connection", "keep-alive")]),
    ("keep-alive", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("keep-alive", "timeout=5")]),
    ("proxy-connection", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("proxy-connection", "keep-alive")]),
    ("transfer-encoding", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("transfer-encoding", "chunked")]),
    ("upgrade", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("upgrade", "h2c")]),
    ("te gzip", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("te", "gzip")]),
    ("space in name", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("x a", "1")]),
    ("CR in value", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("x-a", "1\r\nx-b: 2")]),
    ("control byte in value", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("x-a", "1\x01")]),
    ("leading space in value", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("x-a", " 1")]),
    ("host differs from :authority", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "a.test"), ("host", "b.test")]),
    ("two host fields", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), ("host", "a.test"), ("host", "a.test")]),
    ("userinfo in :authority", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "user@a.test")]),
    ("no :authority nor host", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x")]),
    ("two content-length", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("content-length", "0"), ("content-length", "0")]),
    ("bad content-length", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("content-length", "abc")]),
]
REFUSED_CASES = [
    ("target not in normal form", [(":method", "GET"), (":scheme", "http"), (":path", "/a/../b"), (":authority", "h")]),
    ("asterisk form", [(":method", "OPTIONS"), (":scheme", "http"), (":path", "*"), (":authority", "h")]),
    ("CONNECT", [(":method", "CONNECT"), (":authority", "a.test:443")]),
    ("expect other than 100-continue", [(":method", "GET"), (":scheme", "http"), (":path", "/local/x"), (":authority", "h"), ("expect", "teapot")]),
    # Not host[:port]: the 400 host_invalid HTTP/1.1 gives the same Host.
    ("authority with two ports", [(":method", "GET"), (":scheme", "http"), (":path", "/local/auth1"), (":authority", "evil.com:80:80")]),
    ("authority port out of range", [(":method", "GET"), (":scheme", "http"), (":path", "/local/auth2"), (":authority", "h:99999")]),
    ("authority unclosed IPv6 literal", [(":method", "GET"), (":scheme", "http"), (":path", "/local/auth3"), (":authority", "[::1")]),
    ("host not host-port", [(":method", "GET"), (":scheme", "http"), (":path", "/local/auth4"), ("host", "a:b:c")]),
    ("userinfo in host", [(":method", "GET"), (":scheme", "http"), (":path", "/local/auth5"), ("host", "user@evil.com")]),
    # A lower-case letter in the method: the 400 method_invalid HTTP/1.1 gives (an application that
    # folds the case would run POST where a POST-only route was passed by).
    ("lower-case method", [(":method", "post"), (":scheme", "http"), (":path", "/local/method1"), (":authority", "h")]),
    ("mixed-case method", [(":method", "Delete"), (":scheme", "http"), (":path", "/local/method2"), (":authority", "h")]),
]
GOOD_CASES = [
    ("te trailers", [(":method", "GET"), (":scheme", "http"), (":path", "/local/te"), (":authority", "h"), ("te", "trailers")]),
    ("host equal to :authority", [(":method", "GET"), (":scheme", "http"), (":path", "/local/h"), (":authority", "A.test"), ("host", "a.TEST")]),
    ("host without :authority", [(":method", "GET"), (":scheme", "http"), (":path", "/local/h2"), ("host", "a.test")]),
    ("upper-case extension method", [(":method", "PROPFIND"), (":scheme", "http"), (":path", "/local/m"), (":authority", "h")]),
]


def bad_headers():
    c = RawConnection()
    outcomes = {}
    sid = 1
    for name, headers in BAD_CASES + REFUSED_CASES + GOOD_CASES:
        c.send_frames([HeadersFrame(sid, data=c.block(headers), flags=["END_STREAM", "END_HEADERS"])])
        outcomes[name] = list(c.stream_outcome(sid))
        sid += 2
    c.request(sid, "/local/after-bad")
    outcomes["after"] = list(c.stream_outcome(sid))
    g = c.goaway()
    result(outcomes=outcomes, goaway=g and g["error"])


def content_length():
    c = RawConnection()
    out = {}
    for sid, declared, body in [(1, "10", b"hello"), (3, "3", b"hello"), (5, "5", b"hello")]:
        c.request(sid, "/local/cl%d" % sid, method="POST", extra=[("content-length", declared)], end_stream=False)
        c.send_frames([DataFrame(sid, data=body, flags=["END_STREAM"])])
        out[declared] = list(c.stream_outcome(sid))
    result(outcomes=out, goaway=c.goaway() and c.goaway()["error"])


def zero_window():
    c = RawConnection(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    c.read_until(lambda f: f["type"] == "SETTINGS" and "ACK" not in f["flags"])
    c.send_frames([SettingsFrame(0, flags=["ACK"])])
    start = time.monotonic()
    c.request(1, "/zero?size=1000000")
    c.read_all(timeout=10)
    closed_after = time.monotonic() - start
    g = c.goaway()
    data = sum(f["length"] for f in c.frames if f["type"] == "DATA")
    statuses = [f["status"] for f in c.frames if f["type"] == "HEADERS"]
    result(goaway=g and g["error"], closed=c.closed, seconds=closed_after, dataBytes=data, statuses=statuses)


def stalled_reader(path):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    sock.connect(("127.0.0.1", PORT))
    big = 2 ** 31 - 1
    sock.sendall(PREFACE + SettingsFrame(0, settings={SettingsFrame.INITIAL_WINDOW_SIZE: big}).serialize()
                 + WindowUpdateFrame(0, window_increment=big - 65535).serialize())
    c = RawConnection.__new__(RawConnection)
    c.sock, c.buffer, c.encoder, c.decoder, c.closed, c.send_failed, c.frames = sock, b"", Encoder(), Decoder(), False, False, []
    c.request(1, path)
    print("READY", flush=True)
    start = time.monotonic()
    time.sleep(3)
    # Now read whatever is left until the server's close.
    received = 0
    sock.settimeout(10)
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            received += len(chunk)
    except OSError:
        pass
    result(received=received, seconds=time.monotonic() - start)


def slow_reader(size):
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    config = h2.config.H2Configuration(client_side=True)
    h2c = h2.connection.H2Connection(config=config)
    h2c.local_settings = h2.settings.Settings(client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16384})
    h2c.initiate_connection()
    sock.sendall(h2c.data_to_send())
    stream_id = h2c.get_next_available_stream_id()
    h2c.send_headers(stream_id, [(":method", "GET"), (":scheme", "http"), (":path", "/slow-reader?size=%d" % size),
                                 (":authority", "h")], end_stream=True)
    sock.sendall(h2c.data_to_send())
    body, headers, done = b"", {}, False
    while not done:
        chunk = sock.recv(16384)
        if not chunk:
            break
        for event in h2c.receive_data(chunk):
            if isinstance(event, h2.events.ResponseReceived):
                headers = {n.decode(): v.decode() for n, v in event.headers}
            elif isinstance(event, h2.events.DataReceived):
                body += event.data
                h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = True
        sock.sendall(h2c.data_to_send())
        time.sleep(0.002)
    ok = hashlib.sha256(body).hexdigest() == headers.get("x-content-sha256")
    status, _, after, _ = h2_request("/local/after-slow", conn=(sock, h2c))
    result(ok=ok, length=len(body), status=headers.get(":status"), after=status)


def cancel(path):
    c = RawConnection()
    c.request(1, path)
    time.sleep(0.3)
    c.send_frames([RstStreamFrame(1, error_code=8)])
    start = time.monotonic()
    c.request(3, "/local/after-cancel")
    after = c.stream_outcome(3)
    result(after=list(after), seconds=time.monotonic() - start)


def drain(path):
    c = RawConnection()
    c.read_until(lambda f: f["type"] == "SETTINGS" and "ACK" not in f["flags"])
    c.send_frames([SettingsFrame(0, flags=["ACK"])])
    c.request(1, path)
    print("READY", flush=True)
    c.read_until(lambda f: f["type"] == "GOAWAY", timeout=10)
    # A stream opened after the shutdown notice, before the final GOAWAY: still served.
    c.request(3, "/local/after-notice")
    c.read_all(timeout=10)
    events = []
    for f in c.frames:
        if f["type"] in ("GOAWAY", "HEADERS", "RST_STREAM") or (f["type"] == "DATA" and "END_STREAM" in f["flags"]):
            events.append({k: f.get(k) for k in ("type", "stream", "error", "lastStreamID", "status")})
    body = sum(f["length"] for f in c.frames if f["type"] == "DATA" and f["stream"] == 1)
    result(events=events, closed=c.closed, body1=body)


def early_response(path, size):
    """The server answers before the request ended (e.g. 413): RFC 9113 section 8.1 lets it reset the
    stream with NO_ERROR after a complete response. Records that stream's frames in order."""
    c = RawConnection()
    c.read_until(lambda f: f["type"] == "SETTINGS" and "ACK" not in f["flags"])
    c.send_frames([SettingsFrame(0, flags=["ACK"])])
    c.request(1, path, method="POST", end_stream=False)
    c.send_frames([DataFrame(1, data=b"x" * size)])
    c.read_until(lambda f: f["stream"] == 1 and (f["type"] == "RST_STREAM" or
                                                  (f["type"] == "DATA" and "END_STREAM" in f["flags"])))
    # A reset that follows the END_STREAM comes in the same write or just after it.
    c.read_until(lambda f: f["stream"] == 1 and f["type"] == "RST_STREAM", timeout=1.0)
    events = [{k: f[k] for k in ("type", "flags", "length", "status", "error") if k in f}
              for f in c.frames if f["stream"] == 1]
    c.request(3, path)
    after = c.stream_outcome(3)
    headers = next((f["headers"] for f in c.frames if f["stream"] == 1 and f["type"] == "HEADERS"), [])
    result(events=events, headers=headers, after=list(after), goaway=c.goaway() is not None)


def uploads(count, size, path):
    # `count` complete uploads on one connection: how many bytes flow control let the client send
    # before it stopped (while the server holds the bodies), then every response.
    sep = "&" if "?" in path else "?"
    upload_list([(size, "%s%sn=%d" % (path, sep, i)) for i in range(count)])


def upload_list(specs, first_alone=False):
    # Complete uploads (size, path) on one connection, sent as fast as flow control allows; prints
    # STALLED <bytes> once nothing could be sent for 0.5 s (or all was sent), then the result with the
    # status of each upload in order (0: none) and when it ended (seconds). `first_alone`: the other
    # bodies start once the first one was sent whole.
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    h2c.initiate_connection()
    sock.sendall(h2c.data_to_send())
    start = time.monotonic()
    ids = []
    sizes = {}
    for size, path in specs:
        sid = h2c.get_next_available_stream_id()
        h2c.send_headers(sid, [(":method", "POST"), (":scheme", "http"), (":path", path),
                               (":authority", "127.0.0.1:%d" % PORT), ("content-length", str(size))])
        ids.append(sid)
        sizes[sid] = size
    sock.sendall(h2c.data_to_send())
    count = len(ids)
    sent = {sid: 0 for sid in ids}
    statuses = {}
    ended = {}
    chunk = b"x" * 16384
    stalled = None
    deadline = time.monotonic() + 30
    quiet_since = time.monotonic()
    closed = False
    sock.settimeout(0.02)
    while time.monotonic() < deadline and not closed and len(ended) < count:
        progress = False
        for index, sid in enumerate(ids):
            if first_alone and index > 0 and sent[ids[0]] < sizes[ids[0]] and ids[0] not in ended:
                break
            room = min(h2c.local_flow_control_window(sid), sizes[sid] - sent[sid], h2c.max_outbound_frame_size) \
                if sent[sid] < sizes[sid] and sid not in ended else 0
            if room > 0:
                sent[sid] += room
                h2c.send_data(sid, chunk[:room], end_stream=sent[sid] == sizes[sid])
                progress = True
        out = h2c.data_to_send()
        if out:
            try:
                sock.sendall(out)
            except OSError:
                closed = True
        try:
            data = sock.recv(65536)
            if not data:
                closed = True
            else:
                for event in h2c.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived):
                        statuses[event.stream_id] = int(dict(event.headers)[b":status"])
                    elif isinstance(event, h2.events.DataReceived):
                        h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                        ended.setdefault(event.stream_id, round(time.monotonic() - start, 3))
                sock.sendall(h2c.data_to_send())
        except socket.timeout:
            pass
        except (OSError, h2.exceptions.ProtocolError):
            closed = True
        now = time.monotonic()
        if progress:
            quiet_since = now
        if stalled is None and (now - quiet_since > 0.5 or all(sent[sid] == sizes[sid] for sid in ids)):
            stalled = sum(sent.values())
            print("STALLED %d" % stalled, flush=True)
    result(stalled=stalled, total=sum(sent.values()), complete=sum(1 for sid in ids if sent[sid] == sizes[sid]),
           ok=sum(1 for sid in ids if statuses.get(sid) == 200 and sid in ended), closed=closed,
           statuses=[statuses.get(sid, 0) for sid in ids], ended=[ended.get(sid) for sid in ids])


def main():
    global PORT
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("scenario")
    parser.add_argument("arg", nargs="?")
    parser.add_argument("arg2", nargs="?")
    parser.add_argument("arg3", nargs="?")
    args = parser.parse_args()
    PORT = args.port
    s = args.scenario
    if s == "request":
        status, headers, body, _ = h2_request(args.arg)
        result(status=status, headers=headers, length=len(body), sha256=hashlib.sha256(body).hexdigest())
    elif s == "forged-trailers":
        forged_trailers(args.arg)
    elif s == "preface-only":
        preface_only()
    elif s == "rapid-reset":
        rapid_reset(int(args.arg or "500"))
    elif s == "continuation-flood":
        continuation_flood()
    elif s == "continuation-bytes":
        continuation_bytes()
    elif s == "header-too-large":
        header_too_large()
    elif s == "hpack-bomb":
        hpack_bomb()
    elif s == "table-size-update":
        table_size_update()
    elif s == "settings-flood":
        settings_flood()
    elif s == "ping-flood":
        ping_flood()
    elif s == "priority-flood":
        priority_flood()
    elif s == "window-update-flood":
        window_update_flood()
    elif s == "priority-update-flood":
        priority_update_flood()
    elif s == "unknown-frame-flood":
        unknown_frame_flood()
    elif s == "window-update-download":
        window_update_download(int(args.arg))
    elif s == "dribble-body":
        dribble_body(int(args.arg), float(args.arg2))
    elif s == "unfinished-block":
        unfinished_block()
    elif s == "body-hold":
        body_hold(int(args.arg), int(args.arg2), 3.0)
    elif s == "zero-window-streams":
        zero_window_streams(int(args.arg), args.arg2)
    elif s == "settings-entries":
        settings_entries()
    elif s == "empty-data-flood":
        empty_data_flood()
    elif s == "max-concurrent":
        max_concurrent(False)
    elif s == "max-concurrent-acked":
        max_concurrent(True)
    elif s == "bad-headers":
        bad_headers()
    elif s == "content-length":
        content_length()
    elif s == "zero-window":
        zero_window()
    elif s == "stalled-reader":
        stalled_reader(args.arg)
    elif s == "slow-reader":
        slow_reader(int(args.arg))
    elif s == "cancel":
        cancel(args.arg)
    elif s == "drain":
        drain(args.arg)
    elif s == "upload-list":
        upload_list([(int(item.split("@", 1)[0]), item.split("@", 1)[1]) for item in args.arg.split(",")],
                    first_alone=args.arg2 == "first-alone")
    elif s == "uploads":
        uploads(int(args.arg), int(args.arg2), args.arg3)
    elif s == "early-response":
        early_response(args.arg, int(args.arg2 or "1"))
    else:
        parser.error("unknown scenario " + s)


if __name__ == "__main__":
    sys.exit(main())
