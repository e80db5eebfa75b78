import Foundation

/// Incremental parser of one HTTP/1.1 response (RFC 9112) for the blocking client of `attestctl
/// simulate`: a value type that consumes bytes as they arrive and says when the response is complete.
///
/// Framing (RFC 9112 section 6.3): no body for 1xx/204/304 and responses to HEAD; `Transfer-Encoding`
/// ending in `chunked` -> chunked (extensions ignored, trailers kept); otherwise `Content-Length`
/// (several values must agree); otherwise the body runs until the connection closes. Interim 1xx
/// responses (e.g. 100 Continue) are skipped. Limits: 64 KiB of head, 16 MiB of body.
struct SimulateHTTPResponseParser {
    /// Parse failures (malformed framing, limits exceeded, connection closed early).
    struct ParseError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    private enum State {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case done
    }

    static let maxHeadBytes = 64 * 1024
    static let maxBodyBytes = 16 * 1024 * 1024

    private let requestMethod: String
    private var state: State = .head
    private var buffer: [UInt8] = []
    private var response = SimulateHTTPResponse(status: 0, reason: "", headers: [], body: [])

    /// A parser for the response to a request with `requestMethod` (HEAD responses have no body).
    init(requestMethod: String) { self.requestMethod = requestMethod }

    /// The complete response, or nil while more bytes are needed.
    var completed: SimulateHTTPResponse? {
        if case .done = state { return response }
        return nil
    }

    /// Consumes bytes received from the connection.
    /// - Returns: true once the response is complete (later bytes are ignored).
    /// - Throws: `ParseError` for malformed input or exceeded limits.
    mutating func consume(_ bytes: [UInt8]) throws -> Bool {
        if case .done = state { return true }
        buffer += bytes
        while try step() {}
        if case .done = state { return true }
        return false
    }

    /// The connection was closed by the server: completes a close-delimited body.
    /// - Throws: `ParseError` when the response was cut short.
    mutating func finish() throws -> SimulateHTTPResponse {
        switch state {
        case .done: return response
        case .untilClose:
            state = .done
            return response
        default:
            throw ParseError("connection closed before the response was complete")
        }
    }

