// The HTTP/2 client connection preface, for h2c with prior knowledge (RFC 9113 section 3.3).

import GatewayIO

/// Recognises the client connection preface `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n` (24 bytes, RFC 9113
/// sections 3.3 and 3.4) at the start of a plain-text connection, on however many bytes arrived.
enum HTTP2Preface {
    /// How the first bytes of a connection compare with the preface.
    enum Match: Equatable {
        /// All 24 bytes are there: the connection speaks HTTP/2.
        case complete
        /// The bytes so far are a proper prefix of the preface: wait for more.
        case partial
        /// Not the preface: HTTP/1.1.
        case mismatch
    }

    /// The 24 preface bytes.
    static let bytes: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Compares the first bytes of a connection with the preface.
    static func match(_ input: UnsafeRawBufferPointer) -> Match {
        let n = min(input.count, bytes.count)
        for i in 0..<n where input[i] != bytes[i] { return .mismatch }
        return n == bytes.count ? .complete : .partial
    }
}
