import GatewayRules

/// Policy on the iOS 27 authenticatorData signals of an assertion (`signals` on `apps[]` and
/// `routes[]`; issue 12, "iOS 27 signals"; DESIGN.md section 3): which
/// `apple_validation_category_01` values are allowed and which `apple_bundle_version_01` is the
/// lowest accepted, each with its own action.
///
/// A signal the assertion does not carry is never held against it (older iOS versions send no
/// map): its check passes as `absent`. A value that fails its check is refused (`403`) under
/// `enforce`, or recorded and forwarded under `monitor` (`App-Attest-Signal-Policy` tells the
/// upstream). A route's policy for a signal replaces the app's for that signal (`overriding`).
public struct SignalPolicy: Sendable, Hashable {
    /// What a failing check does.
    public enum Action: String, Sendable, Hashable, CaseIterable {
        /// Record the decision, send it upstream, forward the request.
        case monitor
        /// Refuse the request (`403`, action `deny`).
        case enforce
    }

    /// `validation_category`: the allowed values of `apple_validation_category_01`.
    public struct ValidationCategory: Sendable, Hashable {
        /// The longest allowed value, in bytes (config `allowed` entries; the metric label of a
        /// carried value, `SignalCheck`).
        public static let maximumBytes = 64
        /// Allowed byte strings (configured as hex, e.g. `01000000`), at least one.
        public var allowed: [[UInt8]]
        /// What a value outside `allowed` does.
        public var action: Action

        /// An allowed-values check.
        public init(allowed: [[UInt8]], action: Action) {
            self.allowed = allowed
            self.action = action
        }
    }

    /// `bundle_version`: the lowest accepted `apple_bundle_version_01`.
    public struct BundleVersion: Sendable, Hashable {
        /// The minimum, compared numerically (`DottedVersion`); a carried value that is not a
        /// dotted number fails the check.
        public var minimum: DottedVersion
        /// What a lower (or unreadable) version does.
        public var action: Action

        /// A minimum-version check.
        public init(minimum: DottedVersion, action: Action) {
            self.minimum = minimum
            self.action = action
        }
    }

    /// The validation-category check, if configured.
    public var validationCategory: ValidationCategory?
    /// The bundle-version check, if configured.
    public var bundleVersion: BundleVersion?

    /// A policy with the given checks.
    public init(validationCategory: ValidationCategory? = nil, bundleVersion: BundleVersion? = nil) {
        self.validationCategory = validationCategory
        self.bundleVersion = bundleVersion
    }

    /// This (route) policy over `base` (the app's): each signal's check from here when configured
    /// here, else from `base`.
    public func overriding(_ base: SignalPolicy?) -> SignalPolicy {
        SignalPolicy(validationCategory: validationCategory ?? base?.validationCategory,
                     bundleVersion: bundleVersion ?? base?.bundleVersion)
    }

    /// Whether no check is configured.
    public var isEmpty: Bool { validationCategory == nil && bundleVersion == nil }
}
