import Foundation

/// One HTTP/1.1 response as a test client received it (parsed here, independently of the code under
/// test).
struct HTTPReply: CustomStringConvertible {
    /// Status code (0 when no response arrived).
    var status: Int
    /// Header fields in order, as received.
    var headers: [(name: String, value: String)]
    /// The body (de-chunked).
    var body: [UInt8]

    /// The first value of `name` (case-insensitive).
    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }

    /// Every value of `name` (case-insensitive).
    func headers(_ name: String) -> [String] { headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }

    /// The body as UTF-8 text.
    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object (empty when it is not one).
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }

    /// `error` of a refusal body.
    var errorCode: String? { json["error"] as? String }
    /// `action` of a refusal body.
    var action: String? { json["action"] as? String }

    /// What the upstream reported (upstream.py echo), or nil when the body is not an echo.
    var echo: UpstreamEcho? { UpstreamEcho(json: json) }

    var description: String { "HTTP \(status) \(headers.map { "\($0.name): \($0.value)" }) \(text.prefix(600))" }

    /// Splits a byte stream into responses (Content-Length, chunked or until close).
    static func parseAll(_ bytes: [UInt8]) -> [HTTPReply] {
        var out: [HTTPReply] = []
        var i = 0
        func line() -> String? {
            var j = i
            while j + 1 < bytes.count {
                if bytes[j] == 13 && bytes[j + 1] == 10 {
                    defer { i = j + 2 }
                    return String(decoding: bytes[i..<j], as: UTF8.self)
                }
                j += 1
            }
            return nil
        }
        while i < bytes.count {
            guard let statusLine = line() else { break }
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, let status = Int(parts[1]) else { break }
            var headers: [(name: String, value: String)] = []
            while let l = line(), !l.isEmpty {
                let pair = l.split(separator: ":", maxSplits: 1)
                headers.append((String(pair[0]), pair.count > 1 ? pair[1].trimmingCharacters(in: .whitespaces) : ""))
            }
            var reply = HTTPReply(status: status, headers: headers, body: [])
            if status < 200 { continue }
            if status == 204 || status == 304 { out.append(reply); continue }
            if let te = reply.header("Transfer-Encoding"), te.lowercased() == "chunked" {
                while let sizeLine = line(), let size = Int(sizeLine.split(separator: ";").first ?? "", radix: 16) {
                    if size == 0 {
                        while let t = line(), !t.isEmpty {}
                        break
                    }
                    reply.body += bytes[i..<min(bytes.count, i + size)]
                    i += size + 2
                }
            } else if let length = reply.header("Content-Length").flatMap(Int.init) {
                reply.body = Array(bytes[i..<min(bytes.count, i + length)])
                i += length
            } else {
                reply.body = Array(bytes[i...])
                i = bytes.count
            }
            out.append(reply)
        }
        return out
    }
}

/// The upstream's description of the request it received (Tests/GatewayHTTPTests/Fixtures/upstream.py).
struct UpstreamEcho {
    /// Method as received.
    let method: String
    /// Request-target as received.
    let target: String
    /// Header fields in order.
    let headers: [(name: String, value: String)]
    /// Body length and SHA-256 (lower-case hex) as received.
    let bodyLength: Int
    let bodySHA256: String

    init?(json: [String: Any]) {
        guard let method = json["method"] as? String, let target = json["target"] as? String,
              let pairs = json["headers"] as? [[String]], let sha = json["bodySHA256"] as? String,
              let length = json["bodyLength"] as? Int else { return nil }
        self.method = method
        self.target = target
        headers = pairs.compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil }
        bodySHA256 = sha
        bodyLength = length
    }

    /// Every value of `name` (case-insensitive).
    func values(_ name: String) -> [String] { headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value) }

    /// Every field whose name starts with `prefix` (case-insensitive).
    func fields(withPrefix prefix: String) -> [(name: String, value: String)] {
        headers.filter { $0.name.lowercased().hasPrefix(prefix.lowercased()) }
    }
}
