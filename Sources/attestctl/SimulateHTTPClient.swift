import Foundation
import Glibc

/// A small blocking HTTP/1.1 client over a POSIX TCP socket, for `attestctl simulate` (client-side
/// tooling, not the gateway's hot path; no libcurl).
///
/// One request per connection (`Connection: close`); request bodies are sent with Content-Length;
/// responses are read with `SimulateHTTPResponseParser` (Content-Length, chunked, or until close).
/// Connect, send and receive each time out after `timeout` seconds.
enum SimulateHTTPClient {
    /// Network failures (resolution, connect, I/O, timeout, malformed response).
    struct NetworkError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends one request and returns the response.
    /// - Parameters:
    ///   - method: request method, e.g. "POST".
    ///   - target: origin-form request-target (path and query), sent exactly as given.
    ///   - headers: extra header fields, in order (Host, Content-Length, Connection are added).
    ///   - body: request body (Content-Length is sent when non-empty or for POST/PUT/PATCH).
    ///   - url: the gateway.
    ///   - timeout: seconds per connect / send / receive.
    /// - Throws: `NetworkError`.
    static func send(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8],
                     to url: SimulateGatewayURL, timeout: Int) throws -> SimulateHTTPResponse {
        var request = "\(method) \(target) HTTP/1.1\r\nHost: \(url.hostHeader)\r\n"
        for header in headers { request += "\(header.name): \(header.value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { request += "Content-Length: \(body.count)\r\n" }
        request += "Connection: close\r\nUser-Agent: attestctl-simulate\r\n\r\n"
        let fd = try connect(url, timeout: timeout)
        defer { close(fd) }
        try writeAll(fd, Array(request.utf8) + body)
        var parser = SimulateHTTPResponseParser(requestMethod: method)
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw NetworkError("no response within \(timeout) s") }
                throw NetworkError("recv: \(String(cString: strerror(errno)))")
            }
            do {
                if count == 0 { return try parser.finish() }
                if try parser.consume(Array(chunk[0..<count])), let response = parser.completed { return response }
            } catch let error as SimulateHTTPResponseParser.ParseError {
                throw NetworkError("malformed response: \(error)")
            }
        }
    }

    private static func connect(_ url: SimulateGatewayURL, timeout: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let rc = getaddrinfo(url.host, String(url.port), &hints, &list)
        guard rc == 0, let first = list else {
            throw NetworkError("cannot resolve \(url.host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else { lastError = String(cString: strerror(errno)); continue }
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            var connected = Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0
            if !connected && errno == EINPROGRESS {
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                var ready: Int32
                repeat { ready = poll(&poller, 1, Int32(timeout * 1000)) } while ready < 0 && errno == EINTR
                if ready == 1 {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    connected = error == 0
                    if !connected { lastError = String(cString: strerror(error)) }
                } else {
                    lastError = ready == 0 ? "connect timed out after \(timeout) s" : String(cString: strerror(errno))
                }
            } else if !connected {
                lastError = String(cString: strerror(errno))
            }
            guard connected else { close(fd); continue }
            _ = fcntl(fd, F_SETFL, flags)
            var time = timeval(tv_sec: timeout, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            return fd
        }
        throw NetworkError("cannot connect to \(url.hostHeader): \(lastError)")
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw NetworkError("send: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }
}
