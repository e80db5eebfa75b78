// HTTP/2 error codes (RFC 9113 section 7).

import GatewayIO

/// An HTTP/2 error code as carried by RST_STREAM and GOAWAY frames (RFC 9113 section 7). Unknown
/// codes received from a peer are kept as `.other`.
package enum HTTP2ErrorCode: Sendable, Hashable, CustomStringConvertible {
    /// `NO_ERROR` (0x0): graceful shutdown, or a response complete before the request was.
    case noError
    /// `PROTOCOL_ERROR` (0x1): a malformed request or frame (RFC 9113 section 8.1.1).
    case protocolError
    /// `INTERNAL_ERROR` (0x2): e.g. the upstream failed after the response head was sent.
    case internalError
    /// `FLOW_CONTROL_ERROR` (0x3).
    case flowControlError
    /// `SETTINGS_TIMEOUT` (0x4).
    case settingsTimeout
    /// `STREAM_CLOSED` (0x5).
    case streamClosed
    /// `FRAME_SIZE_ERROR` (0x6).
    case frameSizeError
    /// `REFUSED_STREAM` (0x7): the stream was not processed (over the concurrency limit).
    case refusedStream
    /// `CANCEL` (0x8): the stream is no longer needed.
    case cancel
    /// `COMPRESSION_ERROR` (0x9): the HPACK context cannot be kept.
    case compressionError
    /// `CONNECT_ERROR` (0xa).
    case connectError
    /// `ENHANCE_YOUR_CALM` (0xb): the peer exceeded an abuse budget (RFC 9113 section 10.5).
    case enhanceYourCalm
    /// `INADEQUATE_SECURITY` (0xc).
    case inadequateSecurity
    /// `HTTP_1_1_REQUIRED` (0xd).
    case http11Required
    /// Any other code (RFC 9113 section 7: unknown codes must not trigger special behaviour).
    case other(UInt32)

    /// The code from its wire value.
    package init(_ code: UInt32) {
        switch code {
        case 0x0: self = .noError
        case 0x1: self = .protocolError
        case 0x2: self = .internalError
        case 0x3: self = .flowControlError
        case 0x4: self = .settingsTimeout
        case 0x5: self = .streamClosed
        case 0x6: self = .frameSizeError
        case 0x7: self = .refusedStream
        case 0x8: self = .cancel
        case 0x9: self = .compressionError
        case 0xa: self = .connectError
        case 0xb: self = .enhanceYourCalm
        case 0xc: self = .inadequateSecurity
        case 0xd: self = .http11Required
        default: self = .other(code)
        }
    }

    /// The wire value (RFC 9113 section 7).
    package var code: UInt32 {
        switch self {
        case .noError: return 0x0
        case .protocolError: return 0x1
        case .internalError: return 0x2
        case .flowControlError: return 0x3
        case .settingsTimeout: return 0x4
        case .streamClosed: return 0x5
        case .frameSizeError: return 0x6
        case .refusedStream: return 0x7
        case .cancel: return 0x8
        case .compressionError: return 0x9
        case .connectError: return 0xa
        case .enhanceYourCalm: return 0xb
        case .inadequateSecurity: return 0xc
        case .http11Required: return 0xd
        case .other(let c): return c
        }
    }

    /// The RFC name, e.g. `ENHANCE_YOUR_CALM`.
    package var description: String {
        switch self {
        case .noError: return "NO_ERROR"
        case .protocolError: return "PROTOCOL_ERROR"
        case .internalError: return "INTERNAL_ERROR"
        case .flowControlError: return "FLOW_CONTROL_ERROR"
        case .settingsTimeout: return "SETTINGS_TIMEOUT"
        case .streamClosed: return "STREAM_CLOSED"
        case .frameSizeError: return "FRAME_SIZE_ERROR"
        case .refusedStream: return "REFUSED_STREAM"
        case .cancel: return "CANCEL"
        case .compressionError: return "COMPRESSION_ERROR"
        case .connectError: return "CONNECT_ERROR"
        case .enhanceYourCalm: return "ENHANCE_YOUR_CALM"
        case .inadequateSecurity: return "INADEQUATE_SECURITY"
        case .http11Required: return "HTTP_1_1_REQUIRED"
        case .other(let c): return "0x" + String(c, radix: 16)
        }
    }
}
