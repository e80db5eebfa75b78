// One connection's byte stream on its event loop: the socket itself, or TLS over it.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The reads and writes of one accepted or connected socket, whatever carries the bytes: the plain
/// socket, or an OpenSSL session over it (`attachTLS`, then `continueHandshake()` until done).
/// Protocol code (the HTTP/1.1 and HTTP/2 connections, upstream connections) reads and writes
/// through it and sets its read and write interest on `channel`, so the same code serves plain and
/// TLS connections.
///
/// Readiness is delivered to the current handlers (`setHandlers`), which a connection can hand over
/// to another (an HTTP/1.1 connection that sees the HTTP/2 preface, a TLS handshake that negotiated
/// `h2`). With TLS, a read that needs the socket to be writable (a TLS 1.3 post-handshake message
/// to answer) waits for writability and is then retried through the read handler; a write that
/// needs a read waits for readability and is retried through the write handler (OpenSSL's
/// `SSL_ERROR_WANT_WRITE` / `SSL_ERROR_WANT_READ` contract, see SSL_get_error(3)). Everything runs
/// on the loop's queue.
package final class ByteStream {
    /// The socket and its interest in the loop's poller (owned: `close()` closes it). A constant: no
    /// run-time exclusivity check on its reads (a `var`, even `@exclusivity(unchecked)`, was still
    /// checked where another module inlines the read; bench/PERFORMANCE.md, "Session 32").
    package let channel: SocketChannel
    /// The TLS session over the socket, if any (owned: freed by `close()`).
    ///
    /// Release builds drop its run-time exclusivity check (`@exclusivity(unchecked)`; debug builds
    /// keep it): read on every read and write and written only by `attachTLS` and `close()`, on the
    /// loop's queue, and a read of a reference cannot nest another access (bench/PERFORMANCE.md
    /// "Seventh pass").
    #if DEBUG
    package private(set) var tls: TLSConnection?
    #else
    @exclusivity(unchecked) package private(set) var tls: TLSConnection?
    #endif
    private let loop: EventLoop
    private var onReadable: () -> Void = {}
    private var onWritable: () -> Void = {}
    /// A TLS read asked for writability: the next writable event retries the read.
    private var readWantsWrite = false
    /// A TLS write asked for readability: the next readable event retries the write.
    private var writeWantsRead = false
    /// TLS reads and handshake steps taken (wrapping), so that `deliverBufferedInput` sees whether a
    /// handler used the input at all.
    private var tlsSteps: UInt = 0

    /// Takes ownership of the non-blocking socket `fd` in `loop`'s poller; nothing is delivered
    /// before `channel.startReading()` / `channel.armWrite()`. Call on the loop's queue.
    package init(fd: Int32, loop: EventLoop) {
        self.loop = loop
        channel = SocketChannel(fd: fd, loop: loop, onReadable: {}, onWritable: {})
        channel.setHandlers(onReadable: { [unowned self] in self.readable() },
                            onWritable: { [unowned self] in self.writable() })
    }

    /// Routes readiness to new handlers (the previous ones are dropped).
    package func setHandlers(onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) {
        self.onReadable = onReadable
        self.onWritable = onWritable
    }

    private func readable() {
        if writeWantsRead {
            writeWantsRead = false
            channel.armWrite()
            onWritable()
        }
        onReadable()
        deliverBufferedInput()
    }

    /// TLS reads ahead: OpenSSL may hold decrypted input the socket will never signal again. While
    /// the handler still wants input, hand it over now (a few rounds), then at the end of the loop's
    /// turn. Every round must make the handler read (or step its handshake): `hasBufferedInput` turns
    /// false once a read ends wanting the socket (a partial record), and a handler that took no step
    /// is not called again here (it reads on the socket's next readiness, or `resumeReading`), so
    /// this never spins without returning to the poller.
    private func deliverBufferedInput() {
        var rounds = 0
        while let tls, tls.hasBufferedInput, channel.isReading, !channel.isClosed {
            if rounds == 4 {
                // Strong, held only while queued: a weak capture would give the stream a side table for
                // the rest of its life (every retain of it then takes the runtime's slow path).
                loop.atEndOfTurn { [self] in
                    guard !self.channel.isClosed else { return }
                    let before = self.tlsSteps
                    self.onReadable()
                    if self.tlsSteps != before { self.deliverBufferedInput() }
                }
                return
            }
            rounds += 1
            let before = tlsSteps
            onReadable()
            if tlsSteps == before { return }
        }
    }

    /// Resumes reading after `channel.pauseReading()`; input TLS already holds is delivered on a
    /// later turn (the socket will not signal it).
    package func resumeReading() {
        channel.resumeReading()
        if let tls, tls.hasBufferedInput {
            loop.atEndOfTurn { [self] in
                guard !self.channel.isClosed, self.channel.isReading else { return }
                self.onReadable()
                self.deliverBufferedInput()
            }
        }
    }

    private func writable() {
        if readWantsWrite {
            readWantsWrite = false
            onReadable()
        }
        if writeWantsRead {
            // The pending write waits for readability, not writability: do not spin on it.
            channel.disarmWrite()
            return
        }
        onWritable()
    }

    // MARK: TLS

    /// Puts a TLS session (server or client side, over this stream's socket) in front of every later
    /// read and write; drive its handshake with `continueHandshake()`.
    package func attachTLS(_ session: TLSConnection) {
        tls = session
    }

    /// Progress of a TLS handshake.
    package enum HandshakeProgress: Equatable {
        /// Finished: application data may flow.
        case done
        /// Waiting for the peer (read or write interest set accordingly).
        case inProgress
        /// The peer closed the connection during the handshake.
        case closed
        /// Failed: OpenSSL's reason, for the failure counter and a rate-limited log line.
        case failed(String)
    }

    /// Advances the TLS handshake as far as the socket allows and sets the read/write interest it
    /// waits for. Call on every readiness event until it returns something other than `.inProgress`.
    package func continueHandshake() -> HandshakeProgress {
        guard let tls else { return .done }
        tlsSteps &+= 1
        switch tls.handshake() {
        case .done:
            channel.disarmWrite()
            return .done
        case .wantRead:
            channel.disarmWrite()
            channel.startReading()
            return .inProgress
        case .wantWrite:
            channel.armWrite()
            return .inProgress
        case .closed:
            return .closed
        case .failed(let reason):
            return .failed(reason)
        }
    }

    // MARK: reading and writing

    /// Reads what is available into `buffer` (`.wouldBlock` when nothing is; `.endOfFile` when the
    /// peer closed, for TLS with or without close_notify).
    @inline(__always)
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> Socket.ReadResult {
        guard let tls else { return Socket.read(channel.fd, into: buffer) }
        tlsSteps &+= 1
        switch tls.read(into: buffer) {
        case .bytes(let n):
            return .bytes(n)
        case .wantRead:
            return .wouldBlock
        case .wantWrite:
            readWantsWrite = true
            channel.armWrite()
            return .wouldBlock
        case .closed:
            return .endOfFile
        case .failed:
            return .failed(EPROTO)
        }
    }

    /// Writes from `bytes`: the number of bytes taken (0 when it would block), or the failure.
    @inline(__always)
    package func write(_ bytes: UnsafeRawBufferPointer) -> Result<Int, Socket.Failure> {
        guard let tls else { return Socket.write(channel.fd, bytes) }
        switch tls.write(bytes) {
        case .wrote(let n):
            return .success(n)
        case .wantWrite:
            return .success(0)
        case .wantRead:
            writeWantsRead = true
            return .success(0)
        case .failed(let reason):
            return .failure(Socket.Failure(call: "TLS write: \(reason)", errno: EPROTO))
        }
    }

    /// Half-closes the write side: TLS close_notify first when there is a session, then FIN; write
    /// interest is disarmed and reading goes on.
    package func shutdownWrite() {
        tls?.shutdown()
        channel.shutdownWrite()
    }

    /// Closes the socket (removed from the poller first), frees the TLS session and drops the
    /// handlers. Idempotent.
    package func close() {
        onReadable = {}
        onWritable = {}
        channel.close()
        tls?.close()
        tls = nil
    }
}
