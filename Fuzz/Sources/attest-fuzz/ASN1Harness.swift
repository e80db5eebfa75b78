import AppAttest

/// `der`: `ASN1Reader` (DER and BER) and `NonceExtension`. Input: byte 0 bit 0 = rules (0 DER,
/// 1 BER), then the encoding.
///
/// Invariants on acceptance: the root spans the input; every node's offsets nest (children are
/// contiguous and fill their parent; an indefinite element ends with 00 00); identifier octets are
/// the minimal encoding of class/constructed/tag number (re-encoded here independently); in DER
/// every length is definite and minimal (header re-encoded independently) and strings are
/// primitive; `smallInteger()` and `objectIdentifier()` results re-encode to exactly the content
/// octets (so non-minimal forms are never accepted); `octets()` never traps.
/// `NonceExtension.nonce` accepts exactly `30 24 A1 22 04 20` + 32 bytes, and always accepts that.
enum ASN1Harness {
    static let harness = Harness(name: "der", summary: "ASN1Reader DER/BER, node accessors, NonceExtension") { run($0) }

    static func run(_ input: [UInt8]) {
        var reader = FuzzInput(input)
        let rules: ASN1Reader.Rules = reader.u8() & 1 == 0 ? .der : .ber
        let bytes = reader.rest()

        // The nonce extension (strict DER, fixed shape).
        let nonceShape: [UInt8] = [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20]
        let isNonceShape = bytes.count == 38 && Array(bytes[0..<6]) == nonceShape
        if let nonce = try? NonceExtension.nonce(fromExtensionValue: bytes) {
            Invariant.check(isNonceShape && nonce == Array(bytes[6...]), "der", "nonce extension accepted in another shape")
        } else {
            Invariant.check(!isNonceShape, "der", "the canonical nonce extension was refused")
        }

        let root: ASN1Node
        do { root = try ASN1Reader(rules: rules).parse(bytes) } catch is ASN1Error { return } catch {
            Invariant.fail("der", "threw \(type(of: error)), not ASN1Error")
        }
        Invariant.check(root.start == 0 && root.end == bytes.count, "der", "root does not span the input")
        check(root, bytes, rules: rules, lower: 0, upper: bytes.count)
    }

    static func check(_ node: ASN1Node, _ bytes: [UInt8], rules: ASN1Reader.Rules, lower: Int, upper: Int) {
        let h = "der"
        Invariant.check(lower <= node.start && node.start < node.contentStart && node.contentStart <= node.contentEnd
                        && node.contentEnd <= node.end && node.end <= upper, h, "node offsets do not nest")
        // Identifier octets, re-encoded independently.
        let identifier = identifierOctets(tagClass: node.tagClass, constructed: node.isConstructed, number: node.tagNumber)
        Invariant.check(node.start + identifier.count < node.contentStart
                        && Array(bytes[node.start..<(node.start + identifier.count)]) == identifier, h, "identifier octets are not minimal")
        let lengthOctets = Array(bytes[(node.start + identifier.count)..<node.contentStart])
        if node.isIndefinite {
            Invariant.check(rules == .ber && node.isConstructed, h, "indefinite length outside BER constructed")
            Invariant.check(lengthOctets == [0x80] && node.end - node.contentEnd == 2 && bytes[node.contentEnd] == 0 && bytes[node.contentEnd + 1] == 0,
                            h, "indefinite element not closed by 00 00")
        } else {
            Invariant.check(node.end == node.contentEnd, h, "definite element with trailing octets")
            if rules == .der {
                Invariant.check(lengthOctets == minimalLength(node.contentEnd - node.contentStart), h, "DER length not minimal")
                if node.tagClass == 0 && (node.tagNumber == 3 || node.tagNumber == 4) {
                    Invariant.check(!node.isConstructed, h, "constructed string in DER")
                }
            } else {
                Invariant.check(decodedLength(lengthOctets) == node.contentEnd - node.contentStart, h, "BER length octets do not give the content length")
            }
        }
        if node.isConstructed {
            var cursor = node.contentStart
            for child in node.children {
                Invariant.check(child.start == cursor, h, "children are not contiguous")
                check(child, bytes, rules: rules, lower: node.contentStart, upper: node.contentEnd)
                cursor = child.end
            }
            Invariant.check(cursor == node.contentEnd, h, "children do not fill their parent")
        } else {
            Invariant.check(node.children.isEmpty, h, "primitive with children")
        }
        // Accessors: never trap; results re-encode to the content exactly.
        if node.isUniversal(ASN1Node.Universal.octetString) { _ = try? node.octets() }
        if let value = try? node.smallInteger() {
            Invariant.check(value >= 0 && minimalInteger(UInt64(value)) == Array(node.content), h, "INTEGER \(value) accepted from a non-minimal encoding")
        }
        if let text = try? node.objectIdentifier() {
            Invariant.check(oidContent(text) == Array(node.content), h, "OID \(text) does not re-encode to its content")
        }
    }

    static func identifierOctets(tagClass: UInt8, constructed: Bool, number: UInt64) -> [UInt8] {
        let first = tagClass << 6 | (constructed ? 0x20 : 0)
        if number < 31 { return [first | UInt8(number)] }
        var groups: [UInt8] = []
        var n = number
        repeat { groups.insert(UInt8(n & 0x7F), at: 0); n >>= 7 } while n > 0
        for k in 0..<(groups.count - 1) { groups[k] |= 0x80 }
        return [first | 0x1F] + groups
    }

    static func minimalLength(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var octets: [UInt8] = []
        var n = count
        while n > 0 { octets.insert(UInt8(n & 0xFF), at: 0); n >>= 8 }
        return [0x80 | UInt8(octets.count)] + octets
    }

    static func decodedLength(_ octets: [UInt8]) -> Int {
        guard let first = octets.first else { return -1 }
        if first < 0x80 { return octets.count == 1 ? Int(first) : -1 }
        guard Int(first & 0x7F) == octets.count - 1 else { return -1 }
        return octets.dropFirst().reduce(0) { $0 << 8 | Int($1) }
    }

    static func minimalInteger(_ value: UInt64) -> [UInt8] {
        var octets: [UInt8] = []
        var n = value
        repeat { octets.insert(UInt8(n & 0xFF), at: 0); n >>= 8 } while n > 0
        if octets[0] & 0x80 != 0 { octets.insert(0, at: 0) }
        return octets
    }

    static func oidContent(_ dotted: String) -> [UInt8]? {
        let arcs = dotted.split(separator: ".").map { UInt64($0) }
        guard arcs.count >= 2, arcs.allSatisfy({ $0 != nil }) else { return nil }
        let values = arcs.map { $0! }
        guard values[0] <= 2, values[0] == 2 || values[1] < 40 else { return nil }
        let (head, overflow) = (values[0] * 40).addingReportingOverflow(values[1])
        guard !overflow else { return nil }
        var out: [UInt8] = []
        for arc in [head] + values.dropFirst(2) {
            var groups: [UInt8] = []
            var n = arc
            repeat { groups.insert(UInt8(n & 0x7F), at: 0); n >>= 7 } while n > 0
            for k in 0..<(groups.count - 1) { groups[k] |= 0x80 }
            out += groups
        }
        return out
    }
}
