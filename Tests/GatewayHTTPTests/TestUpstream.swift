import Foundation
import GatewayTestSupport
import XCTest

/// The Python test upstream (Fixtures/upstream.py) as a real child process.
final class TestUpstream {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    let process: ChildProcess
    /// TCP port, or nil for a Unix socket upstream.
    let port: UInt16?
    /// Unix socket path, or nil.
    let unixPath: String?
    /// Whether it serves HTTPS.
    let isTLS: Bool

    /// Starts on a free TCP port (or on `unixPath`) and waits for it to listen; with `tls`, it
    /// serves HTTPS with that chain and key.
    init(unixPath: String? = nil, tls: (chainPath: String, keyPath: String)? = nil) throws {
        try ChildProcess.require("python3")
        let script = TestUpstream.fixtures.appendingPathComponent("upstream.py").path
        var args = unixPath.map { [script, "--unix", $0] } ?? [script, "--port", "0"]
        if let tls { args += ["--tls-chain", tls.chainPath, "--tls-key", tls.keyPath] }
        isTLS = tls != nil
        process = try ChildProcess("python3", args)
        self.unixPath = unixPath
        let deadline = Date().addingTimeInterval(15)
        var found: UInt16?
        var ready = false
        while Date() < deadline {
            if let line = process.output.split(separator: "\n").first(where: { $0.hasPrefix("READY") }) {
                ready = true
                found = UInt16(line.dropFirst(6))
                break
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        guard ready else { throw ChildProcessError.notReady(process.output) }
        port = found
    }

    /// `{"connections": n, "requests": m}` as seen by the upstream.
    func stats() throws -> (connections: Int, requests: Int) {
        guard let port else { return (0, 0) }
        let r = try ChildProcess.run("curl", ["-s", "-k", "--max-time", "5", "\(isTLS ? "https" : "http")://127.0.0.1:\(port)/__stats"])
        let json = try JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [String: Int] ?? [:]
        return (json["connections"] ?? -1, json["requests"] ?? -1)
    }

    deinit { process.stop(signal: SIGKILL, grace: 1) }
}

/// One HTTP/1.1 response as a test client sees it (parsed independently of the code under test).
struct RawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    var chunked: Bool

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
    func headers(_ name: String) -> [String] { headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
    var bodyText: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }

    /// Splits a byte stream into responses. `headRequests` marks which responses answer HEAD (no body).
    static func parseAll(_ bytes: [UInt8], headRequests: Set<Int> = []) -> [RawResponse] {
        var out: [RawResponse] = []
        var i = 0
        func line() -> String? {
            guard let end = (i..<max(i, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }) else { return nil }
            defer { i = end + 2 }
            return String(decoding: bytes[i..<end], as: UTF8.self)
        }
        while i < bytes.count {
            guard let statusLine = line() else { break }
            let parts = statusLine.split(separator: " ", maxSplits: 2)
            guard parts.count >= 2, let status = Int(parts[1]) else { break }
            var headers: [(String, String)] = []
            while let l = line(), !l.isEmpty {
                let pair = l.split(separator: ":", maxSplits: 1)
                headers.append((String(pair[0]), pair.count > 1 ? pair[1].trimmingCharacters(in: .whitespaces) : ""))
            }
            var r = RawResponse(status: status, headers: headers, body: [], chunked: false)
            if status < 200 { continue }  // interim
            if headRequests.contains(out.count) || status == 204 || status == 304 {
                out.append(r)
                continue
            }
            if let te = r.header("Transfer-Encoding"), te.lowercased() == "chunked" {
                r.chunked = true
                while let sizeLine = line(), let size = Int(sizeLine.split(separator: ";")[0], radix: 16) {
                    if size == 0 {
                        while let t = line(), !t.isEmpty {}
                        break
                    }
                    r.body += bytes[i..<min(bytes.count, i + size)]
                    i += size + 2
                }
            } else if let cl = r.header("Content-Length").flatMap(Int.init) {
                r.body = Array(bytes[i..<min(bytes.count, i + cl)])
                i += cl
            } else {
                r.body = Array(bytes[i...])
                i = bytes.count
            }
            out.append(r)
        }
        return out
    }
}

/// Runs Fixtures/rawclient.py: exact bytes out, everything back.
enum RawClient {
    enum Step {
        case send(String)
        case sendBytes([UInt8])
        case sleep(Int)
        case shutdown
        /// Waits until what was received holds `marker` `count` times (at most the run's timeout):
        /// e.g. the first answer's status line before the next request, instead of a sleep.
        case await(String, count: Int)

        /// Waits for the `n`th response status line.
        static func awaitResponses(_ n: Int) -> Step { .await("HTTP/1.1 ", count: n) }
    }

    struct Result {
        var bytes: [UInt8]
        var closed: Bool
        var sendError: String?
        var text: String { String(decoding: bytes, as: UTF8.self) }
        func responses(headRequests: Set<Int> = []) -> [RawResponse] { RawResponse.parseAll(bytes, headRequests: headRequests) }
    }

    static func run(port: UInt16? = nil, unixPath: String? = nil, timeout: Double = 5, tlsCA: String? = nil,
                    _ steps: [Step]) throws -> Result {
        let script = TestUpstream.fixtures.appendingPathComponent("rawclient.py").path
        var args = [script, "--timeout", String(timeout)]
        if let port { args += ["--port", String(port)] }
        if let unixPath { args += ["--unix", unixPath] }
        if let tlsCA { args += ["--tls", tlsCA] }
        let json: [[String: Any]] = steps.map {
            switch $0 {
            case .send(let s): return ["send": Data(s.utf8).base64EncodedString()]
            case .sendBytes(let b): return ["send": Data(b).base64EncodedString()]
            case .sleep(let ms): return ["sleep": ms]
            case .shutdown: return ["shutdown": true]
            case .await(let marker, let count): return ["await": Data(marker.utf8).base64EncodedString(), "count": count]
            }
        }
        let input = try JSONSerialization.data(withJSONObject: json)
        let r = try ChildProcess.run("python3", args, stdin: input)
        guard let obj = try? JSONSerialization.jsonObject(with: Data(r.output.utf8)) as? [String: Any],
              let b64 = obj["response"] as? String, let data = Data(base64Encoded: b64) else {
            throw ChildProcessError.notReady("rawclient output: \(r.output)")
        }
        return Result(bytes: Array(data), closed: obj["closed"] as? Bool ?? false, sendError: obj["sendError"] as? String)
    }
}

/// curl, returning (exit status, stdout+stderr).
enum Curl {
    static func run(_ args: [String]) throws -> (status: Int32, output: String) {
        try ChildProcess.require("curl")
        return try ChildProcess.run("curl", ["-s", "--max-time", "20"] + args)
    }
}
