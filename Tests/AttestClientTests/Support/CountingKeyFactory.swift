import AttestClient
import Foundation

/// `SoftwareKeyFactory` counting the keys it makes.
final class CountingKeyFactory: DeviceKeyFactory, @unchecked Sendable {  // `made` guarded by `lock`
    private let lock = NSLock()
    private var made = 0
    var failing = false

    func makeKey() throws -> any DeviceKeySigner {
        if failing { throw AppAttestServiceError.featureUnsupported }
        lock.withLock { made += 1 }
        return try SoftwareKeyFactory().makeKey()
    }
    func restoreKey(_ representation: Data) throws -> any DeviceKeySigner { try SoftwareKeyFactory().restoreKey(representation) }
    var count: Int { lock.withLock { made } }
}
