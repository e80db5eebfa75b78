// Response body bytes of one HTTP/2 stream waiting for the peer's flow-control window.

import GatewayIO

/// A FIFO of bytes: appended as the upstream delivers them, taken as nghttp2 builds DATA frames
/// (RFC 9113 section 6.1). Capacity is kept between uses; a buffer that grew past
/// `OutputBuffer.shrinkAbove` is released once empty.
struct HTTP2BodyBuffer {
    private var bytes: [UInt8] = []
    private var start = 0

    /// Bytes not yet taken.
    var count: Int { bytes.count - start }
    /// Whether nothing is waiting.
    var isEmpty: Bool { start == bytes.count }

    /// Appends `data` at the end.
    mutating func append(_ data: UnsafeRawBufferPointer) { bytes.append(contentsOf: data) }

    /// Appends `data` at the end.
    mutating func append(_ data: [UInt8]) {
        if isEmpty && bytes.isEmpty {
            bytes = data  // no copy for a handler's whole body
        } else {
            bytes.append(contentsOf: data)
        }
    }

    /// Moves up to `destination.count` bytes from the front into `destination`.
    /// - Returns: how many bytes were moved.
    mutating func take(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(destination.count, count)
        guard n > 0 else { return 0 }
        bytes.withUnsafeBytes { src in
            destination.baseAddress!.copyMemory(from: src.baseAddress! + start, byteCount: n)
        }
        start += n
        if start == bytes.count {
            if bytes.capacity > OutputBuffer.shrinkAbove { bytes = [] } else { bytes.removeAll(keepingCapacity: true) }
            start = 0
        } else if start > 65536 && start * 2 > bytes.count {
            bytes.removeSubrange(0..<start)
            start = 0
        }
        return n
    }

    /// Drops every byte and releases the storage.
    mutating func removeAll() {
        bytes = []
        start = 0
    }
}
