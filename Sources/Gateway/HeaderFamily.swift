import GatewayConfig
import GatewayHTTP

/// The gateway's own header family, precomputed from `HeadersConfiguration` for byte-level work on
/// every request: the ingress strip (every field whose name starts with the prefix, any case, `_` for
/// `-`, every copy) and the evidence fields read before stripping (DESIGN.md section 5). With a
/// renamed prefix the default family (`App-Attest-`) is stripped too (never read): an upstream not yet
/// switched to the new names must not read a verdict a client wrote, and responses already drop it.
///
/// A final class, immutable: the tables and the enforcer share one instance, and a request reads
/// it through one reference instead of copying the configured names and byte arrays.
final class HeaderFamily: Sendable {
    /// The configured names.
    let configuration: HeadersConfiguration
    private let prefixLower: [UInt8]
    /// The default prefix, lower case, when `headers.prefix` renamed the family (nil otherwise).
    private let defaultPrefixLower: [UInt8]?
    private let keyIdLower: [UInt8]
    private let challengeLower: [UInt8]
    private let assertionLower: [UInt8]
    private let clientDataLower: [UInt8]
    private let signatureLower: [UInt8]
    /// The response-head edit of every forward without a next challenge: drops each upstream field
    /// of `NextChallengeHeaders.responseFamily` (`App-Attest-`) and, when `headers.error` is named
    /// outside it, each copy of that name too, so that no upstream field passes for a gateway
    /// refusal. One closure per family, shared by every request (nothing allocated per request).
    let dropUpstreamCopies: @Sendable (inout HTTPResponseHead) -> Void

    init(_ configuration: HeadersConfiguration) {
        self.configuration = configuration
        prefixLower = HeaderFamily.lower(configuration.prefix)
        let standard = HeaderFamily.lower(HeadersConfiguration().prefix)
        defaultPrefixLower = standard == prefixLower ? nil : standard
        keyIdLower = HeaderFamily.lower(configuration.evidence.keyID)
        challengeLower = HeaderFamily.lower(configuration.evidence.challenge)
        assertionLower = HeaderFamily.lower(configuration.evidence.assertion)
        clientDataLower = HeaderFamily.lower(configuration.evidence.clientData)
        signatureLower = HeaderFamily.lower(configuration.evidence.signature)
        let error = configuration.error
        if HeaderFamily.lower(error).starts(with: HeaderFamily.lower(NextChallengeHeaders.responseFamily)) {
            dropUpstreamCopies = NextChallengeHeaders.dropUpstreamCopies
        } else {
            dropUpstreamCopies = { head in
                NextChallengeHeaders.dropUpstreamCopies(&head)
                head.headers.remove(error)
            }
        }
    }

    /// Removes every field of the family from `headers` and returns the evidence fields it held
    /// (slices of the received bytes: no copy per field).
    func stripAndExtract(_ headers: inout HTTPHeaders) -> Evidence {
        var evidence = Evidence()
        var keyId: ArraySlice<UInt8>?, challenge: ArraySlice<UInt8>?, assertion: ArraySlice<UInt8>?
        var clientData: ArraySlice<UInt8>?, signature: ArraySlice<UInt8>?
        _ = headers.removeAll { field in
            let name = field.nameBytes
            guard name.withUnsafeBytes({ n in prefixLower.withUnsafeBytes { HeaderFamily.hasPrefix(n, $0) } }) else {
                guard let standard = defaultPrefixLower else { return false }
                return name.withUnsafeBytes { n in standard.withUnsafeBytes { HeaderFamily.hasPrefix(n, $0) } }
            }
            // Evidence is read from the exact names only (`App_Attest_Key_Id` is stripped, never read).
            if HeaderFamily.equals(name, keyIdLower) {
                evidence.set(&keyId, field.valueBytes, name: configuration.evidence.keyID)
            } else if HeaderFamily.equals(name, challengeLower) {
                evidence.set(&challenge, field.valueBytes, name: configuration.evidence.challenge)
            } else if HeaderFamily.equals(name, assertionLower) {
                evidence.set(&assertion, field.valueBytes, name: configuration.evidence.assertion)
            } else if HeaderFamily.equals(name, clientDataLower) {
                evidence.set(&clientData, field.valueBytes, name: configuration.evidence.clientData)
            } else if HeaderFamily.equals(name, signatureLower) {
                evidence.set(&signature, field.valueBytes, name: configuration.evidence.signature)
            }
            return true
        }
        evidence.keyId = keyId
        evidence.challenge = challenge
        evidence.assertion = assertion
        evidence.clientData = clientData
        evidence.signature = signature
        return evidence
    }

    /// Removes every field of the family (used where no evidence is read: `off` routes, trailers).
    func strip(_ headers: inout HTTPHeaders) {
        prefixLower.withUnsafeBytes { prefix in
            _ = headers.removeFields(whereName: { HeaderFamily.hasPrefix($0, prefix) })
        }
        defaultPrefixLower?.withUnsafeBytes { standard in
            _ = headers.removeFields(whereName: { HeaderFamily.hasPrefix($0, standard) })
        }
    }

    /// Whether `name` starts with `prefix` (already lower case), ASCII case-insensitively, an `_` in
    /// `name` standing for a `-` of `prefix`: the match of the ingress strips (this family, the
    /// forwarding family). CGI, WSGI, PHP and Rack backends read a field as `HTTP_` + its name upper
    /// cased with `-` turned into `_`, so `App_Attest_Verdict` would reach them as the very
    /// `HTTP_APP_ATTEST_VERDICT` the gateway sets; such spellings are removed like the real ones.
    @inline(__always)
    static func hasPrefix(_ name: UnsafeRawBufferPointer, _ prefix: UnsafeRawBufferPointer) -> Bool {
        guard name.count >= prefix.count else { return false }
        for i in 0..<prefix.count {
            let byte = asciiLower(name[i])
            if byte != prefix[i] && !(byte == 0x5F && prefix[i] == 0x2D) { return false }
        }
        return true
    }

    static func lower(_ text: String) -> [UInt8] { text.utf8.map { asciiLower($0) } }

    @inline(__always)
    static func asciiLower(_ byte: UInt8) -> UInt8 { byte &- 0x41 < 26 ? byte | 0x20 : byte }

    /// Whether `name` starts with `prefix` (already lower case), ASCII case-insensitively.
    static func hasPrefix(_ name: ArraySlice<UInt8>, _ prefix: [UInt8]) -> Bool {
        guard name.count >= prefix.count else { return false }
        var i = name.startIndex
        for byte in prefix {
            if asciiLower(name[i]) != byte { return false }
            i += 1
        }
        return true
    }

    /// Whether `name` equals `lower` (already lower case), ASCII case-insensitively.
    static func equals(_ name: ArraySlice<UInt8>, _ lower: [UInt8]) -> Bool {
        name.count == lower.count && hasPrefix(name, lower)
    }
}
