#if canImport(DeviceCheck)
import DeviceCheck
import Foundation

/// `AppAttestService` over Apple's `DCAppAttestService.shared` (iOS 14+, macOS 11+, tvOS 15+). Each call
/// waits for DeviceCheck's completion handler; call the SDK off the main thread.
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
public struct DeviceCheckAppAttestService: AppAttestService {
    /// Creates one over `DCAppAttestService.shared`.
    public init() {}

    /// `DCAppAttestService.shared.isSupported`.
    public var isSupported: Bool { DCAppAttestService.shared.isSupported }

    /// `generateKey(completionHandler:)`.
    /// - Throws: `AppAttestServiceError` (DeviceCheck's `DCError` code).
    public func generateKey() throws -> String {
        try Self.wait { done in DCAppAttestService.shared.generateKey { done($0, $1) } }
    }

    /// `attestKey(_:clientDataHash:completionHandler:)`.
    /// - Throws: `AppAttestServiceError`.
    public func attestKey(_ keyId: String, clientDataHash: Data) throws -> Data {
        try Self.wait { done in DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash) { done($0, $1) } }
    }

    /// `generateAssertion(_:clientDataHash:completionHandler:)`.
    /// - Throws: `AppAttestServiceError`.
    public func generateAssertion(_ keyId: String, clientDataHash: Data) throws -> Data {
        try Self.wait { done in DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash) { done($0, $1) } }
    }

    /// Runs `call` and waits for its completion; maps `DCError` to `AppAttestServiceError`.
    private static func wait<T>(_ call: (@escaping @Sendable (T?, Error?) -> Void) -> Void) throws -> T {
        let box = CompletionBox<T>()
        let done = DispatchSemaphore(value: 0)
        call { value, error in
            box.value = value
            box.error = error
            done.signal()
        }
        done.wait()
        if let value = box.value, box.error == nil { return value }
        if let error = box.error as? DCError { throw AppAttestServiceError(rawValue: error.code.rawValue) ?? .unknownSystemFailure }
        throw AppAttestServiceError.unknownSystemFailure
    }
}

/// One completion's result, handed from DeviceCheck's callback to the waiting caller.
private final class CompletionBox<T>: @unchecked Sendable {  // written once before `done.signal()`, read after `wait()`
    var value: T?
    var error: Error?
}
#endif
