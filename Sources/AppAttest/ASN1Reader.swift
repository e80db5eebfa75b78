/// Strict ASN.1 reader for DER and BER (ITU-T X.690), used for the App Attest nonce extension (DER)
/// and receipts (CMS, BER with indefinite lengths and segmented OCTET STRINGs).
///
/// Both modes: exactly one element spanning the whole input (no trailing bytes); lengths within the
/// enclosing element; nesting at most `maxDepth`; tag numbers in minimal high-tag form.
/// DER additionally: definite lengths only, minimal length octets (short form below 128, no leading
/// zero octet in long form), primitive OCTET/BIT STRINGs. BER additionally allows indefinite lengths
/// on constructed elements (terminated by 00 00) and long-form lengths up to 4 octets.
public struct ASN1Reader: Sendable {
    /// Encoding rules to enforce.
    public enum Rules: Sendable {
        /// Distinguished Encoding Rules (X.690 section 10).
        case der
        /// Basic Encoding Rules (X.690 section 8).
        case ber
    }

    /// The rules in force.
    public let rules: Rules
    /// Maximum nesting depth.
    public let maxDepth: Int

    /// A reader for `rules` with a nesting limit (default 32).
    public init(rules: Rules, maxDepth: Int = 32) {
        self.rules = rules
        self.maxDepth = maxDepth
    }

    /// Parses one element spanning all of `bytes`.
    public func parse(_ bytes: [UInt8]) throws -> ASN1Node {
        var index = 0
        let node = try element(bytes, &index, limit: bytes.count, depth: 1)
        guard index == bytes.count else { throw ASN1Error("\(bytes.count - index) trailing bytes", offset: index) }
        return node
    }

    private func element(_ bytes: [UInt8], _ index: inout Int, limit: Int, depth: Int) throws -> ASN1Node {
        guard depth <= maxDepth else { throw ASN1Error("nesting deeper than \(maxDepth)", offset: index) }
        let start = index
        guard index < limit else { throw ASN1Error("truncated identifier", offset: index) }
        let identifier = bytes[index]
        index += 1
        let tagClass = identifier >> 6
        let constructed = identifier & 0x20 != 0
        var tagNumber = UInt64(identifier & 0x1F)
        if tagNumber == 0x1F {
            tagNumber = 0
            var first = true
            while true {
                guard index < limit else { throw ASN1Error("truncated tag", offset: start) }
                let b = bytes[index]
                index += 1
                if first && b == 0x80 { throw ASN1Error("non-minimal tag number", offset: start) }
                first = false
                guard tagNumber < (1 << 56) else { throw ASN1Error("tag number too large", offset: start) }
                tagNumber = tagNumber << 7 | UInt64(b & 0x7F)
                if b & 0x80 == 0 { break }
            }
            if tagNumber < 31 { throw ASN1Error("high-tag form for a low tag number", offset: start) }
        }
        guard index < limit else { throw ASN1Error("truncated length", offset: start) }
        let lengthByte = bytes[index]
        index += 1
        var length: Int? = nil
        if lengthByte < 0x80 {
            length = Int(lengthByte)
        } else if lengthByte == 0x80 {
            guard rules == .ber else { throw ASN1Error("indefinite length is not DER", offset: start) }
            guard constructed else { throw ASN1Error("indefinite length on a primitive element", offset: start) }
        } else {
            let count = Int(lengthByte & 0x7F)
            guard count <= 4 else { throw ASN1Error("length of \(count) octets", offset: start) }
            guard limit - index >= count else { throw ASN1Error("truncated length", offset: start) }
            var value = 0
            for i in 0..<count { value = value << 8 | Int(bytes[index + i]) }
            if rules == .der {
                guard bytes[index] != 0, value >= 0x80 else { throw ASN1Error("non-minimal DER length", offset: start) }
            }
            index += count
            length = value
        }
        if rules == .der, tagClass == 0, constructed, tagNumber == 3 || tagNumber == 4 {
            throw ASN1Error("constructed string is not DER", offset: start)
        }
        let contentStart = index
        var children: [ASN1Node] = []
        if let length {
            guard length <= limit - index else { throw ASN1Error("length \(length) exceeds the enclosing element", offset: start) }
            let contentEnd = index + length
            if constructed {
                while index < contentEnd {
                    children.append(try element(bytes, &index, limit: contentEnd, depth: depth + 1))
                }
            } else {
                index = contentEnd
            }
            return ASN1Node(tagClass: tagClass, isConstructed: constructed, tagNumber: tagNumber, start: start,
                            contentStart: contentStart, contentEnd: contentEnd, end: contentEnd,
                            isIndefinite: false, children: children, source: bytes)
        }
        // Indefinite length: children until the end-of-contents octets 00 00.
        while true {
            guard limit - index >= 2 else { throw ASN1Error("missing end-of-contents", offset: start) }
            if bytes[index] == 0 {
                guard bytes[index + 1] == 0 else { throw ASN1Error("malformed end-of-contents", offset: index) }
                let contentEnd = index
                index += 2
                return ASN1Node(tagClass: tagClass, isConstructed: true, tagNumber: tagNumber, start: start,
                                contentStart: contentStart, contentEnd: contentEnd, end: index,
                                isIndefinite: true, children: children, source: bytes)
            }
            children.append(try element(bytes, &index, limit: limit, depth: depth + 1))
        }
    }
}
