/// The optional CBOR map that iOS 27 appends to authenticatorData (without the WebAuthn ED flag),
/// on attestations and assertions, exposed as risk signals.
///
/// Known keys: `apple_validation_category_01` (byte string) and `apple_bundle_version_01` (text).
/// Other text keys are tolerated and listed in `otherKeys`.
public struct AuthenticatorSignals: Sendable, Equatable {
    /// `apple_validation_category_01`, e.g. 01 00 00 00.
    public let validationCategory: [UInt8]?
    /// `apple_bundle_version_01`, the app's bundle version, e.g. "1".
    public let bundleVersion: String?
    /// Any other keys present, in order.
    public let otherKeys: [String]

    /// Signals as given.
    public init(validationCategory: [UInt8]?, bundleVersion: String?, otherKeys: [String] = []) {
        self.validationCategory = validationCategory
        self.bundleVersion = bundleVersion
        self.otherKeys = otherKeys
    }

    /// Reads the decoded trailing map. Keys must be text; known keys must have their documented type.
    init(map: CBORValue) throws {
        guard let entries = map.mapValue else { throw AuthenticatorDataError("trailing extension is not a CBOR map") }
        var category: [UInt8]? = nil
        var version: String? = nil
        var others: [String] = []
        for entry in entries {
            guard let key = entry.key.textValue else { throw AuthenticatorDataError("extension map key is not text") }
            switch key {
            case "apple_validation_category_01":
                guard let bytes = entry.value.bytesValue else { throw AuthenticatorDataError("apple_validation_category_01 is not a byte string") }
                category = bytes
            case "apple_bundle_version_01":
                guard let text = entry.value.textValue else { throw AuthenticatorDataError("apple_bundle_version_01 is not text") }
                version = text
            default:
                others.append(key)
            }
        }
        self.init(validationCategory: category, bundleVersion: version, otherKeys: others)
    }
}
