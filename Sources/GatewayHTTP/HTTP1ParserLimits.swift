// Size limits of the HTTP/1.1 parsers.

import GatewayIO

/// Size limits applied while parsing an HTTP/1.1 message (requests downstream, responses upstream).
///
/// Every limit is in bytes or in fields. Exceeding one is an error, never a truncation:
/// request line -> 414 `request_line_too_long`, header section -> 431 `header_too_large`,
/// field count -> 431 `too_many_headers`, chunk line -> 400 `bad_chunk`, trailer section -> 431.
public struct HTTP1ParserLimits: Sendable, Hashable {
    /// Longest request line or status line, CRLF excluded (default 8 KiB).
    public var maxStartLineBytes: Int
    /// Largest header section: start line, all field lines and their CRLFs, final CRLF (default 32 KiB).
    public var maxHeaderBytes: Int
    /// Most field lines in the header section (default 100).
    public var maxHeaderCount: Int
    /// Longest chunk-size line including chunk extensions (RFC 9112 section 7.1.1; default 1 KiB).
    public var maxChunkLineBytes: Int
    /// Largest trailer section (RFC 9112 section 7.1.2; default 8 KiB); at most `maxHeaderCount` fields.
    public var maxTrailerBytes: Int

    /// Limits with the given values (defaults suit a public-facing reverse proxy).
    public init(maxStartLineBytes: Int = 8192, maxHeaderBytes: Int = 32768, maxHeaderCount: Int = 100,
                maxChunkLineBytes: Int = 1024, maxTrailerBytes: Int = 8192) {
        self.maxStartLineBytes = maxStartLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
    }

    /// The limits with every value kept within 0...1 GiB (field offsets are stored as 32-bit integers).
    var clamped: HTTP1ParserLimits {
        func c(_ v: Int) -> Int { min(max(0, v), 1 << 30) }
        return HTTP1ParserLimits(maxStartLineBytes: c(maxStartLineBytes), maxHeaderBytes: c(maxHeaderBytes),
                                 maxHeaderCount: c(maxHeaderCount), maxChunkLineBytes: c(maxChunkLineBytes),
                                 maxTrailerBytes: c(maxTrailerBytes))
    }
}
