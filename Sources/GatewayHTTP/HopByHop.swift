// Hop-by-hop fields (RFC 9110 section 7.6.1) and what a proxy never forwards.

import GatewayIO

/// Which fields are connection-specific and must not be forwarded (RFC 9110 section 7.6.1).
enum HopByHop {
    /// Fields never forwarded upstream: the hop-by-hop set plus `Expect` (answered here),
    /// `Content-Length` (re-framed) and `HTTP2-Settings` (h2c upgrades are never performed, RFC 9113
    /// section 3.1).
    @inline(__always) static func isRequestHopByHop(_ name: UnsafeRawBufferPointer) -> Bool {
        switch name.count {
        case 2: return HTTP1Syntax.equalsLowercaseLiteral(name, "te")
        case 6: return HTTP1Syntax.equalsLowercaseLiteral(name, "expect")
        case 7: return HTTP1Syntax.equalsLowercaseLiteral(name, "trailer") || HTTP1Syntax.equalsLowercaseLiteral(name, "upgrade")
        case 10: return HTTP1Syntax.equalsLowercaseLiteral(name, "connection") || HTTP1Syntax.equalsLowercaseLiteral(name, "keep-alive")
        case 14: return HTTP1Syntax.equalsLowercaseLiteral(name, "content-length")
            || HTTP1Syntax.equalsLowercaseLiteral(name, "http2-settings")
        case 16: return HTTP1Syntax.equalsLowercaseLiteral(name, "proxy-connection")
        case 17: return HTTP1Syntax.equalsLowercaseLiteral(name, "transfer-encoding")
        default: return false
        }
    }

    /// Fields never relayed downstream from an upstream response (framing is redone here).
    @inline(__always) static func isResponseHopByHop(_ name: UnsafeRawBufferPointer) -> Bool {
        if name.count == 6 { return false }  // "expect" is a request field only
        if name.count == 14 { return HTTP1Syntax.equalsLowercaseLiteral(name, "content-length") }
        return isRequestHopByHop(name)
    }

    /// Lower-cased tokens listed in the `Connection` fields of `headers` (RFC 9110 section 7.6.1),
    /// appended to `tokens` (nothing is allocated when there is no Connection field).
    static func connectionTokens(_ headers: HTTPHeaders, into tokens: inout [[UInt8]]) {
        headers.storage.withUnsafeBytes { s in
            for slot in headers.slots where headers.slotNameIs(s, slot, "connection") {
                HTTP1Syntax.forEachListElement(HTTPHeaders.valueBuffer(s, slot)) { token in
                    if !token.isEmpty && !HTTP1Syntax.equalsLowercaseLiteral(token, "close")
                        && !HTTP1Syntax.equalsLowercaseLiteral(token, "keep-alive") {
                        tokens.append(token.map(HTTP1Syntax.lower))
                    }
                    return true
                }
            }
        }
    }

    /// Whether `name` is one of the lower-cased `tokens`.
    @inline(__always) static func isNamed(_ name: UnsafeRawBufferPointer, in tokens: [[UInt8]]) -> Bool {
        for token in tokens where token.count == name.count {
            if token.withUnsafeBytes({ HTTP1Syntax.equalsCaseInsensitive($0, name) }) { return true }
        }
        return false
    }
}
