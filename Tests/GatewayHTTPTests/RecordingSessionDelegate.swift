import CNghttp2
@testable import GatewayHTTP
import GatewayIO
import XCTest

/// Records every event of an `HTTP2Session`; answers as `onOpened` says.
final class RecordingSessionDelegate: HTTP2SessionDelegate {
    var session: HTTP2Session!
    var events: [String] = []
    var heads: [Int32: HTTPRequestHead] = [:]
    var bodies: [Int32: [UInt8]] = [:]
    var trailers: [Int32: HTTPHeaders] = [:]
    var refused: [Int32: HTTPError] = [:]
    var closed: [Int32: HTTP2ErrorCode] = [:]
    /// Response body bytes per stream waiting to be read by nghttp2, and whether they are all there.
    var pendingBody: [Int32: [UInt8]] = [:]
    var bodyComplete: [Int32: Bool] = [:]
    var onOpened: ((Int32, HTTPRequestHead) -> Void)?
    var onEnded: ((Int32) -> Void)?

    func http2StreamOpened(_ streamID: Int32, head: HTTPRequestHead) {
        events.append("opened \(streamID)")
        heads[streamID] = head
        onOpened?(streamID, head)
    }

    func http2StreamRefused(_ streamID: Int32, error: HTTPError, method: HTTPMethod?, target: [UInt8]?) {
        events.append("refused \(streamID) \(error.code)")
        refused[streamID] = error
    }

    func http2StreamMalformed(_ streamID: Int32, method: HTTPMethod?, target: [UInt8]?) {
        events.append("malformed \(streamID)")
    }

    func http2StreamData(_ streamID: Int32, _ bytes: UnsafeRawBufferPointer) {
        bodies[streamID, default: []].append(contentsOf: bytes)
    }

    func http2StreamEnded(_ streamID: Int32, trailers: HTTPHeaders) {
        events.append("ended \(streamID)")
        self.trailers[streamID] = trailers
        onEnded?(streamID)
    }

    func http2StreamReset(_ streamID: Int32, error: HTTP2ErrorCode) {
        events.append("reset \(streamID) \(error)")
    }

    func http2StreamClosed(_ streamID: Int32, error: HTTP2ErrorCode) {
        events.append("closed \(streamID) \(error)")
        closed[streamID] = error
    }

    func http2ReadResponseBody(_ streamID: Int32, into buffer: UnsafeMutableRawBufferPointer) -> HTTP2Session.BodyRead {
        var pending = pendingBody[streamID] ?? []
        let n = min(buffer.count, pending.count)
        pending.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: n) }
        pending.removeFirst(n)
        pendingBody[streamID] = pending
        let complete = bodyComplete[streamID] ?? false
        if pending.isEmpty && complete { return .bytes(n, end: true) }
        if n == 0 { return .deferred }
        return .bytes(n, end: false)
    }

    /// Answers `streamID` with `status`, `headers` and `body` (all at once, or `complete: false` to
    /// hold the end of the body back).
    func respond(_ streamID: Int32, status: Int = 200, headers: [(String, String)] = [], body: [UInt8] = [],
                 complete: Bool = true) {
        var h = HTTPHeaders()
        for (n, v) in headers { try? h.add(name: n, value: v) }
        pendingBody[streamID] = body
        bodyComplete[streamID] = complete
        session.submitResponse(streamID: streamID, status: status, headers: h, contentLength: complete ? body.count : nil,
                               date: nil, hasBody: !body.isEmpty || !complete)
    }
}
