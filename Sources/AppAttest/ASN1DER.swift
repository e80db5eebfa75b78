/// Re-encodes a parsed ASN.1 element with definite lengths (as needed to compute the DER of CMS
/// signed attributes when a sender used indefinite lengths). Children keep their order.
enum ASN1DER {
    /// The element re-encoded with definite minimal lengths; the identifier octet is replaced by
    /// `tag` when given (single-byte identifiers only).
    static func reencode(_ node: ASN1Node, asTag tag: UInt8? = nil) -> [UInt8] {
        let identifier: [UInt8] = tag.map { [$0] } ?? Array(node.source[node.start..<(headerEnd(node))])
        let content: [UInt8] = node.isConstructed ? node.children.flatMap { reencode($0) } : Array(node.content)
        return identifier + length(content.count) + content
    }

    /// End of the identifier octets.
    private static func headerEnd(_ node: ASN1Node) -> Int {
        var index = node.start + 1
        if node.source[node.start] & 0x1F == 0x1F {
            while index < node.source.count, node.source[index] & 0x80 != 0 { index += 1 }
            index += 1
        }
        return index
    }

    private static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var value = count
        while value > 0 { bytes.insert(UInt8(value & 0xFF), at: 0); value >>= 8 }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}