    /// One parsing step; returns whether progress was made.
    private mutating func step() throws -> Bool {
        switch state {
        case .head:
            guard let end = find([13, 10, 13, 10]) else {
                if buffer.count > Self.maxHeadBytes { throw ParseError("response head larger than \(Self.maxHeadBytes) bytes") }
                return false
            }
            let head = Array(buffer[0..<end])
            buffer.removeFirst(end + 4)
            try parseHead(head)
            return true
        case .fixed(let remaining):
            guard !buffer.isEmpty else { return false }
            let take = min(remaining, buffer.count)
            try appendBody(buffer[0..<take])
            buffer.removeFirst(take)
            state = remaining == take ? .done : .fixed(remaining: remaining - take)
            return true
        case .chunkSize:
            guard let end = find([13, 10]) else {
                if buffer.count > 1024 { throw ParseError("chunk size line too long") }
                return false
            }
            let line = buffer[0..<end]
            buffer.removeFirst(end + 2)
            let digits = line.prefix { $0 != UInt8(ascii: ";") }.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
            guard !digits.isEmpty, digits.count <= 8, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                throw ParseError("bad chunk size line")
            }
            state = size == 0 ? .trailers : .chunkData(remaining: size)
            return true
        case .chunkData(let remaining):
            guard !buffer.isEmpty else { return false }
            let take = min(remaining, buffer.count)
            try appendBody(buffer[0..<take])
            buffer.removeFirst(take)
            state = remaining == take ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            return true
        case .chunkDataEnd:
            guard buffer.count >= 2 else { return false }
            guard buffer[0] == 13, buffer[1] == 10 else { throw ParseError("chunk data not followed by CRLF") }
            buffer.removeFirst(2)
            state = .chunkSize
            return true
        case .trailers:
            guard let end = find([13, 10]) else {
                if buffer.count > Self.maxHeadBytes { throw ParseError("trailer section too large") }
                return false
            }
            let line = Array(buffer[0..<end])
            buffer.removeFirst(end + 2)
            if line.isEmpty {
                state = .done
            } else {
                response.headers.append(try Self.field(line))
            }
            return true
        case .untilClose:
            guard !buffer.isEmpty else { return false }
            try appendBody(buffer[...])
            buffer.removeAll(keepingCapacity: true)
            return false
        case .done:
            return false
        }
    }

    private mutating func parseHead(_ head: [UInt8]) throws {
        var lines = Self.split(head)
        guard !lines.isEmpty else { throw ParseError("empty response head") }
        let statusLine = lines.removeFirst()
        // HTTP-version SP 3DIGIT SP [reason-phrase]
        guard statusLine.count >= 12, Array(statusLine[0..<7]) == Array("HTTP/1.".utf8), statusLine[8] == UInt8(ascii: " "),
              statusLine[9...11].allSatisfy({ $0 >= 48 && $0 <= 57 }), statusLine.count == 12 || statusLine[12] == UInt8(ascii: " ")
        else { throw ParseError("bad status line: \(String(decoding: statusLine.prefix(80), as: UTF8.self))") }
        let status = Int(statusLine[9] - 48) * 100 + Int(statusLine[10] - 48) * 10 + Int(statusLine[11] - 48)
        var headers: [(name: String, value: String)] = []
        for line in lines { headers.append(try Self.field(line)) }
        if (100..<200).contains(status) && status != 101 {
            state = .head  // interim response: the final one follows
            return
        }
        response = SimulateHTTPResponse(status: status, reason: statusLine.count > 13 ? String(decoding: statusLine[13...], as: UTF8.self) : "",
                                        headers: headers, body: [])
        if requestMethod == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            state = .done
            return
        }
        let transferEncodings = headers.filter { $0.name.lowercased() == "transfer-encoding" }
            .flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() } }
        if let last = transferEncodings.last {
            guard last == "chunked" else { state = .untilClose; return }
            state = .chunkSize
            return
        }
        let lengths = Set(headers.filter { $0.name.lowercased() == "content-length" }
            .flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } })
        if lengths.isEmpty {
            state = .untilClose
            return
        }
        guard lengths.count == 1, let text = lengths.first, !text.isEmpty, text.count <= 9,
              text.allSatisfy({ $0.isASCII && $0.isNumber }), let length = Int(text) else {
            throw ParseError("bad Content-Length \(lengths.sorted())")
        }
        guard length <= Self.maxBodyBytes else { throw ParseError("body larger than \(Self.maxBodyBytes) bytes") }
        state = length == 0 ? .done : .fixed(remaining: length)
    }

    private mutating func appendBody(_ bytes: ArraySlice<UInt8>) throws {
        guard response.body.count + bytes.count <= Self.maxBodyBytes else { throw ParseError("body larger than \(Self.maxBodyBytes) bytes") }
        response.body += bytes
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        var index = 0
        while index + pattern.count <= buffer.count {
            if buffer[index] == pattern[0] && Array(buffer[index..<(index + pattern.count)]) == pattern { return index }
            index += 1
        }
        return nil
    }

    private static func split(_ head: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var start = 0
        var index = 0
        while index + 1 < head.count {
            if head[index] == 13 && head[index + 1] == 10 {
                lines.append(Array(head[start..<index]))
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        lines.append(Array(head[start...]))
        return lines
    }

    private static func field(_ line: [UInt8]) throws -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              line[0..<colon].allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw ParseError("bad header line: \(String(decoding: line.prefix(80), as: UTF8.self))")
        }
        let name = String(decoding: line[0..<colon], as: UTF8.self)
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
        return (name, value)
    }
}
