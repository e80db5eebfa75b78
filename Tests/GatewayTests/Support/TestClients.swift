import Foundation
import GatewayTestSupport
import XCTest

/// curl as the HTTP client of the end-to-end tests (a real, independent client).
enum Curl {
    /// Sends one request and returns the response (status 0 when none arrived; `curlOutput` then
    /// says why).
    /// - Parameters:
    ///   - target: path and query, sent exactly as given (`--path-as-is`).
    ///   - headers: extra fields, sent in order (duplicates and any case are kept).
    ///   - body: request body (`--data-binary`), or nil for none.
    ///   - chunked: send the body with `Transfer-Encoding: chunked` instead of Content-Length.
    ///   - source: the local address to connect from (`--interface`, e.g. `127.0.0.2`), or nil.
    static func request(port: UInt16, method: String, target: String, headers: [(String, String)] = [],
                        body: [UInt8]? = nil, chunked: Bool = false, source: String? = nil,
                        transport: ClientTransport = .http1) throws -> HTTPReply {
        try ChildProcess.require("curl")
        let dir = try E2EPaths.temporaryDirectory("curl")
        defer { try? FileManager.default.removeItem(at: dir) }
        let headerFile = dir.appendingPathComponent("headers").path
        let bodyFile = dir.appendingPathComponent("body").path
        var args = ["-s", "-S", "--path-as-is", "--max-time", "20", "-X", method,
                    "-D", headerFile, "-o", bodyFile, "-H", "Expect:"] + transport.curlArguments
        if let source { args += ["--interface", source] }
        for (name, value) in headers { args += ["-H", "\(name): \(value)"] }
        if let body {
            let requestBody = dir.appendingPathComponent("request").path
            _ = FileManager.default.createFile(atPath: requestBody, contents: Data(body))
            args += ["--data-binary", "@\(requestBody)"]
            if chunked { args += ["-H", "Transfer-Encoding: chunked"] }
        }
        args.append("\(transport.scheme)://127.0.0.1:\(port)\(target)")
        let result = try ChildProcess.run("curl", args)
        let head = (try? Data(contentsOf: URL(fileURLWithPath: headerFile))).map { Array($0) } ?? []
        let payload = (try? Data(contentsOf: URL(fileURLWithPath: bodyFile))).map { Array($0) } ?? []
        if transport.isHTTP2 && !head.isEmpty {
            XCTAssertTrue(head.starts(with: Array("HTTP/2 ".utf8)), "answered over HTTP/2: \(String(decoding: head, as: UTF8.self))")
        }
        // The header file holds every header block (interim responses first): use the last one.
        var reply = HTTPReply.parseAll(head).last(where: { $0.status >= 200 })
            ?? HTTPReply(status: 0, headers: [("X-Curl-Output", result.output)], body: [])
        reply.body = payload
        return reply
    }

    /// GET `url` (any host), returns status and body text.
    static func get(_ url: String) throws -> (status: Int, text: String) {
        let result = try ChildProcess.run("curl", ["-s", "--max-time", "10", "-w", "\n%{http_code}", url])
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        let status = lines.last.flatMap { Int($0) } ?? 0
        return (status, lines.dropLast().joined(separator: "\n"))
    }
}

/// Tests/GatewayHTTPTests/Fixtures/rawclient.py: exact bytes on one connection.
enum RawClient {
    enum Step {
        case send(String)
        case sleep(Int)
    }

    /// Everything received and whether the server closed the connection.
    static func run(port: UInt16, timeout: Double = 5, _ steps: [Step]) throws -> (replies: [HTTPReply], closed: Bool, raw: String) {
        let json: [[String: Any]] = steps.map {
            switch $0 {
            case .send(let text): return ["send": Data(text.utf8).base64EncodedString()]
            case .sleep(let ms): return ["sleep": ms]
            }
        }
        let input = try JSONSerialization.data(withJSONObject: json)
        let result = try ChildProcess.run("python3", [E2EPaths.rawClientScript, "--port", String(port), "--timeout", String(timeout)],
                                          stdin: input)
        guard let object = try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any],
              let b64 = object["response"] as? String, let data = Data(base64Encoded: b64) else {
            throw ChildProcessError.notReady("rawclient.py output: \(result.output)")
        }
        return (HTTPReply.parseAll(Array(data)), object["closed"] as? Bool ?? false, String(decoding: data, as: UTF8.self))
    }
}

/// Tests/GatewayTests/Fixtures/race.py: complete requests released on several connections at once.
enum RaceClient {
    /// Sends each raw request on its own connection, the last bytes together; returns one reply per
    /// request (status 0 when a connection got none).
    static func run(port: UInt16, requests: [[UInt8]], tlsCA: String? = nil) throws -> [HTTPReply] {
        let input = try JSONSerialization.data(withJSONObject: ["requests": requests.map { Data($0).base64EncodedString() }])
        let result = try ChildProcess.run("python3", [E2EPaths.raceScript, "--port", String(port)]
                                          + (tlsCA.map { ["--tls", $0] } ?? []), stdin: input)
        guard let object = try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any],
              let responses = object["responses"] as? [String] else {
            throw ChildProcessError.notReady("race.py output: \(result.output)")
        }
        return responses.map { b64 in
            HTTPReply.parseAll(Data(base64Encoded: b64).map { Array($0) } ?? []).first
                ?? HTTPReply(status: 0, headers: [], body: [])
        }
    }

    /// The bytes of one HTTP/1.1 request with `Content-Length` and `Connection: close`.
    static func rawRequest(method: String, target: String, headers: [(String, String)], body: [UInt8]) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}
