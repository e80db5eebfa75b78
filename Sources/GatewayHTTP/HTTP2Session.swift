// The server side of one HTTP/2 connection over nghttp2: bytes in, bytes out, events, no sockets.

import CNghttp2
import GatewayIO
import GatewayRules

/// One server-side `nghttp2_session` (RFC 9113), with the application rules nghttp2 leaves to us.
///
/// No sockets: feed received bytes to `receive(_:now:)` (which calls the delegate for every event) and
/// collect the bytes to send with `produceOutput(into:limit:)`. Responses go in with
/// `submitResponse(streamID:status:headers:contentLength:date:hasBody:)`; their body is pulled from
/// the delegate (`HTTP2SessionDelegate.http2ReadResponseBody`) as the flow-control windows allow, and a
/// body that has nothing yet defers until `resumeData(_:)`.
///
/// What nghttp2 does (HTTP messaging on): framing, HPACK, flow control, stream states, the client
/// preface, RFC 9113 section 8 request checks (see `HTTP2RequestHeadBuilder` for the split), content-
/// length against DATA received, SETTINGS entries per frame (`max_settings`) and queued ACKs
/// (`max_outbound_ack`). What this type adds, each ending the connection with GOAWAY
/// `ENHANCE_YOUR_CALM` (RFC 9113 section 10.5): more than `maxContinuationFrames` CONTINUATION frames
/// or an encoded header block over twice the header list size (CVE-2024-27316 class); a decoded
/// header list past its hard bound (HPACK bomb); more than `maxResetsInWindow` client RST_STREAM
/// frames within the last `resetWindowStreams` streams opened (rapid reset, CVE-2023-44487); more than
/// `maxControlFramesPerWindow` SETTINGS, PING, PRIORITY and extension frames (PRIORITY_UPDATE, types
/// nghttp2 does not know) per `controlFrameWindow`; more than `maxEmptyDataFrames` zero-length DATA
/// frames without END_STREAM; more WINDOW_UPDATE frames than `5 + 2 × (streams opened +
/// maxWindowUpdatesPerDataFrame × DATA frames sent)` (Envoy's budget). Request bodies: the connection
/// window always reopens as DATA arrives, stream windows only while the bodies the connection holds
/// stay within `requestBodyBufferBytes`: those still arriving, and the complete ones until the
/// connection says they are gone (`releaseRequestBody(_:)`: written to the upstream socket, or
/// answered without it) or the stream closes. The oldest body still arriving always gets its window
/// while the complete ones alone are within the budget, so slow uploads cannot pile up, nor complete
/// bodies waiting for a slow upstream, and no upload deadlocks (complete bodies leave the budget
/// without the client's help: upstream writes, answers, timeouts).
///
/// Confined to one queue: every method and every delegate call run on the owner's queue. nghttp2's C
/// callbacks reach this object through an unmanaged pointer in `user_data` (no closure captures).
package final class HTTP2Session {
    /// What the delegate hands nghttp2 for a DATA frame.
    package enum BodyRead {
        /// `count` bytes were written to the buffer; `end` when they are the last of the body
        /// (END_STREAM; `count` may then be 0).
        case bytes(Int, end: Bool)
        /// Nothing yet: nghttp2 waits until `resumeData(_:)`.
        case deferred
    }

    private var session: OpaquePointer?
    private unowned let delegate: any HTTP2SessionDelegate
    private let settings: HTTP2Settings
    private let listLimit: Int
    private let countLimit: Int
    private let policy: RequestTargetPolicy

    /// The header block being received (header blocks never interleave: RFC 9113 section 4.3).
    /// Release builds drop its run-time exclusivity check (`@exclusivity(unchecked)`; debug builds
    /// keep it): two accesses per received field, each a leaf (the builder is a value; nothing is
    /// called while `add` or `finish` runs). bench/PERFORMANCE.md "Seventh pass".
    #if DEBUG
    private var block: HTTP2RequestHeadBuilder?
    #else
    @exclusivity(unchecked) private var block: HTTP2RequestHeadBuilder?
    #endif
    private var blockEncodedBytes = 0
    private var blockStartedAt: UInt64 = 0
    private var continuations = 0
    private var termination: HTTP2ErrorCode?
    /// The GOAWAY error code once the connection is ending with an error: set when this type decided
    /// it, or once nghttp2's own GOAWAY (e.g. `COMPRESSION_ERROR`) is handed out for sending.
    #if DEBUG
    package private(set) var terminatedWith: HTTP2ErrorCode?
    #else
    @exclusivity(unchecked) package private(set) var terminatedWith: HTTP2ErrorCode?
    #endif
    /// When the header block being received (request or trailers, HEADERS then CONTINUATION
    /// frames) began, monotonic nanoseconds; nil between blocks. The connection bounds it with
    /// `timeouts.header`.
    package var headerBlockStarted: UInt64? { block == nil ? nil : blockStartedAt }
    /// Whether nghttp2 is running (receive or send): nested calls are refused. Like `terminatedWith`,
    /// read by the connection on every flush; release builds drop the run-time exclusivity check of
    /// both (plain values, whose accesses never overlap a call).
    #if DEBUG
    package private(set) var isBusy = false
    #else
    @exclusivity(unchecked) package private(set) var isBusy = false
    #endif
    private var now: UInt64 = 0

    // Abuse budgets. `resetRing` has no run-time exclusivity check in release builds (debug builds
    // keep it): written once per stream opened, read when a reset arrives, each access a leaf.
    private var streamsOpened = 0
    private var resetsReceived = 0
    #if DEBUG
    private var resetRing: [Int]
    #else
    @exclusivity(unchecked) private var resetRing: [Int]
    #endif
    private var controlWindowStart: UInt64 = 0
    private var controlFrames = 0
    private let controlWindowNanos: UInt64
    private var emptyDataFrames = 0
    private var windowUpdatesReceived = 0
    private var dataFramesSent = 0

    // Request body flow control: WINDOW_UPDATE is ours to send (nghttp2's automatic updates are off).
    // Release builds drop the run-time exclusivity check of the four collections below (debug builds
    // keep it): every access is a leaf (a dictionary or array operation, or a call into nghttp2 that
    // calls nothing back: `nghttp2_session_consume_*`, `nghttp2_session_set_local_window_size`), and
    // each END_STREAM and close reads them (bench/PERFORMANCE.md, "Session 32").
    /// Streams whose request body is still arriving, oldest first.
    #if DEBUG
    private var bodyStreams: [Int32] = []
    #else
    @exclusivity(unchecked) private var bodyStreams: [Int32] = []
    #endif
    /// Per such stream: body bytes received, and bytes not yet given back to its window.
    #if DEBUG
    private var bodyBytes: [Int32: (held: Int, unconsumed: Int)] = [:]
    #else
    @exclusivity(unchecked) private var bodyBytes: [Int32: (held: Int, unconsumed: Int)] = [:]
    #endif
    private var heldBodyBytes = 0
    /// `SETTINGS_INITIAL_WINDOW_SIZE` as advertised (`HTTP2Settings.advertisedWindow`): what any
    /// stream may send before a WINDOW_UPDATE.
    private let advertisedWindow: Int
    /// Window granted beyond `advertisedWindow` to streams whose body is expected, per stream and in
    /// all (`grantWindow`), counted against `requestBodyBufferBytes` until the body is complete.
    #if DEBUG
    private var grantedWindow: [Int32: Int] = [:]
    #else
    @exclusivity(unchecked) private var grantedWindow: [Int32: Int] = [:]
    #endif
    private var grantedWindowTotal = 0
    /// Bodies complete (END_STREAM) but still held downstream: with the handler, or forwarded and
    /// not yet written whole to the upstream socket. Bytes per stream and in all, counted against
    /// `requestBodyBufferBytes` until `releaseRequestBody(_:)` or the stream closes.
    #if DEBUG
    private var completeBodies: [Int32: Int] = [:]
    #else
    @exclusivity(unchecked) private var completeBodies: [Int32: Int] = [:]
    #endif
    private var completeBodyBytes = 0

    /// Request body bytes counted against `requestBodyBufferBytes` now: bodies arriving and complete
    /// bodies not yet released (for tests).
    package var heldRequestBodyBytes: Int { heldBodyBytes + completeBodyBytes }

    // Response header scratch, reused.
    private var scratch: [UInt8] = []
    private var spans: [(UInt32, UInt32, UInt32, UInt32)] = []
    private var nvs: [nghttp2_nv] = []

    /// A server session that has queued its SETTINGS (RFC 9113 section 3.4).
    /// - Parameters:
    ///   - settings: advertised SETTINGS and abuse budgets (clamped here).
    ///   - limits: the HTTP/1.1 limits; `maxHeaderBytes` is the header list size unless
    ///     `settings.maxHeaderListSize` is set, `maxHeaderCount` bounds the fields of one block.
    ///   - policy: request-target rules applied to `:path`.
    /// - Returns: nil when nghttp2 cannot allocate the session.
    package init?(settings: HTTP2Settings, limits: HTTP1ParserLimits, policy: RequestTargetPolicy,
                  delegate: any HTTP2SessionDelegate) {
        let s = settings.clamped
        self.settings = s
        self.delegate = delegate
        self.policy = policy
        listLimit = s.effectiveHeaderListSize(limits)
        countLimit = max(1, limits.clamped.maxHeaderCount)
        resetRing = Array(repeating: 0, count: s.resetWindowStreams)
        advertisedWindow = s.advertisedWindow
        controlWindowNanos = UInt64(s.controlFrameWindow * 1e9)

        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, HTTP2Session.onBeginFrame)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, HTTP2Session.onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, HTTP2Session.onHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, HTTP2Session.onFrameRecv)
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks, HTTP2Session.onInvalidFrameRecv)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, HTTP2Session.onDataChunkRecv)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, HTTP2Session.onFrameSend)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, HTTP2Session.onStreamClose)
        nghttp2_session_callbacks_set_unpack_extension_callback(callbacks, HTTP2Session.unpackExtension)

        var options: OpaquePointer?
        guard nghttp2_option_new(&options) == 0, let options else { return nil }
        defer { nghttp2_option_del(options) }
        // nghttp2's own CONTINUATION cap sits above ours so that ours (with GOAWAY) fires first.
        nghttp2_option_set_max_continuations(options, s.maxContinuationFrames + 8)
        nghttp2_option_set_max_settings(options, s.maxSettingsEntries)
        nghttp2_option_set_max_outbound_ack(options, s.maxQueuedAcks)
        nghttp2_option_set_no_closed_streams(options, 1)
        nghttp2_option_set_no_auto_window_update(options, 1)  // see bodyChunk(_:_:)
        // Every frame type past RFC 9113's (0x0a-0xff: ALTSVC, ORIGIN and PRIORITY_UPDATE included,
        // which a server ignores) as an extension of ours: nghttp2 then announces each one at
        // `on_begin_frame`, where it is counted, and drops it at `unpackExtension`. Without this it
        // skips them silently, and a client could send millions for free (RFC 9113 section 5.5).
        for type in UInt8(0x0a)...UInt8(0xff) { nghttp2_option_set_user_recv_extension_type(options, type) }

        var created: OpaquePointer?
        let userData = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_server_new2(&created, callbacks, userData, options) == 0, let created else { return nil }
        session = created

        var entries: [nghttp2_settings_entry] = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(s.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(listLimit)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES.rawValue), value: 1),
        ]
        if advertisedWindow != 65535 {
            entries.append(nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                                  value: UInt32(advertisedWindow)))
        }
        if s.maxFrameSize != 16384 {
            entries.append(nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue),
                                                  value: UInt32(s.maxFrameSize)))
        }
        if s.headerTableSize != 4096 {
            entries.append(nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue),
                                                  value: UInt32(s.headerTableSize)))
        }
        guard nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), entries, entries.count) == 0 else {
            return nil
        }
        if s.initialWindowSize > 65535 {
            // The connection window follows the stream window (RFC 9113 section 6.9.2).
            _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                                                      Int32(s.initialWindowSize))
        }
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    // MARK: bytes in, bytes out

    /// Processes received bytes (RFC 9113 section 4), calling the delegate for every event.
    /// - Parameter now: monotonic time in nanoseconds (for the control-frame window).
    /// - Returns: false when the connection is ending: GOAWAY is queued (see `terminatedWith`); send
    ///   the output, then close. Further input is ignored.
    @discardableResult
    package func receive(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Bool {
        guard let session, terminatedWith == nil, !isBusy else { return terminatedWith == nil }
        guard bytes.count > 0, let base = bytes.baseAddress else { return true }
        self.now = now
        isBusy = true
        let rv = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        isBusy = false
        if rv < 0 || termination != nil {
            terminate(termination ?? HTTP2Session.goawayCode(forLibraryError: Int32(truncatingIfNeeded: rv)))
            return false
        }
        return true
    }

    /// Appends frames ready to send to `out` until nghttp2 has nothing more or `out` holds at least
    /// `limit` bytes (the caller's bound on queued output).
    /// - Returns: false on a fatal nghttp2 error (close the connection).
    package func produceOutput(into out: inout OutputBuffer, limit: Int) -> Bool {
        guard let session else { return false }
        guard !isBusy else { return true }
        isBusy = true
        defer { isBusy = false }
        while out.count < limit {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 { return false }
            guard n > 0, let data else { break }
            out.append(UnsafeRawBufferPointer(start: data, count: n))
        }
        return true
    }

    /// Whether nghttp2 still expects input (false once GOAWAY was exchanged and no stream is active).
    package var wantsRead: Bool { session.map { nghttp2_session_want_read($0) != 0 } ?? false }
    /// Whether nghttp2 has frames to send (data deferred or blocked by flow control does not count).
    package var wantsWrite: Bool { session.map { nghttp2_session_want_write($0) != 0 } ?? false }
    /// Whether the connection is over: nothing more to read or write (close after the output is written).
    package var isFinished: Bool { !wantsRead && !wantsWrite }

    // MARK: responses

    /// Submits the response head of `streamID` (RFC 9113 section 8.3.2): `:status`, then `headers`
    /// with names lower-cased, values trimmed, and the connection-specific fields dropped
    /// (RFC 9113 section 8.2.2: `Connection` and the fields it names, `Keep-Alive`,
    /// `Proxy-Connection`, `Transfer-Encoding`, `Upgrade`, plus `TE`, `Trailer` and any
    /// `Content-Length`), then `content-length` when given and `date` when given and absent.
    /// - Parameters:
    ///   - status: 100...999 (anything else is sent as 500).
    ///   - hasBody: false ends the stream with the HEADERS frame; true pulls DATA from the delegate.
    /// - Returns: false when nghttp2 refused (the stream is closed or already answered).
    ///   - field: one field set by replacement (`HTTPForward.responseField`): fields of `headers` with
    ///     its name are left out and it is sent last, "never indexed" (RFC 7541 section 6.2.3: a value
    ///     unique to each response, e.g. a request id, would otherwise be added to the HPACK dynamic
    ///     table on every response, evicting the fields that repeat and lengthening nghttp2's lookups);
    ///     a field whose name or value is invalid is left out and `headers` are sent as they are.
    @discardableResult
    package func submitResponse(streamID: Int32, status: Int, headers: HTTPHeaders, contentLength: Int?,
                                date: ArraySlice<UInt8>?, hasBody: Bool,
                                field: (name: String, value: String)? = nil) -> Bool {
        guard let field else {
            return submit(streamID, status, headers, contentLength, date, hasBody, fieldName: nil, fieldValue: nil)
        }
        return HTTPHeaders.withUTF8(field.name) { n in
            HTTPHeaders.withUTF8(field.value) { v in
                guard (try? HTTPHeaders.validate(name: n, value: v)) != nil else {
                    return submit(streamID, status, headers, contentLength, date, hasBody, fieldName: nil, fieldValue: nil)
                }
                return submit(streamID, status, headers, contentLength, date, hasBody, fieldName: n, fieldValue: v)
            }
        }
    }

    private func submit(_ streamID: Int32, _ status: Int, _ headers: HTTPHeaders, _ contentLength: Int?,
                        _ date: ArraySlice<UInt8>?, _ hasBody: Bool,
                        fieldName: UnsafeRawBufferPointer?, fieldValue: UnsafeRawBufferPointer?) -> Bool {
        guard let session else { return false }
        // The reused buffers are moved into locals for the build (uniquely owned, no exclusivity
        // checks per byte as with stored properties) and moved back at the end.
        var scratch = self.scratch
        var spans = self.spans
        var nvs = self.nvs
        self.scratch = []
        self.spans = []
        self.nvs = []
        defer {
            self.scratch = scratch
            self.spans = spans
            self.nvs = nvs
        }
        scratch.removeAll(keepingCapacity: true)
        spans.removeAll(keepingCapacity: true)
        let s = (100...999).contains(status) ? status : 500
        let statusName = HTTP2Session.appendLiteral(":status", to: &scratch)
        let statusValue = UInt32(scratch.count)
        scratch.append(UInt8(truncatingIfNeeded: s / 100) &+ 0x30)
        scratch.append(UInt8(truncatingIfNeeded: (s / 10) % 10) &+ 0x30)
        scratch.append(UInt8(truncatingIfNeeded: s % 10) &+ 0x30)
        spans.append((statusName, 7, statusValue, 3))
        var tokens: [[UInt8]] = []
        HopByHop.connectionTokens(headers, into: &tokens)
        // The field is sent unless the connection-specific rules below would drop it from `headers`.
        let sendField = fieldName.map { n in !HopByHop.isHopByHop(n) && (tokens.isEmpty || !HopByHop.isNamed(n, in: tokens)) }
            ?? false
        var hasDate = sendField && fieldName!.count == 4 && HTTP1Syntax.equalsLowercaseLiteral(fieldName!, "date")
        headers.storage.withUnsafeBytes { raw in
            for slot in headers.slots {
                let name = HTTPHeaders.nameBuffer(raw, slot)
                if HopByHop.isHopByHop(name) { continue }
                if !tokens.isEmpty && HopByHop.isNamed(name, in: tokens) { continue }
                if let fieldName, name.count == fieldName.count, HTTP1Syntax.equalsCaseInsensitive(name, fieldName) {
                    continue
                }
                if name.count == 4 && HTTP1Syntax.equalsLowercaseLiteral(name, "date") { hasDate = true }
                let nameStart = HTTP2Session.appendLowercased(name, to: &scratch)
                // The value is not copied: its span points into the fields' own storage.
                let value = HTTPHeaders.valueBuffer(raw, slot)
                let trimmed = HTTP1Syntax.trimOWS(value, 0..<value.count)
                let valueStart = (slot.valueStart + UInt32(trimmed.lowerBound)) | HTTP2Session.inFieldStorage
                spans.append((nameStart, UInt32(name.count), valueStart, UInt32(trimmed.count)))
            }
        }
        if let contentLength {
            let nameStart = HTTP2Session.appendLiteral("content-length", to: &scratch)
            let valueStart = UInt32(scratch.count)
            DecimalText.append(max(0, contentLength), to: &scratch)
            spans.append((nameStart, 14, valueStart, UInt32(scratch.count) - valueStart))
        }
        if let date, !hasDate {
            let nameStart = HTTP2Session.appendLiteral("date", to: &scratch)
            let valueStart = UInt32(scratch.count)
            scratch.append(contentsOf: date)
            spans.append((nameStart, 4, valueStart, UInt32(date.count)))
        }
        var neverIndexed = -1
        if sendField, let fieldName, let fieldValue {
            neverIndexed = spans.count
            let nameStart = HTTP2Session.appendLowercased(fieldName, to: &scratch)
            let trimmed = HTTP1Syntax.trimOWS(fieldValue, 0..<fieldValue.count)
            let valueStart = UInt32(scratch.count)
            scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: fieldValue[trimmed]))
            spans.append((nameStart, UInt32(fieldName.count), valueStart, UInt32(trimmed.count)))
        }
        nvs.removeAll(keepingCapacity: true)
        // nghttp2 copies names and values while submitting (no NGHTTP2_NV_FLAG_NO_COPY_*): both buffers
        // need only live through the call.
        let rv: Int32 = headers.storage.withUnsafeBytes { stored in
            scratch.withUnsafeMutableBufferPointer { bytes in
                let base = bytes.baseAddress!
                let fieldBase = UnsafeMutablePointer(mutating: stored.baseAddress?.assumingMemoryBound(to: UInt8.self))
                for (i, (ns, nl, vs, vl)) in spans.enumerated() {
                    let flags = i == neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue
                    let value = vs & HTTP2Session.inFieldStorage != 0
                        ? fieldBase! + Int(vs & ~HTTP2Session.inFieldStorage) : base + Int(vs)
                    nvs.append(nghttp2_nv(name: base + Int(ns), value: value, namelen: Int(nl), valuelen: Int(vl),
                                          flags: UInt8(flags)))
                }
                if hasBody {
                    var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil),
                                                         read_callback: HTTP2Session.readBody)
                    return nghttp2_submit_response(session, streamID, nvs, nvs.count, &provider)
                }
                return nghttp2_submit_response(session, streamID, nvs, nvs.count, nil)
            }
        }
        return rv == 0
    }

    /// Submits an interim `100 Continue` head on `streamID` (RFC 9110 section 10.1.1, RFC 9113 section 8.1).
    package func submitContinue(streamID: Int32) {
        guard let session else { return }
        var name = Array(":status".utf8)
        var value = Array("100".utf8)
        name.withUnsafeMutableBufferPointer { n in
            value.withUnsafeMutableBufferPointer { v in
                var nv = nghttp2_nv(name: n.baseAddress, value: v.baseAddress, namelen: n.count, valuelen: v.count,
                                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
                _ = nghttp2_submit_headers(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, nil, &nv, 1, nil)
            }
        }
    }

    /// Tells nghttp2 that the body of `streamID` has bytes again (after `.deferred`).
    package func resumeData(_ streamID: Int32) {
        guard let session else { return }
        _ = nghttp2_session_resume_data(session, streamID)
    }

    /// Resets `streamID` with RST_STREAM `error` (RFC 9113 section 6.4).
    package func resetStream(_ streamID: Int32, error: HTTP2ErrorCode) {
        guard let session else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, error.code)
    }

    /// Graceful shutdown (RFC 9113 section 6.8). `graceful: true` queues the shutdown notice (GOAWAY
    /// with the last stream identifier 2^31-1: new streams are still accepted for a round trip);
    /// `graceful: false` queues the final GOAWAY `NO_ERROR` with the last stream processed: streams up
    /// to it finish, later ones are ignored, and `isFinished` turns true once none is active.
    package func submitGoaway(graceful: Bool) {
        guard let session, terminatedWith == nil else { return }
        if graceful {
            _ = nghttp2_submit_shutdown_notice(session)
        } else {
            _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue),
                                      nghttp2_session_get_last_proc_stream_id(session), HTTP2ErrorCode.noError.code, nil, 0)
        }
    }

    /// Ends the connection: GOAWAY `error` with the last stream processed (RFC 9113 section 5.4.1);
    /// nothing more is read, and `isFinished` turns true once it is sent.
    package func terminate(_ error: HTTP2ErrorCode) {
        guard let session, terminatedWith == nil else { return }
        terminatedWith = error
        _ = nghttp2_session_terminate_session(session, error.code)
    }

    /// The client's flow-control window for `streamID`, in bytes (RFC 9113 section 6.9), or nil when
    /// the stream is unknown.
    package func remoteWindow(of streamID: Int32) -> Int? {
        guard let session else { return nil }
        let stream = Int(nghttp2_session_get_stream_remote_window_size(session, streamID))
        let connection = Int(nghttp2_session_get_remote_window_size(session))
        return stream < 0 ? nil : min(stream, connection)
    }

    // MARK: internals

    private static func appendLiteral(_ s: StaticString, to scratch: inout [UInt8]) -> UInt32 {
        let start = UInt32(scratch.count)
        scratch.append(contentsOf: UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        return start
    }

    /// Marks a value span of `submit` as an offset into the fields' storage instead of `scratch`
    /// (field storage is far below 2 GiB: `HTTP1ParserLimits` bound a head to kilobytes).
    private static let inFieldStorage: UInt32 = 1 << 31

    /// Appends `name` lower-cased (one copy, then the bytes lowered in place); returns where it starts.
    private static func appendLowercased(_ name: UnsafeRawBufferPointer, to scratch: inout [UInt8]) -> UInt32 {
        let start = scratch.count
        scratch.append(contentsOf: name)
        scratch.withUnsafeMutableBufferPointer { b in
            for i in start..<b.count { b[i] = HTTP1Syntax.lower(b[i]) }
        }
        return UInt32(start)
    }

    /// Records the first reason to end the connection; nghttp2 stops processing at once.
    private func fail(_ code: HTTP2ErrorCode) -> Int32 {
        if termination == nil { termination = code }
        return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
    }

    static func goawayCode(forLibraryError rv: Int32) -> HTTP2ErrorCode {
        switch rv {
        case NGHTTP2_ERR_FLOODED.rawValue, NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue: return .enhanceYourCalm
        case NGHTTP2_ERR_HEADER_COMP.rawValue: return .compressionError
        case NGHTTP2_ERR_FLOW_CONTROL.rawValue: return .flowControlError
        case NGHTTP2_ERR_FRAME_SIZE_ERROR.rawValue: return .frameSizeError
        default: return .protocolError
        }
    }

    private static func from(_ userData: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(userData!).takeUnretainedValue()
    }

    /// Drops the header block in progress; a request block dropped unfinished was malformed.
    private func discardBlock() {
        guard let b = block.take() else { return }  // moved out: no copy of its fields
        delegate.http2StreamMalformed(b.streamID, method: b.methodSeen, target: b.targetSeen)
    }

    private func beginFrame(_ hd: nghttp2_frame_hd) -> Int32 {
        switch UInt32(hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            blockEncodedBytes = hd.length
            continuations = 0
        case NGHTTP2_CONTINUATION.rawValue:
            continuations += 1
            blockEncodedBytes += hd.length
            if continuations > settings.maxContinuationFrames || blockEncodedBytes > 2 * listLimit + 16384 {
                return fail(.enhanceYourCalm)
            }
        case NGHTTP2_PRIORITY.rawValue:
            // Counted here: with SETTINGS_NO_RFC7540_PRIORITIES (RFC 9218) nghttp2 drops PRIORITY
            // frames without an on_frame_recv callback, but it still announces their header.
            return controlFrameReceived()
        case NGHTTP2_WINDOW_UPDATE.rawValue:
            // Envoy's budget (`max_inbound_window_update_frames_per_data_frame_sent`): a client
            // opens windows because it received DATA; updates far beyond the DATA frames sent (and
            // two per stream opened) are a flood (CVE-2019-9511 class).
            windowUpdatesReceived += 1
            let budget = 5 + 2 * (streamsOpened + settings.maxWindowUpdatesPerDataFrame * dataFramesSent)
            return windowUpdatesReceived > budget ? fail(.enhanceYourCalm) : 0
        default:
            // PRIORITY_UPDATE, ALTSVC, ORIGIN and unknown types (registered in `init`), dropped
            // by `unpackExtension`: counted like PRIORITY.
            return hd.type >= 0x0a ? controlFrameReceived() : 0
        }
        return 0
    }

    private func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let id = frame.pointee.hd.stream_id
        let category = frame.pointee.headers.cat
        discardBlock()
        blockStartedAt = now
        if category == NGHTTP2_HCAT_REQUEST {
            resetRing[streamsOpened % resetRing.count] = resetsReceived
            streamsOpened += 1
            block = HTTP2RequestHeadBuilder(streamID: id, kind: .request, listLimit: listLimit, countLimit: countLimit)
        } else if category == NGHTTP2_HCAT_HEADERS {
            block = HTTP2RequestHeadBuilder(streamID: id, kind: .trailers, listLimit: listLimit, countLimit: countLimit)
        }
        return 0
    }

    private func header(_ frame: UnsafePointer<nghttp2_frame>, _ name: UnsafeRawBufferPointer,
                        _ value: UnsafeRawBufferPointer) -> Int32 {
        guard block?.streamID == frame.pointee.hd.stream_id else { return 0 }
        switch block!.add(name: name, value: value) {
        case .ok: return 0
        case .abusive: return fail(.enhanceYourCalm)
        }
    }

    private func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let hd = frame.pointee.hd
        let id = hd.stream_id
        let endStream = hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        if endStream { releaseBody(id, keepComplete: true) }
        switch UInt32(hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            // Moved out (`take`), not copied: `b` is the only owner of the fields, which `finish`
            // moves into the request head without a copy.
            guard block?.streamID == id, var b = block.take() else { return 0 }
            switch b.finish(endStream: endStream, policy: policy) {
            case .head(let head):
                delegate.http2StreamOpened(id, head: head)
                if endStream { delegate.http2StreamEnded(id, trailers: HTTPHeaders()) }
            case .trailers(let trailers):
                delegate.http2StreamEnded(id, trailers: trailers)
            case .refused(let error):
                delegate.http2StreamRefused(id, error: error, method: b.methodSeen, target: b.targetSeen)
            case .malformed:
                resetStream(id, error: .protocolError)
                delegate.http2StreamMalformed(id, method: b.methodSeen, target: b.targetSeen)
            }
        case NGHTTP2_DATA.rawValue:
            if hd.length == frame.pointee.data.padlen && !endStream {
                emptyDataFrames += 1
                if emptyDataFrames > settings.maxEmptyDataFrames { return fail(.enhanceYourCalm) }
            }
            if endStream { delegate.http2StreamEnded(id, trailers: HTTPHeaders()) }
        case NGHTTP2_SETTINGS.rawValue, NGHTTP2_PING.rawValue:  // PRIORITY: `beginFrame`
            if hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 { return 0 }
            return controlFrameReceived()
        case NGHTTP2_RST_STREAM.rawValue:
            resetsReceived += 1
            let window = resetRing.count
            let base = streamsOpened >= window ? resetRing[streamsOpened % window] : 0
            if resetsReceived - base > settings.maxResetsInWindow { return fail(.enhanceYourCalm) }
            delegate.http2StreamReset(id, error: HTTP2ErrorCode(frame.pointee.rst_stream.error_code))
        default:
            break
        }
        return 0
    }

    /// One SETTINGS, PING, PRIORITY or extension frame from the client: more than `maxControlFramesPerWindow`
    /// within `controlFrameWindow` ends the connection (GOAWAY `ENHANCE_YOUR_CALM`).
    private func controlFrameReceived() -> Int32 {
        if now &- controlWindowStart >= controlWindowNanos {
            controlWindowStart = now
            controlFrames = 0
        }
        controlFrames += 1
        return controlFrames > settings.maxControlFramesPerWindow ? fail(.enhanceYourCalm) : 0
    }

    private func invalidFrameReceived(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        // nghttp2 reset the stream (malformed header block): report it now.
        if UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue, block?.streamID == frame.pointee.hd.stream_id {
            discardBlock()
        }
        return 0
    }

    private func frameSent(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let hd = frame.pointee.hd
        let type = UInt32(hd.type)
        if type == NGHTTP2_DATA.rawValue { dataFramesSent += 1 }
        if type == NGHTTP2_GOAWAY.rawValue && frame.pointee.goaway.error_code != 0 && terminatedWith == nil {
            // nghttp2 ended the connection by itself (e.g. COMPRESSION_ERROR, too many SETTINGS entries).
            terminatedWith = HTTP2ErrorCode(frame.pointee.goaway.error_code)
        }
        guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
              hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let session else { return 0 }
        // The response is complete before the request: tell the client to stop sending
        // (RST_STREAM NO_ERROR, RFC 9113 section 8.1).
        if nghttp2_session_get_stream_remote_close(session, hd.stream_id) == 0 {
            resetStream(hd.stream_id, error: .noError)
        }
        return 0
    }

    /// Accounts `n` request body bytes of `id` and opens the windows again (RFC 9113 section 6.9.1):
    /// the connection's at once (a stalled stream must not stall the others), the stream's while the
    /// bodies held (arriving and complete) are within the budget, or when `id` is the oldest body
    /// still arriving and the complete bodies alone are within it (so one upload progresses whatever
    /// the others do, and complete bodies waiting for the upstream cannot grow past the budget plus
    /// one body).
    private func bodyChunk(_ id: Int32, _ n: Int) {
        guard let session, n > 0 else { return }
        _ = nghttp2_session_consume_connection(session, n)
        if bodyBytes[id] == nil { bodyStreams.append(id) }
        var entry = bodyBytes[id] ?? (0, 0)
        entry.held += n
        heldBodyBytes += n
        if mayOpenWindow(oldest: bodyStreams.first == id) {
            _ = nghttp2_session_consume_stream(session, id, n)
        } else {
            entry.unconsumed += n
        }
        bodyBytes[id] = entry
    }

    /// Raises the window of stream `id`, whose request body of at most `bodyBytes` is accepted (its
    /// `content-length`, or the body limit), from `advertisedWindow` up to `initialWindowSize`
    /// (WINDOW_UPDATE, RFC 9113 section 6.9), when the bytes held and the windows already granted
    /// leave room within `requestBodyBufferBytes`: a few uploads at a time get the whole window, and
    /// `maxConcurrentStreams` streams cannot make the connection hold their count times it. Called
    /// by the connection once the stream's head is accepted (`http2StreamOpened`).
    package func grantWindow(_ id: Int32, bodyBytes: Int) {
        guard let session else { return }
        let extra = min(settings.initialWindowSize, bodyBytes) - advertisedWindow
        guard extra > 0, heldBodyBytes + completeBodyBytes + grantedWindowTotal + extra <= settings.requestBodyBufferBytes,
              nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id,
                                                    Int32(advertisedWindow + extra)) == 0 else { return }
        grantedWindow[id] = extra
        grantedWindowTotal += extra
    }

    /// Whether a stream window may reopen: the bodies held (arriving and complete) are within
    /// `requestBodyBufferBytes`, or the stream's is the `oldest` still arriving and the complete
    /// bodies alone are within it.
    private func mayOpenWindow(oldest: Bool) -> Bool {
        let budget = settings.requestBodyBufferBytes
        return heldBodyBytes + completeBodyBytes <= budget || (oldest && completeBodyBytes <= budget)
    }

    /// The body of `id` is complete (`keepComplete`: its bytes stay in the budget, as a complete body,
    /// until `releaseRequestBody(_:)`) or the stream is gone (its bytes leave the budget): its granted
    /// window leaves the budget, and windows held back are opened again, oldest stream first, while
    /// within it.
    private func releaseBody(_ id: Int32, keepComplete: Bool) {
        if !grantedWindow.isEmpty, let extra = grantedWindow.removeValue(forKey: id) { grantedWindowTotal -= extra }
        // Most requests have no body: no hashing for them (this runs on every END_STREAM and close).
        if !keepComplete && releaseRequestBody(id) { return }  // a complete body: none arriving
        guard !bodyBytes.isEmpty, let entry = bodyBytes.removeValue(forKey: id) else { return }
        heldBodyBytes -= entry.held
        if keepComplete && entry.held > 0 {
            completeBodies[id] = entry.held
            completeBodyBytes += entry.held
        }
        if let i = bodyStreams.firstIndex(of: id) { bodyStreams.remove(at: i) }
        reopenWindows()
    }

    /// Whether the window of `streamID`'s request body is held back by the budget (bytes received and
    /// not yet acknowledged with WINDOW_UPDATE): the client may be unable to send because of the
    /// gateway, not because it is slow (the body timeout does not run out then).
    package func isWindowWithheld(_ streamID: Int32) -> Bool {
        guard !bodyBytes.isEmpty, let entry = bodyBytes[streamID] else { return false }
        return entry.unconsumed > 0
    }

    /// The complete request body of `streamID` is no longer held downstream (written whole to the
    /// upstream socket, answered without forwarding, or its exchange ended): its bytes leave the
    /// `requestBodyBufferBytes` budget and windows held back reopen while within it (WINDOW_UPDATE
    /// frames are then queued: produce output).
    /// - Returns: whether the body was still counted (a second call, or a stream without a body,
    ///   returns false and does nothing).
    @discardableResult
    package func releaseRequestBody(_ streamID: Int32) -> Bool {
        guard !completeBodies.isEmpty, let n = completeBodies.removeValue(forKey: streamID) else { return false }
        completeBodyBytes -= n
        reopenWindows()
        return true
    }

    /// Gives back the window held back from the bodies still arriving, oldest first, while
    /// `mayOpenWindow` allows.
    private func reopenWindows() {
        guard let session else { return }
        for (index, other) in bodyStreams.enumerated() {
            guard let e = bodyBytes[other], e.unconsumed > 0 else { continue }
            guard mayOpenWindow(oldest: index == 0) else { break }
            _ = nghttp2_session_consume_stream(session, other, e.unconsumed)
            bodyBytes[other] = (e.held, 0)
        }
    }

    private func streamClosed(_ id: Int32, _ code: UInt32) -> Int32 {
        if block?.streamID == id { discardBlock() }
        releaseBody(id, keepComplete: false)
        delegate.http2StreamClosed(id, error: HTTP2ErrorCode(code))
        return 0
    }

    // MARK: C callbacks (no captures: the session comes from user_data)

    private static let onBeginFrame: nghttp2_on_begin_frame_callback = { _, hd, userData in
        from(userData).beginFrame(hd!.pointee)
    }

    private static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
        from(userData).beginHeaders(frame!)
    }

    private static let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
        from(userData).header(frame!, UnsafeRawBufferPointer(start: name, count: nameLength),
                              UnsafeRawBufferPointer(start: value, count: valueLength))
    }

    private static let onFrameRecv: nghttp2_on_frame_recv_callback = { _, frame, userData in
        from(userData).frameReceived(frame!)
    }

    private static let onInvalidFrameRecv: nghttp2_on_invalid_frame_recv_callback = { _, frame, _, userData in
        from(userData).invalidFrameReceived(frame!)
    }

    private static let onDataChunkRecv: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
        let s = from(userData)
        s.bodyChunk(streamID, length)
        s.delegate.http2StreamData(streamID, UnsafeRawBufferPointer(start: data, count: length))
        return 0
    }

    private static let onFrameSend: nghttp2_on_frame_send_callback = { _, frame, userData in
        from(userData).frameSent(frame!)
    }

    /// Extension frames (every type from 0x0a) are counted at their header and dropped here.
    private static let unpackExtension: nghttp2_unpack_extension_callback = { _, _, _, _ in
        NGHTTP2_ERR_CANCEL.rawValue
    }

    private static let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
        from(userData).streamClosed(streamID, errorCode)
    }

    private static let readBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
        let s = from(userData)
        switch s.delegate.http2ReadResponseBody(streamID, into: UnsafeMutableRawBufferPointer(start: buffer, count: length)) {
        case .bytes(let n, let end):
            if end { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
            return n
        case .deferred:
            return Int(NGHTTP2_ERR_DEFERRED.rawValue)
        }
    }
}
