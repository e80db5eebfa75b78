// One connection's byte stream on its event loop: the socket itself, or TLS over it.

/// The reads and writes of one accepted or connected socket, whatever carries the bytes: the plain
/// socket, or (once TLS is added by `startTLS`) an OpenSSL session over it. Protocol code (the
/// HTTP/1.1 and HTTP/2 connections, upstream connections) reads and writes through it and sets its
/// read and write interest on `channel`, so the same code serves plain and TLS connections.
///
/// Readiness is delivered to the current handlers (`setHandlers`), which a connection can hand over
/// to another (an HTTP/1.1 connection that sees the HTTP/2 preface, a TLS handshake that negotiated
/// `h2`). Everything runs on the loop's queue.
package final class ByteStream {
    /// The socket and its interest in the loop's poller (owned: `close()` closes it).
    package private(set) var channel: SocketChannel!
    private var onReadable: () -> Void = {}
    private var onWritable: () -> Void = {}

    /// Takes ownership of the non-blocking socket `fd` in `loop`'s poller; nothing is delivered
    /// before `channel.startReading()` / `channel.armWrite()`. Call on the loop's queue.
    package init(fd: Int32, loop: EventLoop) {
        channel = SocketChannel(fd: fd, loop: loop,
                                onReadable: { [unowned self] in self.onReadable() },
                                onWritable: { [unowned self] in self.onWritable() })
    }

    /// Routes readiness to new handlers (the previous ones are dropped).
    package func setHandlers(onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) {
        self.onReadable = onReadable
        self.onWritable = onWritable
    }

    /// Reads what is available into `buffer` (`.wouldBlock` when nothing is).
    @inline(__always)
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Socket.ReadResult {
        Socket.read(channel.fd, into: buffer)
    }

    /// Writes from `bytes`: the number of bytes taken (0 when it would block), or the failure.
    @inline(__always)
    package func write(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Socket.Failure> {
        Socket.write(channel.fd, bytes)
    }

    /// Half-closes the write side (FIN) and disarms write interest; reading goes on.
    package func shutdownWrite() {
        channel.shutdownWrite()
    }

    /// Closes the socket (removed from the poller first) and drops the handlers. Idempotent.
    package func close() {
        onReadable = {}
        onWritable = {}
        channel.close()
    }
}
