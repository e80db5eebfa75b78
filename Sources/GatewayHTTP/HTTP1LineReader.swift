// CRLF-terminated line scanning shared by the HTTP/1.1 parsers (RFC 9112 section 2.2).

import GatewayIO

/// Finds CRLF-terminated lines in input that may arrive in arbitrary pieces.
///
/// A line that ends inside the current input is handed out in place (no copy); only a line split
/// across inputs is accumulated in `partial`. The limit counts the line's bytes before the LF.
/// Strictness (RFC 9112 section 2.2, request smuggling guard): `content(of:)` refuses a line not
/// ending in CR (bare LF) and a CR anywhere else in the line (bare CR).
struct HTTP1LineReader: Sendable {
    var partial: [UInt8] = []

    enum Scan: Equatable {
        /// No LF yet: every input byte was taken into `partial`.
        case incomplete
        /// The line would exceed the limit.
        case tooLong
        /// A line ends at `end - 1` (the LF); `end` input bytes are consumed.
        case complete(end: Int)
    }

    /// Looks for the end of the current line in `input`.
    mutating func scan(_ input: UnsafeRawBufferPointer, limit: Int) -> Scan {
        if let lf = HTTP1Syntax.indexOfLF(input, from: 0) {
            if partial.count + lf > limit { return .tooLong }
            if !partial.isEmpty { partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[0..<lf])) }
            return .complete(end: lf + 1)
        }
        if partial.count + input.count > limit { return .tooLong }
        partial.append(contentsOf: input)
        return .incomplete
    }

    /// Calls `body` with the bytes of the completed line (without LF, with its CR), then forgets it.
    mutating func withLine<R>(_ input: UnsafeRawBufferPointer, end: Int,
                              _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if partial.isEmpty {
            return body(UnsafeRawBufferPointer(rebasing: input[0..<(end - 1)]))
        }
        let r = partial.withUnsafeBytes(body)
        partial.removeAll(keepingCapacity: true)
        return r
    }

    /// The line content without its final CR.
    /// - Returns: nil when the line does not end in CR (bare LF) or holds a CR elsewhere (bare CR).
    @inline(__always)
    static func content(of line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let content = fieldLineContent(of: line), !holdsCR(content) else { return nil }
        return content
    }

    /// The content of a field line without its final CR, for `appendField`, which refuses any other
    /// CR by itself (a CR is neither a `tchar` of the name nor allowed in a value, and `trimOWS`
    /// strips only SP and HTAB) and then names the refusal `.bareLineEnding`: the scan of
    /// `content(of:)` for a bare CR is not paid per field line.
    /// - Returns: nil when the line does not end in CR (bare LF).
    @inline(__always)
    static func fieldLineContent(of line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let last = line.last, last == HTTP1Syntax.cr else { return nil }
        return UnsafeRawBufferPointer(rebasing: line[0..<(line.count - 1)])
    }

    /// Whether `bytes` hold a CR.
    private static func holdsCR(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
        return memchr(base, Int32(HTTP1Syntax.cr), bytes.count) != nil
    }

    /// Parses a field line (RFC 9112 section 5) and appends it to `fields`.
    /// - Returns: nil on success, or `.bareLineEnding` (a CR in the line, as `content(of:)` says),
    ///   `.obsoleteLineFolding` (leading whitespace) / `.badHeader` (name not a token, whitespace
    ///   before the colon, no colon, control bytes in the value).
    @inline(__always)
    static func appendField(_ content: UnsafeRawBufferPointer, to fields: inout HTTPHeaders) -> HTTPError? {
        guard let error = appendCheckedField(content, to: &fields) else { return nil }
        return holdsCR(content) ? .bareLineEnding : error
    }

    @inline(__always)
    private static func appendCheckedField(_ content: UnsafeRawBufferPointer, to fields: inout HTTPHeaders) -> HTTPError? {
        guard let first = content.first else { return .badHeader }
        if first == HTTP1Syntax.sp || first == HTTP1Syntax.htab { return .obsoleteLineFolding }
        let colon = HTTP1Syntax.tokenLength(content)
        guard colon > 0, colon < content.count, content[colon] == HTTP1Syntax.colon else { return .badHeader }
        let valueRange = HTTP1Syntax.trimOWS(content, (colon + 1)..<content.count)
        guard HTTP1Syntax.isFieldValue(UnsafeRawBufferPointer(rebasing: content[valueRange])) else { return .badHeader }
        fields.appendUnchecked(line: content, nameLength: colon, value: valueRange)
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
