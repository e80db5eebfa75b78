/// One parsed ASN.1 TLV (X.690) with its children when constructed.
///
/// Offsets index into `source`, the buffer it was parsed from (shared, not copied).
public struct ASN1Node: Sendable {
    /// Tag class: 0 universal, 1 application, 2 context-specific, 3 private.
    public let tagClass: UInt8
    /// Whether the encoding is constructed.
    public let isConstructed: Bool
    /// Tag number (universal 2 INTEGER, 4 OCTET STRING, 6 OID, 16 SEQUENCE, 17 SET, ...).
    public let tagNumber: UInt64
    /// Offset of the identifier octet.
    public let start: Int
    /// Offset of the first content octet.
    public let contentStart: Int
    /// Offset just after the last content octet (before the end-of-contents octets, if indefinite).
    public let contentEnd: Int
    /// Offset just after the whole element (after end-of-contents, if indefinite).
    public let end: Int
    /// Whether the length was indefinite (BER only).
    public let isIndefinite: Bool
    /// Children of a constructed element, in order (empty for primitives).
    public let children: [ASN1Node]
    /// The buffer this node was parsed from.
    public let source: [UInt8]

    /// Universal tag numbers used here.
    public enum Universal {
        /// BOOLEAN, INTEGER, BIT STRING, OCTET STRING (X.680 section 8.6).
        public static let boolean: UInt64 = 1, integer: UInt64 = 2, bitString: UInt64 = 3, octetString: UInt64 = 4
        /// NULL, OBJECT IDENTIFIER, UTF8String.
        public static let null: UInt64 = 5, objectIdentifier: UInt64 = 6, utf8String: UInt64 = 12
        /// SEQUENCE, SET, UTCTime, GeneralizedTime.
        public static let sequence: UInt64 = 16, set: UInt64 = 17, utcTime: UInt64 = 23, generalizedTime: UInt64 = 24
    }

    /// True when the node is universal with tag `number`.
    public func isUniversal(_ number: UInt64) -> Bool { tagClass == 0 && tagNumber == number }
    /// True when the node is context-specific `[number]`.
    public func isContext(_ number: UInt64) -> Bool { tagClass == 2 && tagNumber == number }

    /// The content octets (primitive encoding).
    public var content: ArraySlice<UInt8> { source[contentStart..<contentEnd] }
    /// The whole encoding, header included.
    public var encoded: ArraySlice<UInt8> { source[start..<end] }

    /// The value of an OCTET STRING, reassembling the segments of a constructed (BER) encoding.
    public func octets() throws -> [UInt8] {
        if !isConstructed { return Array(content) }
        var out: [UInt8] = []
        for child in children {
            guard child.isUniversal(Universal.octetString) else {
                throw ASN1Error("segment of a constructed string has tag \(child.tagNumber)", offset: child.start)
            }
            out += try child.octets()
        }
        return out
    }

    /// A non-negative INTEGER that fits in Int64 (minimal encoding required).
    public func smallInteger() throws -> Int64 {
        guard isUniversal(Universal.integer), !isConstructed else { throw ASN1Error("expected INTEGER", offset: start) }
        let bytes = content
        guard let first = bytes.first else { throw ASN1Error("empty INTEGER", offset: start) }
        if bytes.count > 1 {
            let second = bytes[bytes.startIndex + 1]
            if (first == 0 && second & 0x80 == 0) || (first == 0xFF && second & 0x80 != 0) {
                throw ASN1Error("non-minimal INTEGER", offset: start)
            }
        }
        guard first & 0x80 == 0 else { throw ASN1Error("negative INTEGER", offset: start) }
        let magnitude = bytes.drop { $0 == 0 }
        guard magnitude.count <= 8 else { throw ASN1Error("INTEGER too large", offset: start) }
        var value: UInt64 = 0
        for b in magnitude { value = value << 8 | UInt64(b) }
        guard value <= UInt64(Int64.max) else { throw ASN1Error("INTEGER too large", offset: start) }
        return Int64(value)
    }

    /// The dotted text of an OBJECT IDENTIFIER (e.g. "1.2.840.113549.1.7.2").
    public func objectIdentifier() throws -> String {
        guard isUniversal(Universal.objectIdentifier), !isConstructed, !content.isEmpty else {
            throw ASN1Error("expected OBJECT IDENTIFIER", offset: start)
        }
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        var fresh = true
        for b in content {
            if fresh && b == 0x80 { throw ASN1Error("non-minimal OID arc", offset: start) }
            guard value <= (UInt64.max >> 7) else { throw ASN1Error("OID arc too large", offset: start) }
            value = value << 7 | UInt64(b & 0x7F)
            fresh = b & 0x80 == 0
            if fresh { arcs.append(value); value = 0 }
        }
        guard fresh, let first = arcs.first else { throw ASN1Error("truncated OID", offset: start) }
        let head: [UInt64] = first < 40 ? [0, first] : first < 80 ? [1, first - 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }
}
