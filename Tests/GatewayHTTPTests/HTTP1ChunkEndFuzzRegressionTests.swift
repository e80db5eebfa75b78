import XCTest
@testable import GatewayHTTP

/// Regression found by `attest-fuzz http-request` (Fuzz/README.md): after chunk data, a line that is
/// not CRLF was reported as `bare_line_ending` or `bad_chunk` depending on where the TCP segment
/// boundary fell (the decoder classified by the LF's offset within the current piece, not by the
/// line). The answer to the same bytes must not depend on how they are split.
final class HTTP1ChunkEndFuzzRegressionTests: XCTestCase {
    /// The fuzzer's input (options and split-seed bytes removed): chunk data `a` followed by
    /// `05 0A` instead of CRLF, then garbage and a second request.
    static let fuzzInput: [UInt8] = Array("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:  chunked\r\n\r\n1\r\na".utf8)
        + [0x05, 0x0A, 0x30, 0x00, 0x05]
        + Array("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n".utf8)

    func testFuzzInputGivesOneAnswerForEverySplit() {
        let whole = ParserHarness.parse(Self.fuzzInput)
        XCTAssertEqual(whole.error, .badChunk)
        for size in 1...Self.fuzzInput.count {
            XCTAssertEqual(ParserHarness.parse(Self.fuzzInput, pieceSize: size), whole, "piece size \(size)")
        }
    }

    func testWrongBytesAfterChunkDataAreBadChunkWhateverTheSplit() {
        let head = Array("POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab".utf8)
        for tail: [UInt8] in [[0x05, 0x0A], [0x58, 0x0A], [0x0D, 0x0D, 0x0A]] {
            for size in 1...(head.count + tail.count) {
                XCTAssertEqual(ParserHarness.parse(head + tail, pieceSize: size).error, .badChunk, "tail \(tail) piece size \(size)")
            }
        }
        // A bare LF (nothing before it) stays `bare_line_ending`, however split.
        for size in 1...(head.count + 1) {
            XCTAssertEqual(ParserHarness.parse(head + [0x0A], pieceSize: size).error, .bareLineEnding, "piece size \(size)")
        }
        // And the valid CRLF is accepted.
        XCTAssertNil(ParserHarness.parse(head + Array("\r\n0\r\n\r\n".utf8), pieceSize: 1).error)
    }
}
