import XCTest
@testable import GatewayConfig

/// `http2`: defaults (the header list size follows `limits.max_header_bytes`), bounds with their
/// paths, unknown keys.
final class HTTP2ConfigTests: XCTestCase {
    func testDefaults() {
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal())?.configuration.http2,
                       HTTP2Configuration(maxConcurrentStreams: 100, initialWindowSize: 1 << 20, maxHeaderListSize: 16 << 10))
        XCTAssertEqual(HTTP2Configuration(), HTTP2Configuration(maxConcurrentStreams: 100, initialWindowSize: 1 << 20, maxHeaderListSize: 16 << 10))
        // Without max_header_list_size, the HTTP/1.1 head limit applies to HTTP/2 header blocks too.
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(extra: "limits: {max_header_bytes: 32KiB}"))?.configuration.http2.maxHeaderListSize, 32 << 10)
    }

    func testExplicitValuesAndLimits() {
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(extra: "http2: {max_concurrent_streams: 1000, initial_window_size: 65535, max_header_list_size: 64KiB}"))?
            .configuration.http2, HTTP2Configuration(maxConcurrentStreams: 1000, initialWindowSize: 65535, maxHeaderListSize: 64 << 10))
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(extra: "http2: {max_concurrent_streams: 1, initial_window_size: 2147483647, max_header_list_size: 1KiB}"))?
            .configuration.http2, HTTP2Configuration(maxConcurrentStreams: 1, initialWindowSize: 2_147_483_647, maxHeaderListSize: 1024))
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(extra: "http2: {initial_window_size: 1KiB}"))?.configuration.http2.initialWindowSize, 1024)
    }

    func testBounds() {
        func lines(_ text: String) -> [String] { errorLines(ConfigTestHelpers.minimal(extra: "http2: " + text)) }
        XCTAssertEqual(lines("{max_concurrent_streams: 0, initial_window_size: 2GiB, max_header_list_size: 2MiB}"), [
            "http2.max_concurrent_streams: must be from 1 to 1000, got 0 (line 10, column 33)",
            "http2.initial_window_size: must be from 1KiB to 2147483647, got 2GiB (line 10, column 57)",
            "http2.max_header_list_size: must be from 1KiB to 1MiB, got 2MiB (line 10, column 85)",
        ])
        XCTAssertEqual(lines("{max_concurrent_streams: 1001, initial_window_size: 1023, max_header_list_size: 512}"), [
            "http2.max_concurrent_streams: must be from 1 to 1000, got 1001 (line 10, column 33)",
            "http2.initial_window_size: must be from 1KiB to 2147483647, got 1023 (line 10, column 60)",
            "http2.max_header_list_size: must be from 1KiB to 1MiB, got 512 (line 10, column 88)",
        ])
        XCTAssertEqual(lines("{max_concurrent_streams: '100', initial_window_size: 1MB}"), [
            "http2.max_concurrent_streams: expected an integer, got the quoted string \"100\": remove the quotes (line 10, column 33)",
            "http2.initial_window_size: ambiguous unit \"MB\" in \"1MB\": write 1MiB or 1000000 (plain bytes) (line 10, column 61)",
        ])
    }

    func testUnknownKeysAndShape() {
        func lines(_ text: String) -> [String] { errorLines(ConfigTestHelpers.minimal(extra: "http2: " + text)) }
        XCTAssertEqual(lines("{max-concurrent-streams: 10, enabled: false}"), [
            "http2.max-concurrent-streams: unknown key; did you mean max_concurrent_streams? (line 10, column 9)",
            "http2.enabled: unknown key (known keys: max_concurrent_streams, initial_window_size, max_header_list_size) (line 10, column 37)",
        ])
        XCTAssertEqual(lines("true"), ["http2: expected a mapping with keys such as max_concurrent_streams, initial_window_size, max_header_list_size, got \"true\" (line 10, column 8)"])
        // A key of http2 written under limits says where it belongs.
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(extra: "limits: {max_concurrent_streams: 10}")),
                       ["limits.max_concurrent_streams: unknown key here; max_concurrent_streams is a key of http2 (line 10, column 10)"])
    }
}
