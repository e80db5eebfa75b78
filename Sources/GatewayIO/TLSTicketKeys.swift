// Session ticket keys held in memory, rotated on a schedule.

internal import COpenSSL
import Synchronization

/// The keys that protect session tickets (RFC 5077 section 4's recommended construction: AES-256-CBC
/// plus HMAC-SHA-256 over the ticket, done by OpenSSL), for OpenSSL's ticket key callback
/// (SSL_CTX_set_tlsext_ticket_key_evp_cb(3)).
///
/// Keys are 16-byte name + 32-byte AES key + 32-byte HMAC key from RAND_bytes(3), held only in this
/// process's memory (wiped with OPENSSL_cleanse(3) when dropped), never written anywhere. The newest
/// key encrypts new tickets for `rotation` nanoseconds; then the next ticket gets a fresh key. An older
/// key still decrypts (and the ticket is renewed under the newest key) until `rotation + retention`
/// nanoseconds after it was made; after that its tickets are ignored and the handshake is a full
/// one. Time comes from the injected monotonic clock (nanoseconds), so tests move it by hand.
///
/// Shared by every generation of a `TLSServerContext`: tickets survive certificate reloads. Called
/// from OpenSSL callbacks on any event loop's thread, hence the lock.
final class TLSTicketKeys: Sendable {
    /// One key: `bytes` points to 80 bytes: name (16), AES-256 key (32), HMAC-SHA-256 key (32).
    final class Key: @unchecked Sendable {  // immutable after init; only read under the owner's lock
        static let nameLength = 16
        static let secretLength = 32
        static let size = nameLength + 2 * secretLength
        let bytes: UnsafeMutablePointer<UInt8>
        let created: UInt64

        /// A fresh random key made at `created` (nil when RAND_bytes(3) fails).
        init?(created: UInt64) {
            bytes = .allocate(capacity: Key.size)
            self.created = created
            guard RAND_bytes(bytes, Int32(Key.size)) == 1 else {
                bytes.deallocate()
                return nil
            }
        }

        var name: UnsafeMutablePointer<UInt8> { bytes }
        var aesKey: UnsafeMutablePointer<UInt8> { bytes + Key.nameLength }
        var hmacKey: UnsafeMutablePointer<UInt8> { bytes + Key.nameLength + Key.secretLength }

        deinit {
            OPENSSL_cleanse(bytes, Key.size)
            bytes.deallocate()
        }
    }

    private struct State {
        var keys: [Key] = []  // newest first
        var rotation: UInt64
        var retention: UInt64
    }

    private let state: Mutex<State>
    private let clock: @Sendable () -> UInt64

    /// Keys rotating every `rotationSeconds`, each decrypting for `retentionSeconds` more, on `clock`
    /// (monotonic nanoseconds).
    init(rotationSeconds: Int, retentionSeconds: Int, clock: @escaping @Sendable () -> UInt64) {
        state = Mutex(State(rotation: UInt64(rotationSeconds) * 1_000_000_000, retention: UInt64(retentionSeconds) * 1_000_000_000))
        self.clock = clock
    }

    /// Changes the schedule (a reload); existing keys are kept and judged by the new schedule.
    func update(rotationSeconds: Int, retentionSeconds: Int) {
        state.withLock {
            $0.rotation = UInt64(rotationSeconds) * 1_000_000_000
            $0.retention = UInt64(retentionSeconds) * 1_000_000_000
        }
    }

    /// Number of keys held (encrypting + decrypt-only), for tests and metrics.
    var count: Int { state.withLock { $0.keys.count } }

    /// The ticket key callback's work (SSL_CTX_set_tlsext_ticket_key_evp_cb(3)): `encrypt` fills
    /// `name` (16 bytes) and `iv` and keys `cipher` and `mac` with the current key (returns 1, or -1
    /// on failure); otherwise looks `name` up and keys `cipher` and `mac` for decryption (returns 1,
    /// 2 = "renew the ticket" for a key that no longer encrypts or when `alwaysRenew`, 0 = unknown or
    /// expired key: full handshake).
    ///
    /// `alwaysRenew` is for TLS 1.3: OpenSSL 3.0 only sends a new ticket after a resumed TLS 1.3
    /// handshake when the callback answers 2 (its built-in keys always renew in TLS 1.3), and clients
    /// use a TLS 1.3 ticket once (RFC 8446 appendix C.4), so without renewal every other connection
    /// would be a full handshake.
    func callback(name: UnsafeMutablePointer<UInt8>, iv: UnsafeMutablePointer<UInt8>, cipher: OpaquePointer,
                  mac: OpaquePointer, encrypt: Bool, alwaysRenew: Bool = false) -> Int32 {
        let now = clock()
        return state.withLock { state -> Int32 in
            state.keys.removeAll { now &- $0.created >= state.rotation + state.retention }
            if encrypt {
                if state.keys.first.map({ now &- $0.created >= state.rotation }) ?? true {
                    guard let key = Key(created: now) else { return -1 }
                    state.keys.insert(key, at: 0)
                }
                let key = state.keys[0]
                let ivLength = EVP_CIPHER_get_iv_length(EVP_aes_256_cbc())
                guard RAND_bytes(iv, ivLength) == 1 else { return -1 }
                name.update(from: key.name, count: Key.nameLength)
                guard EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nil, key.aesKey, iv) == 1,
                      TLSTicketKeys.setHMACKey(mac, key) else { return -1 }
                return 1
            }
            guard let index = state.keys.firstIndex(where: { memcmp($0.name, name, Key.nameLength) == 0 }) else { return 0 }
            let key = state.keys[index]
            guard EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nil, key.aesKey, iv) == 1,
                  TLSTicketKeys.setHMACKey(mac, key) else { return -1 }
            let stillEncrypting = index == 0 && now &- key.created < state.rotation
            return stillEncrypting && !alwaysRenew ? 1 : 2
        }
    }

    private static let macKeyParameter: StaticString = "key"      // OSSL_MAC_PARAM_KEY
    private static let macDigestParameter: StaticString = "digest"  // OSSL_MAC_PARAM_DIGEST
    private static let sha256: StaticString = "SHA256"

    /// Keys the HMAC context OpenSSL gave us with SHA-256 and the key's HMAC secret (EVP_MAC-HMAC(7)).
    private static func setHMACKey(_ mac: OpaquePointer, _ key: Key) -> Bool {
        func c(_ s: StaticString) -> UnsafeMutablePointer<CChar> {
            UnsafeMutableRawPointer(mutating: s.utf8Start).assumingMemoryBound(to: CChar.self)
        }
        var params = [
            OSSL_PARAM_construct_octet_string(c(macKeyParameter), key.hmacKey, Key.secretLength),
            OSSL_PARAM_construct_utf8_string(c(macDigestParameter), c(sha256), 0),
            OSSL_PARAM_construct_end(),
        ]
        return EVP_MAC_CTX_set_params(mac, &params) == 1
    }
}
