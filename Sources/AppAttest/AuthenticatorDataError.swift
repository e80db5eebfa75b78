/// Why authenticatorData was refused; maps to reason code `auth_data_malformed`.
public struct AuthenticatorDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String

    init(_ message: String) { self.message = message }

    public var description: String { "authenticatorData: \(message)" }
}
