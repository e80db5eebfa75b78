// Writing HTTP/1.1 heads: handler responses, proxied responses, upstream requests (RFC 9112).

import GatewayIO

/// How a response body goes out downstream.
enum DownstreamBody: Equatable {
    /// No body; `passLength` keeps the upstream's Content-Length (HEAD, 304).
    case none(passLength: Bool)
    /// `Content-Length: n` then n bytes.
    case length(Int)
    /// `Transfer-Encoding: chunked`, re-chunked here (RFC 9112 section 7.1).
    case chunked
    /// Delimited by closing the connection (HTTP/1.0 clients when the length is unknown).
    case untilClose
}

/// Serializes message heads straight into output bytes (no intermediate Strings).
enum HTTP1Serializer {
    @inline(__always) static func put(_ s: StaticString, _ out: inout [UInt8]) {
        out.append(contentsOf: UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// `HTTP/1.1 NNN reason\r\n`; `reason` defaults to the standard phrase.
    static func appendStatusLine(_ status: Int, reason: [UInt8]? = nil, into out: inout [UInt8]) {
        HTTP1HeadWriter.append(into: &out, bound: 48 + (reason?.count ?? 0)) { putStatusLine(status, reason: reason, &$0) }
    }

    /// A handler's complete response; returns whether the handler asked to close (`Connection: close`).
    @discardableResult
    static func appendResponse(_ response: HTTPResponse, requestMethod: HTTPMethod?, keepAlive: Bool,
                               clientIsHTTP10: Bool, dateLine: [UInt8], into out: inout [UInt8]) -> Bool {
        let status = (200...999).contains(response.status) ? response.status : 500
        appendStatusLine(status, into: &out)
        var handlerAskedClose = false
        var hasDate = false
        response.headers.storage.withUnsafeBytes { s in
            for slot in response.headers.slots {
                let name = HTTPHeaders.nameBuffer(s, slot)
                if HopByHop.isHopByHop(name) {
                    if name.count == 10 && HTTP1Syntax.equalsLowercaseLiteral(name, "connection") {
                        HTTP1Syntax.forEachListElement(HTTPHeaders.valueBuffer(s, slot)) { t in
                            if HTTP1Syntax.equalsLowercaseLiteral(t, "close") { handlerAskedClose = true }
                            return true
                        }
                    }
                    continue
                }
                if name.count == 4 && HTTP1Syntax.equalsLowercaseLiteral(name, "date") { hasDate = true }
                out.append(contentsOf: name)
                put(": ", &out)
                out.append(contentsOf: HTTPHeaders.valueBuffer(s, slot))
                put("\r\n", &out)
            }
        }
        if !hasDate { out.append(contentsOf: dateLine) }
        let bodyAllowed = status != 204 && status != 304
        if bodyAllowed {
            put("Content-Length: ", &out)
            DecimalText.append(response.body.count, to: &out)
            put("\r\n", &out)
        }
        appendConnection(keepAlive: keepAlive && !handlerAskedClose, clientIsHTTP10: clientIsHTTP10, into: &out)
        put("\r\n", &out)
        if bodyAllowed && requestMethod != .head { out.append(contentsOf: response.body) }
        return handlerAskedClose
    }

    @inline(__always) static func appendConnection(keepAlive: Bool, clientIsHTTP10: Bool, into out: inout [UInt8]) {
        if !keepAlive {
            put("Connection: close\r\n", &out)
        } else if clientIsHTTP10 {
            put("Connection: keep-alive\r\n", &out)
        }
    }

    /// The head of a proxied response: upstream status and fields minus hop-by-hop, with our framing.
    /// `replacing` (`HTTPForward.responseField`), when given, is set by replacement: every upstream
    /// field of that name is left out and the field is written after the others; a field whose name
    /// or value is not valid is left out and the upstream's fields are written as they are (as over
    /// HTTP/2, `HTTP2Session.submitResponse`). Done while writing, so the upstream head is not
    /// copied to edit it.
    static func appendProxiedHead(_ head: HTTPResponseHead, body: DownstreamBody, keepAlive: Bool,
                                  clientIsHTTP10: Bool, replacing field: (name: String, value: String)? = nil,
                                  into out: inout [UInt8]) {
        var tokens: [[UInt8]] = []
        HopByHop.connectionTokens(head.headers, into: &tokens)
        guard let field else {
            // The usual case: no field replaced, so no `withUTF8` closures around the writing (the
            // head captured in their context was copied: three retains and releases).
            writeProxiedHead(head, tokens: tokens, body: body, keepAlive: keepAlive, clientIsHTTP10: clientIsHTTP10,
                             replacedName: UnsafeRawBufferPointer(start: nil, count: 0),
                             replacedValue: UnsafeRawBufferPointer(start: nil, count: 0), into: &out)
            return
        }
        HTTPHeaders.withUTF8(field.name) { replacedName in
            HTTPHeaders.withUTF8(field.value) { replacedValue in
                writeProxiedHead(head, tokens: tokens, body: body, keepAlive: keepAlive, clientIsHTTP10: clientIsHTTP10,
                                 replacedName: replacedName, replacedValue: replacedValue, into: &out)
            }
        }
    }

    /// `appendProxiedHead` with the replaced field's bytes (empty name: none).
    private static func writeProxiedHead(_ head: HTTPResponseHead, tokens: [[UInt8]], body: DownstreamBody, keepAlive: Bool,
                                         clientIsHTTP10: Bool, replacedName: UnsafeRawBufferPointer,
                                         replacedValue: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        let passLength = body == .none(passLength: true)
        let replace = !replacedName.isEmpty
            && (try? HTTPHeaders.validate(name: replacedName, value: replacedValue)) != nil
        // Status line (reason at most its bytes or a standard phrase), every field with 4
        // bytes of punctuation, the replaced field, Content-Length or Transfer-Encoding, and
        // the connection field.
        let bound = 64 + head.reason.count + head.headers.storage.count + 4 * head.headers.slots.count
            + replacedName.count + replacedValue.count + 4 + 40 + HTTP1HeadWriter.decimalBound + 32
        HTTP1HeadWriter.append(into: &out, bound: bound) { w in
            putStatusLine(head.status, reason: head.reason, &w)
            head.headers.storage.withUnsafeBytes { s in
                for slot in head.headers.slots {
                    let name = HTTPHeaders.nameBuffer(s, slot)
                    if HopByHop.isHopByHop(name) {
                        if !(passLength && name.count == 14 && HTTP1Syntax.equalsLowercaseLiteral(name, "content-length")) {
                            continue
                        }
                    } else if !tokens.isEmpty && HopByHop.isNamed(name, in: tokens) {
                        continue
                    }
                    if replace && HTTP1Syntax.equalsCaseInsensitive(name, replacedName) { continue }
                    w.putField(name, HTTPHeaders.valueBuffer(s, slot))
                }
            }
            if replace { w.putField(replacedName, replacedValue) }
            switch body {
            case .length(let n):
                w.put("Content-Length: ")
                w.putDecimal(n)
                w.put("\r\n")
            case .chunked:
                w.put("Transfer-Encoding: chunked\r\n")
            case .none, .untilClose:
                break
            }
            if !keepAlive {
                w.put("Connection: close\r\n")
            } else if clientIsHTTP10 {
                w.put("Connection: keep-alive\r\n")
            }
            w.put("\r\n")
        }
    }

    /// `HTTP/1.1 NNN reason\r\n` through a head writer (at most 16 bytes beside the reason or the
    /// standard phrase, which is at most 31 bytes).
    private static func putStatusLine(_ status: Int, reason: [UInt8]?, _ w: inout HTTP1HeadWriter) {
        w.put("HTTP/1.1 ")
        let s = (100...999).contains(status) ? status : 500
        w.put(UInt8(truncatingIfNeeded: s / 100) &+ 0x30)
        w.put(UInt8(truncatingIfNeeded: (s / 10) % 10) &+ 0x30)
        w.put(UInt8(truncatingIfNeeded: s % 10) &+ 0x30)
        w.put(HTTP1Syntax.sp)
        if let reason, !reason.isEmpty {
            w.put(reason)
        } else {
            w.put(HTTPResponse.reasonPhrase(s))
        }
        w.put("\r\n")
    }

    /// The upstream request for `forward` in a buffer of its own, reserved once for the head and the
    /// body (`appendUpstreamRequest`): what both connections send upstream.
    static func upstreamRequest(_ forward: HTTPForward, hostHeader: [UInt8]) -> [UInt8] {
        var request: [UInt8] = []
        request.reserveCapacity(512 + forward.headers.storage.count + forward.body.count)
        appendUpstreamRequest(forward, hostHeader: hostHeader, into: &request)
        return request
    }

    /// The upstream request for `forward`: request line, fields minus `HopByHop.fieldNames`, `Host`
    /// when absent, one `Content-Length`, then the body.
    ///
    /// The fields the client named in `Connection` were removed when `forward` was made
    /// (`HTTPForward.init`), before the handler added its own; they are not looked up again here,
    /// so a field the handler set is never dropped because the client named it (the request's fields
    /// as received are not consulted).
    static func appendUpstreamRequest(_ forward: HTTPForward, hostHeader: [UInt8], into out: inout [UInt8]) {
        appendUpstreamRequest(method: forward.method, target: forward.target, headers: forward.headers, body: forward.body,
                              hostHeader: hostHeader, into: &out)
    }

    /// `appendUpstreamRequest` from the forward's parts (borrowed: the head writer's closure captures
    /// these, where capturing the whole forward copied it, one retain per field).
    private static func appendUpstreamRequest(method: HTTPMethod, target: [UInt8], headers: HTTPHeaders, body: [UInt8],
                                              hostHeader: [UInt8], into out: inout [UInt8]) {
        let methodLength = method.byteCount
        let bound = methodLength + 1 + target.count + 11 + headers.storage.count
            + 4 * headers.slots.count + 8 + hostHeader.count + 18 + HTTP1HeadWriter.decimalBound + 2
        HTTP1HeadWriter.append(into: &out, bound: bound) { w in
            method.put(into: &w)
            w.put(HTTP1Syntax.sp)
            w.put(target)
            w.put(" HTTP/1.1\r\n")
            var hasHost = false
            headers.storage.withUnsafeBytes { s in
                for slot in headers.slots {
                    let name = HTTPHeaders.nameBuffer(s, slot)
                    if HopByHop.isHopByHop(name) { continue }
                    if name.count == 4 && HTTP1Syntax.equalsLowercaseLiteral(name, "host") {
                        if hasHost { continue }  // never forward two Host fields
                        hasHost = true
                    }
                    w.putField(name, HTTPHeaders.valueBuffer(s, slot))
                }
            }
            if !hasHost {
                w.put("Host: ")
                w.put(hostHeader)
                w.put("\r\n")
            }
            if !body.isEmpty || method.sendsZeroContentLength {
                w.put("Content-Length: ")
                w.putDecimal(body.count)
                w.put("\r\n")
            }
            w.put("\r\n")
        }
        out.append(contentsOf: body)
    }

    /// `<hex size>\r\n` before a chunk of `count` bytes.
    @inline(__always) static func appendChunkHeader(_ count: Int, into out: inout [UInt8]) {
        HTTP1Syntax.appendHex(count, to: &out)
        put("\r\n", &out)
    }
}
