import AppAttest

/// The CBOR map iOS 27 appends to authenticatorData of attestations and assertions, after the COSE
/// key (attestation) or the counter (assertion), **without** setting the WebAuthn ED flag 0x80.
///
/// Encoded as `{"apple_bundle_version_01": text, "apple_validation_category_01": bytes}` in that
/// order - byte-identical to Apple's 2026 documentation sample for `("1", 01 00 00 00)` and to
/// `ios27_extension` of shared/tools/ref_device.py for the same values.
public struct IOS27Extension: Sendable, Equatable {
    /// `apple_bundle_version_01`: the app's bundle version (CFBundleVersion), e.g. "1" or "42".
    public var bundleVersion: String
    /// `apple_validation_category_01`: 4 opaque bytes (Apple's sample: 01 00 00 00).
    public var validationCategory: [UInt8]

    /// ref_device.py's default validation category, 03 00 00 00 (so both tools mint the same bytes).
    public static let defaultValidationCategory: [UInt8] = [0x03, 0x00, 0x00, 0x00]

    /// An extension with `bundleVersion` and `validationCategory` (default 03 00 00 00).
    public init(bundleVersion: String, validationCategory: [UInt8] = IOS27Extension.defaultValidationCategory) {
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
    }

    /// The CBOR bytes of the map, as appended to authenticatorData.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        CBORWriter.appendHead(major: 5, argument: 2, to: &out)
        CBORWriter.appendText("apple_bundle_version_01", to: &out)
        CBORWriter.appendText(bundleVersion, to: &out)
        CBORWriter.appendText("apple_validation_category_01", to: &out)
        CBORWriter.appendBytes(validationCategory, to: &out)
        return out
    }
}
