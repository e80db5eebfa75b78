#if canImport(DeviceCheck) && canImport(Security)
import Foundation
import Security

/// An `AttestationStore` in the Keychain: one generic-password item per name, service `service`,
/// account = the item's name, readable after first unlock, never synchronized or migrated to another
/// device. Every read, write and removal uses the same account-scoped query (`query(_:)`), so that
/// what was saved is exactly what is removed.
public struct KeychainAttestationStore: AttestationStore {
    /// The Keychain service of every item (default: `attest-client`).
    public let service: String

    /// A store under `service`.
    public init(service: String = "attest-client") {
        self.service = service
    }

    /// The query naming item `name`: class, service and account (nothing else).
    func query(_ name: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: name]
    }

    /// The item's bytes, nil when absent or unreadable.
    public func data(for name: String) -> Data? {
        try? read(name)
    }

    /// The item's bytes, nil when absent (`errSecItemNotFound`).
    /// - Throws: `NSError` in `NSOSStatusErrorDomain` for any other failure, e.g.
    ///   `errSecInteractionNotAllowed` before the first unlock after a reboot.
    public func read(_ name: String) throws -> Data? {
        var query = query(name)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw NSError(domain: NSOSStatusErrorDomain, code: Int(status)) }
        return result as? Data
    }

    /// Adds, updates or (for nil) deletes the item.
    /// - Throws: `NSError` in `NSOSStatusErrorDomain` with the Keychain's status.
    public func set(_ data: Data?, for name: String) throws {
        let query = query(name)
        guard let data else {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw NSError(domain: NSOSStatusErrorDomain, code: Int(status)) }
            return
        }
        let attributes: [String: Any] = [kSecValueData as String: data,
                                         kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly]
        var status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            status = SecItemAdd(query.merging(attributes) { $1 } as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw NSError(domain: NSOSStatusErrorDomain, code: Int(status)) }
    }
}
#endif
