// Request method (RFC 9110 section 9).

import GatewayIO

/// A request method token (RFC 9110 section 9.1), case-sensitive as the RFC requires.
///
/// The standard methods are stored without allocation; any other valid token is kept as bytes.
public struct HTTPMethod: Sendable, Hashable, CustomStringConvertible {
    @usableFromInline enum Storage: Sendable, Hashable {
        case get, head, post, put, delete, patch, options, trace, connect
        case other([UInt8])
    }

    @usableFromInline let storage: Storage

    @usableFromInline init(storage: Storage) { self.storage = storage }

    /// `GET` (RFC 9110 section 9.3.1).
    public static let get = HTTPMethod(storage: .get)
    /// `HEAD` (RFC 9110 section 9.3.2).
    public static let head = HTTPMethod(storage: .head)
    /// `POST` (RFC 9110 section 9.3.3).
    public static let post = HTTPMethod(storage: .post)
    /// `PUT` (RFC 9110 section 9.3.4).
    public static let put = HTTPMethod(storage: .put)
    /// `DELETE` (RFC 9110 section 9.3.5).
    public static let delete = HTTPMethod(storage: .delete)
    /// `PATCH` (RFC 5789).
    public static let patch = HTTPMethod(storage: .patch)
    /// `OPTIONS` (RFC 9110 section 9.3.7).
    public static let options = HTTPMethod(storage: .options)
    /// `TRACE` (RFC 9110 section 9.3.8).
    public static let trace = HTTPMethod(storage: .trace)
    /// `CONNECT` (RFC 9110 section 9.3.6).
    public static let connect = HTTPMethod(storage: .connect)

    /// A method from its token bytes.
    /// - Returns: nil when `bytes` is empty or holds a byte that is not a `tchar` (RFC 9110 section 5.6.2).
    public init?(_ bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        guard !array.isEmpty, array.allSatisfy(HTTP1Syntax.isTchar) else { return nil }
        self = array.withUnsafeBytes { HTTPMethod(validatedToken: $0) }
    }

    /// A method from its name, e.g. `HTTPMethod("GET")`; nil when not a token.
    public init?(_ name: String) { self.init(Array(name.utf8)) }

    /// Builds from bytes already checked to be a non-empty token.
    @inline(__always) init(validatedToken b: UnsafeRawBufferPointer) {
        @inline(__always) func eq(_ lit: StaticString) -> Bool {
            guard b.count == lit.utf8CodeUnitCount else { return false }
            for i in 0..<b.count where b[i] != lit.utf8Start[i] { return false }
            return true
        }
        switch b.count {
        case 3: if eq("GET") { self = .get; return }; if eq("PUT") { self = .put; return }
        case 4: if eq("POST") { self = .post; return }; if eq("HEAD") { self = .head; return }
        case 5: if eq("PATCH") { self = .patch; return }; if eq("TRACE") { self = .trace; return }
        case 6: if eq("DELETE") { self = .delete; return }
        case 7: if eq("OPTIONS") { self = .options; return }; if eq("CONNECT") { self = .connect; return }
        default: break
        }
        self.init(storage: .other(Array(b)))
    }

    /// A request's method from its token (non-empty, every byte a `tchar`: checked by the caller);
    /// nil when a method other than the standard ones holds a lower-case ASCII letter (`post`,
    /// `Delete`). Methods are case-sensitive (RFC 9110 section 9.1), but applications behind a
    /// gateway often fold them (werkzeug and Django upper-case `REQUEST_METHOD`): a route that takes
    /// only `POST` would let `post` fall through to the next route while the upstream ran its POST
    /// handler. Such requests are refused (`400 method_invalid`, as nginx refuses them), over HTTP/1.1
    /// (`HTTP1RequestParser`) and HTTP/2 (`HTTP2RequestHeadBuilder`) alike.
    @inline(__always) init?(requestToken b: UnsafeRawBufferPointer) {
        self.init(validatedToken: b)
        if case .other = storage {
            for byte in b where byte &- 0x61 < 26 { return nil }
        }
    }

    /// The token as written on the request line.
    public var description: String {
        switch storage {
        case .get: return "GET"
        case .head: return "HEAD"
        case .post: return "POST"
        case .put: return "PUT"
        case .delete: return "DELETE"
        case .patch: return "PATCH"
        case .options: return "OPTIONS"
        case .trace: return "TRACE"
        case .connect: return "CONNECT"
        case .other(let bytes): return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The token bytes as written on the request line (standard methods share one array each: no
    /// allocation per call).
    public var bytes: [UInt8] {
        switch storage {
        case .get: return HTTPMethod.getBytes
        case .head: return HTTPMethod.headBytes
        case .post: return HTTPMethod.postBytes
        case .put: return HTTPMethod.putBytes
        case .delete: return HTTPMethod.deleteBytes
        case .patch: return HTTPMethod.patchBytes
        case .options: return HTTPMethod.optionsBytes
        case .trace: return HTTPMethod.traceBytes
        case .connect: return HTTPMethod.connectBytes
        case .other(let bytes): return bytes
        }
    }

    private static let getBytes = Array("GET".utf8)
    private static let headBytes = Array("HEAD".utf8)
    private static let postBytes = Array("POST".utf8)
    private static let putBytes = Array("PUT".utf8)
    private static let deleteBytes = Array("DELETE".utf8)
    private static let patchBytes = Array("PATCH".utf8)
    private static let optionsBytes = Array("OPTIONS".utf8)
    private static let traceBytes = Array("TRACE".utf8)
    private static let connectBytes = Array("CONNECT".utf8)

    /// Appends the token bytes to `out` without intermediate allocation for standard methods.
    func append(to out: inout [UInt8]) {
        @inline(__always) func put(_ s: StaticString) {
            out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        }
        switch storage {
        case .get: put("GET")
        case .head: put("HEAD")
        case .post: put("POST")
        case .put: put("PUT")
        case .delete: put("DELETE")
        case .patch: put("PATCH")
        case .options: put("OPTIONS")
        case .trace: put("TRACE")
        case .connect: put("CONNECT")
        case .other(let bytes): out.append(contentsOf: bytes)
        }
    }

    /// Length of the token in bytes.
    var byteCount: Int {
        switch storage {
        case .get, .put: return 3
        case .head, .post: return 4
        case .patch, .trace: return 5
        case .delete: return 6
        case .options, .connect: return 7
        case .other(let bytes): return bytes.count
        }
    }

    /// Writes the token through a head writer (`byteCount` bytes).
    func put(into w: inout HTTP1HeadWriter) {
        switch storage {
        case .get: w.put("GET")
        case .head: w.put("HEAD")
        case .post: w.put("POST")
        case .put: w.put("PUT")
        case .delete: w.put("DELETE")
        case .patch: w.put("PATCH")
        case .options: w.put("OPTIONS")
        case .trace: w.put("TRACE")
        case .connect: w.put("CONNECT")
        case .other(let bytes): w.put(bytes)
        }
    }

    /// Idempotent per RFC 9110 section 9.2.2 (GET, HEAD, PUT, DELETE, OPTIONS, TRACE): a request that
    /// may be retried automatically on a fresh upstream connection.
    public var isIdempotent: Bool {
        switch storage {
        case .get, .head, .put, .delete, .options, .trace: return true
        default: return false
        }
    }

    /// Methods whose upstream request carries `Content-Length: 0` when the body is empty
    /// (POST, PUT, PATCH: RFC 9110 section 8.6 "SHOULD send Content-Length" for methods that define content).
    var sendsZeroContentLength: Bool {
        switch storage {
        case .post, .put, .patch: return true
        default: return false
        }
    }
}

