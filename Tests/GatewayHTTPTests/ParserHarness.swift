import GatewayRules
import XCTest
@testable import GatewayHTTP

/// What a parser produced for one request, independent of how the input was split.
struct ParsedRequest: Equatable {
    var method: String
    var target: String
    var headers: [String]
    var body: [UInt8]
    var trailers: [String]
    var framing: HTTPBodyFraming
    var keepAlive: Bool
}

/// Everything the parser produced for an input, fed in pieces of `pieceSize` bytes (0 = whole).
struct ParseOutcome: Equatable {
    var requests: [ParsedRequest] = []
    var error: HTTPError?
    /// Bytes of an unfinished request (not an error).
    var incomplete = false
}

enum ParserHarness {
    static func parse(_ input: [UInt8], pieceSize: Int = 0, bodyLimit: Int = .max,
                      limits: HTTP1ParserLimits = HTTP1ParserLimits(),
                      policy: RequestTargetPolicy = RequestTargetPolicy()) -> ParseOutcome {
        var parser = HTTP1RequestParser(limits: limits, targetPolicy: policy)
        var outcome = ParseOutcome()
        var current: ParsedRequest?
        let size = pieceSize == 0 ? max(1, input.count) : pieceSize
        var start = 0
        repeat {
            let piece = Array(input[start..<min(input.count, start + size)])
            start += size
            var offset = 0
            feeding: while true {
                let step = piece.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                let base = offset
                offset += step.consumed
                switch step.event {
                case .needMoreData:
                    break feeding
                case .head(let head):
                    parser.setBodyLimit(bodyLimit)
                    current = ParsedRequest(method: head.method.description, target: head.targetString,
                                            headers: head.headers.map { "\($0.name): \($0.value)" },
                                            body: [], trailers: [], framing: head.framing, keepAlive: head.keepAlive)
                case .body(let r):
                    current?.body.append(contentsOf: piece[(base + r.lowerBound)..<(base + r.upperBound)])
                case .end(let trailers):
                    current?.trailers = trailers.map { "\($0.name): \($0.value)" }
                    if let c = current { outcome.requests.append(c) }
                    current = nil
                case .error(let e):
                    outcome.error = e
                    return outcome
                }
            }
        } while start < input.count
        outcome.incomplete = current != nil || !parser.isIdle
        return outcome
    }

    /// Parses `text` whole, byte by byte and in 7-byte pieces; asserts the three agree; returns the outcome.
    static func parseAllWays(_ text: String, bodyLimit: Int = .max, limits: HTTP1ParserLimits = HTTP1ParserLimits(),
                             policy: RequestTargetPolicy = RequestTargetPolicy(),
                             file: StaticString = #filePath, line: UInt = #line) -> ParseOutcome {
        let bytes = Array(text.utf8)
        let whole = parse(bytes, bodyLimit: bodyLimit, limits: limits, policy: policy)
        let byByte = parse(bytes, pieceSize: 1, bodyLimit: bodyLimit, limits: limits, policy: policy)
        let bySeven = parse(bytes, pieceSize: 7, bodyLimit: bodyLimit, limits: limits, policy: policy)
        XCTAssertEqual(whole, byByte, "byte-by-byte feed differs", file: file, line: line)
        XCTAssertEqual(whole, bySeven, "7-byte feed differs", file: file, line: line)
        return whole
    }

    /// The field line `X-Name: some value` with a bare CR at each position (name, colon, value, end):
    /// (the position, the line without its line ending).
    static var fieldLinesWithABareCR: [(position: Int, line: String)] {
        let field = Array("X-Name: some value".utf8)
        return (0...field.count).map { position in
            var line = field
            line.insert(0x0D, at: position)
            return (position, String(decoding: line, as: UTF8.self))
        }
    }
}
