// The header fields that decide an HTTP/1.1 message's framing and persistence, gathered in one pass.

import GatewayIO

/// What one message head says about its framing (RFC 9112 sections 6.1-6.3, 9.3) and, for
/// requests, about `Host` and `Expect`: counted, not judged. `HTTP1RequestParser` and
/// `HTTP1ResponseParser` apply their own rules to it (a request refuses what a response tolerates).
///
/// Field names are matched case-insensitively; list values are split on commas with optional
/// whitespace trimmed (`HTTP1Syntax.forEachListElement`), every field line counted.
struct HTTP1FramingFields {
    /// `Content-Length` field lines.
    var contentLengthCount = 0
    /// The last `Content-Length` value as a decimal, nil when it was not only digits (or too large).
    var contentLength: Int?
    /// A `Content-Length` value held a comma (a list such as `5, 5`).
    var contentLengthIsList = false
    /// A `Transfer-Encoding` field line was present.
    var transferEncodingSeen = false
    /// `Transfer-Encoding` list elements over every line, empty ones included.
    var transferEncodingElements = 0
    /// Every `Transfer-Encoding` element was exactly `chunked` (any case).
    var transferEncodingAllChunked = true
    /// The last non-empty `Transfer-Encoding` element was `chunked`.
    var chunkedLast = false
    /// A `Connection` token `close`.
    var connectionClose = false
    /// A `Connection` token `keep-alive`.
    var connectionKeepAlive = false
    /// `Host` field lines.
    var hostCount = 0
    /// A `Host` value that is not `uri-host [ ":" port ]` (`HTTPHostSyntax`); only requests judge it.
    var hostMalformed = false
    /// An `Expect: 100-continue` line.
    var expectContinue = false
    /// An `Expect` line with any other value.
    var expectOther = false

    /// Scans every field line of `headers` once.
    init(_ headers: HTTPHeaders) {
        headers.storage.withUnsafeBytes { s in
            for slot in headers.slots {
                let name = HTTPHeaders.nameBuffer(s, slot)
                let value = HTTPHeaders.valueBuffer(s, slot)
                switch name.count {
                case 4 where HTTP1Syntax.equalsLowercaseLiteral(name, "host"):
                    hostCount += 1
                    if !HTTPHostSyntax.isValidHostField(value) { hostMalformed = true }
                case 14 where HTTP1Syntax.equalsLowercaseLiteral(name, "content-length"):
                    contentLengthCount += 1
                    if value.contains(0x2C) { contentLengthIsList = true }
                    contentLength = HTTP1Syntax.parseDecimal(value)
                case 17 where HTTP1Syntax.equalsLowercaseLiteral(name, "transfer-encoding"):
                    transferEncodingSeen = true
                    HTTP1Syntax.forEachListElement(value) { coding in
                        transferEncodingElements += 1
                        let chunked = HTTP1Syntax.equalsLowercaseLiteral(coding, "chunked")
                        if !chunked { transferEncodingAllChunked = false }
                        if !coding.isEmpty { chunkedLast = chunked }
                        return true
                    }
                case 10 where HTTP1Syntax.equalsLowercaseLiteral(name, "connection"):
                    HTTP1Syntax.forEachListElement(value) { token in
                        if HTTP1Syntax.equalsLowercaseLiteral(token, "close") { connectionClose = true }
                        if HTTP1Syntax.equalsLowercaseLiteral(token, "keep-alive") { connectionKeepAlive = true }
                        return true
                    }
                case 6 where HTTP1Syntax.equalsLowercaseLiteral(name, "expect"):
                    if HTTP1Syntax.equalsLowercaseLiteral(value, "100-continue") {
                        expectContinue = true
                    } else {
                        expectOther = true
                    }
                default:
                    break
                }
            }
        }
    }
}
