import CNghttp2
@testable import GatewayHTTP
import GatewayIO
import XCTest

/// A client-side nghttp2 session for driving `HTTP2Session` without sockets, plus crafted frames for
/// what a well-behaved client library cannot send.
final class HTTP2TestClient {
    struct Response {
        var status: Int?
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        var ended = false
        var reset: UInt32?
        var interim: [Int] = []
        /// Names of the fields received "never indexed" (RFC 7541 section 6.2.3).
        var neverIndexed: [String] = []
    }

    private var session: OpaquePointer!
    var responses: [Int32: Response] = [:]
    var goaways: [(lastStreamID: Int32, error: UInt32)] = []
    var pingAcks = 0

    /// A client session that has queued its preface and SETTINGS.
    init(settings: [(Int32, UInt32)] = []) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, flags, ud in
            let c = Unmanaged<HTTP2TestClient>.fromOpaque(ud!).takeUnretainedValue()
            let n = String(decoding: UnsafeRawBufferPointer(start: name, count: nameLength), as: UTF8.self)
            let v = String(decoding: UnsafeRawBufferPointer(start: value, count: valueLength), as: UTF8.self)
            let id = frame!.pointee.hd.stream_id
            if n == ":status", let s = Int(v) {
                if s < 200 { c.responses[id, default: Response()].interim.append(s) } else { c.responses[id, default: Response()].status = s }
            } else {
                c.responses[id, default: Response()].headers.append((n, v))
            }
            if flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0 { c.responses[id, default: Response()].neverIndexed.append(n) }
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, id, data, length, ud in
            let c = Unmanaged<HTTP2TestClient>.fromOpaque(ud!).takeUnretainedValue()
            c.responses[id, default: Response()].body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, ud in
            let c = Unmanaged<HTTP2TestClient>.fromOpaque(ud!).takeUnretainedValue()
            let hd = frame!.pointee.hd
            switch UInt32(hd.type) {
            case NGHTTP2_GOAWAY.rawValue:
                c.goaways.append((frame!.pointee.goaway.last_stream_id, frame!.pointee.goaway.error_code))
            case NGHTTP2_RST_STREAM.rawValue:
                c.responses[hd.stream_id, default: Response()].reset = frame!.pointee.rst_stream.error_code
            case NGHTTP2_PING.rawValue where hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
                c.pingAcks += 1
            case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
                if hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { c.responses[hd.stream_id, default: Response()].ended = true }
            default:
                break
            }
            return 0
        }
        var s: OpaquePointer?
        nghttp2_session_client_new(&s, callbacks, Unmanaged.passUnretained(self).toOpaque())
        session = s
        var entries = settings.map { nghttp2_settings_entry(settings_id: $0.0, value: $0.1) }
        nghttp2_submit_settings(session, 0, &entries, entries.count)
    }

    deinit { nghttp2_session_del(session) }

    /// Submits a request; returns its stream identifier.
    @discardableResult
    func request(_ headers: [(String, String)], body: [UInt8]? = nil) -> Int32 {
        withNV(headers) { nv in
            guard let body else { return nghttp2_submit_request(session, nil, nv, nv.count, nil, nil) }
            pendingBodies.append(body)
            let index = pendingBodies.count - 1
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: UnsafeMutableRawPointer(bitPattern: index + 1)),
                                                 read_callback: HTTP2TestClient.readBody)
            return nghttp2_submit_request(session, nil, nv, nv.count, &provider, Unmanaged.passUnretained(self).toOpaque())
        }
    }

    private var pendingBodies: [[UInt8]] = []
    private var bodyOffsets: [Int: Int] = [:]

    private static let readBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, ud in
        let c = Unmanaged<HTTP2TestClient>.fromOpaque(ud!).takeUnretainedValue()
        let index = Int(bitPattern: source!.pointee.ptr) - 1
        let body = c.pendingBodies[index]
        let offset = c.bodyOffsets[index, default: 0]
        let n = min(length, body.count - offset)
        body.withUnsafeBytes { UnsafeMutableRawPointer(buffer!).copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
        c.bodyOffsets[index] = offset + n
        if offset + n == body.count { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return n
    }

    /// Submits a request whose body never comes (its data source always defers): the stream stays
    /// open on the client side.
    @discardableResult
    func requestWithOpenBody(_ headers: [(String, String)]) -> Int32 {
        withNV(headers) { nv in
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: { _, _, _, _, _, _, _ in
                Int(NGHTTP2_ERR_DEFERRED.rawValue)
            })
            return nghttp2_submit_request(session, nil, nv, nv.count, &provider, nil)
        }
    }

    func reset(_ stream: Int32, error: UInt32 = 8) { nghttp2_submit_rst_stream(session, 0, stream, error) }
    func ping() { nghttp2_submit_ping(session, 0, nil) }

    /// Calls `body` with name/value pairs pointing into one buffer (nghttp2 copies them on submit).
    private func withNV<R>(_ headers: [(String, String)], _ body: ([nghttp2_nv]) -> R) -> R {
        var bytes: [UInt8] = []
        var spans: [(Int, Int, Int, Int)] = []
        for (name, value) in headers {
            let ns = bytes.count
            bytes += Array(name.utf8)
            let vs = bytes.count
            bytes += Array(value.utf8)
            spans.append((ns, name.utf8.count, vs, value.utf8.count))
        }
        bytes.append(0)  // never empty
        return bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            let nv = spans.map { nghttp2_nv(name: base + $0.0, value: base + $0.2, namelen: $0.1, valuelen: $0.3,
                                            flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)) }
            return body(nv)
        }
    }

    /// Bytes the client wants to send.
    func output() -> [UInt8] {
        var out: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else { break }
            out.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
        return out
    }

    /// Feeds server bytes.
    func input(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        _ = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
    }

    // MARK: crafted frames (RFC 9113 section 4.1)

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// One frame of server output, undecoded (RFC 9113 section 4.1).
    struct RawFrame {
        var type: UInt8
        var flags: UInt8
        var stream: Int32
        var payload: [UInt8]
        /// GOAWAY: (last stream identifier, error code); RST_STREAM: (stream, error code).
        var code: UInt32 {
            let at = type == 7 ? 4 : 0
            return UInt32(payload[at]) << 24 | UInt32(payload[at + 1]) << 16 | UInt32(payload[at + 2]) << 8 | UInt32(payload[at + 3])
        }
        var lastStreamID: Int32 {
            Int32(payload[0] & 0x7F) << 24 | Int32(payload[1]) << 16 | Int32(payload[2]) << 8 | Int32(payload[3])
        }
    }

    /// Splits server output into frames.
    static func frames(_ bytes: [UInt8]) -> [RawFrame] {
        var out: [RawFrame] = []
        var i = 0
        while i + 9 <= bytes.count {
            let n = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 9 + n <= bytes.count else { break }
            let stream = Int32(bytes[i + 5] & 0x7F) << 24 | Int32(bytes[i + 6]) << 16 | Int32(bytes[i + 7]) << 8 | Int32(bytes[i + 8])
            out.append(RawFrame(type: bytes[i + 3], flags: bytes[i + 4], stream: stream, payload: Array(bytes[(i + 9)..<(i + 9 + n)])))
            i += 9 + n
        }
        return out
    }

    static func frame(type: UInt8, flags: UInt8 = 0, stream: Int32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags,
                UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    /// HPACK (RFC 7541): `:method GET`, `:scheme http`, `:path /`, then `:authority h` (literal, indexed name).
    static let minimalRequestBlock: [UInt8] = [0x82, 0x86, 0x84, 0x01, 0x01, 0x68]

    /// HPACK literal field without indexing, new name (RFC 7541 section 6.2.2); lengths below 127.
    static func literal(_ name: String, _ value: String) -> [UInt8] {
        [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
    }

    /// HPACK literal with incremental indexing, new name (RFC 7541 section 6.2.1), with a long value.
    static func indexedLiteral(_ name: String, valueLength: Int) -> [UInt8] {
        var out: [UInt8] = [0x40, UInt8(name.utf8.count)] + Array(name.utf8)
        // String length with a 7-bit prefix (RFC 7541 section 5.1), not Huffman-coded.
        var n = valueLength
        if n < 127 {
            out.append(UInt8(n))
        } else {
            out.append(127)
            n -= 127
            while n >= 128 {
                out.append(UInt8(n % 128 + 128))
                n /= 128
            }
            out.append(UInt8(n))
        }
        return out + Array(repeating: 0x61, count: valueLength)
    }
}
