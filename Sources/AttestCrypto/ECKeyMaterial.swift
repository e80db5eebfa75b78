internal import COpenSSL

/// Internal helpers to move EC keys between bytes and OpenSSL 3 `EVP_PKEY` objects
/// (provider-native keys built with `OSSL_PARAM_BLD` / `EVP_PKEY_fromdata`).
enum ECKeyMaterial {
    /// An owned `EVP_PKEY` holding the public point `x963` (uncompressed `04 || X || Y`) on `curve`,
    /// validated with `EVP_PKEY_public_check` (on the curve, not infinity, right order).
    static func publicKey(x963: [UInt8], curve: ECCurve) throws -> OpaquePointer {
        guard x963.count == 1 + 2 * curve.coordinateByteCount, x963.first == 0x04 else {
            throw CryptoError.invalidKey("expected a \(1 + 2 * curve.coordinateByteCount)-byte uncompressed point (04 || X || Y)")
        }
        let builder = try OpenSSLHandle(OSSL_PARAM_BLD_new(), "OSSL_PARAM_BLD_new") { OSSL_PARAM_BLD_free($0) }
        let ctx = try OpenSSLHandle(EVP_PKEY_CTX_new_from_name(nil, StaticCString.pointer(StaticCString.ec), nil), "EVP_PKEY_CTX_new_from_name") { EVP_PKEY_CTX_free($0) }
        var pkey: OpaquePointer? = nil
        // OSSL_PARAM_BLD keeps references to the pushed buffers until OSSL_PARAM_BLD_to_param, and the
        // resulting OSSL_PARAM array still points at the key names: everything below runs while all
        // of those C strings and buffers are pinned.
        try builder.withPointer { bld in
            try OSSL_PKEY_PARAM_GROUP_NAME.withCString { groupKey in
                try OSSL_PKEY_PARAM_PUB_KEY.withCString { pubKey in
                    try curve.groupName.withCString { group in
                        try x963.withUnsafeBytes { point in
                            guard OSSL_PARAM_BLD_push_utf8_string(bld, groupKey, group, 0) == 1,
                                  OSSL_PARAM_BLD_push_octet_string(bld, pubKey, point.baseAddress, point.count) == 1
                            else { throw CryptoError.openSSLFailure("OSSL_PARAM_BLD_push") }
                            let params = try OpenSSLHandle(OpaquePointer(OSSL_PARAM_BLD_to_param(bld)), "OSSL_PARAM_BLD_to_param") {
                                OSSL_PARAM_free(UnsafeMutablePointer<OSSL_PARAM>($0))
                            }
                            try ctx.withPointer { c in
                                try params.withPointer { p in
                                    guard EVP_PKEY_fromdata_init(c) == 1,
                                          EVP_PKEY_fromdata(c, &pkey, cshim_EVP_PKEY_PUBLIC_KEY(), UnsafeMutablePointer<OSSL_PARAM>(p)) == 1
                                    else { ERR_clear_error(); throw CryptoError.invalidKey("point rejected by OpenSSL (not on \(curve.groupName))") }
                                }
                            }
                        }
                    }
                }
            }
        }
        let owned = try OpenSSLHandle(pkey, "EVP_PKEY_fromdata") { EVP_PKEY_free($0) }
        try owned.withPointer { key in
            let check = try OpenSSLHandle(EVP_PKEY_CTX_new_from_pkey(nil, key, nil), "EVP_PKEY_CTX_new_from_pkey") { EVP_PKEY_CTX_free($0) }
            guard check.withPointer({ EVP_PKEY_public_check($0) }) == 1 else {
                ERR_clear_error()
                throw CryptoError.invalidKey("point is not a valid \(curve.groupName) public key")
            }
        }
        // Hand the key over to the caller's owner: take one more reference, the handle drops its own.
        return owned.withPointer { key in
            EVP_PKEY_up_ref(key)
            return key
        }
    }

    /// The curve of an EC key, or nil when it is not an EC key on P-256 / P-384.
    static func curve(of pkey: OpaquePointer) -> ECCurve? {
        guard EVP_PKEY_is_a(pkey, "EC") == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, &buffer, buffer.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        let name = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return ECCurve.allCases.first { $0.groupNames.contains(name) }
    }

    /// The uncompressed point `04 || X || Y` of an EC key (coordinates left-padded to the field size).
    static func uncompressedPoint(of pkey: OpaquePointer, curve: ECCurve) throws -> [UInt8] {
        var out: [UInt8] = [0x04]
        for name in [OSSL_PKEY_PARAM_EC_PUB_X, OSSL_PKEY_PARAM_EC_PUB_Y] {
            var bn: OpaquePointer? = nil
            guard EVP_PKEY_get_bn_param(pkey, name, &bn) == 1 else { throw CryptoError.openSSLFailure("EVP_PKEY_get_bn_param") }
            let number = try OpenSSLHandle(bn, "EVP_PKEY_get_bn_param") { BN_free($0) }
            var coordinate = [UInt8](repeating: 0, count: curve.coordinateByteCount)
            let written = number.withPointer { n in
                coordinate.withUnsafeMutableBufferPointer { BN_bn2binpad(n, $0.baseAddress, Int32($0.count)) }
            }
            guard written == Int32(curve.coordinateByteCount) else { throw CryptoError.invalidKey("coordinate too long") }
            out += coordinate
        }
        return out
    }

    /// DER SubjectPublicKeyInfo of a key.
    static func subjectPublicKeyInfo(of pkey: OpaquePointer) throws -> [UInt8] {
        let length = i2d_PUBKEY(pkey, nil)
        guard length > 0 else { throw CryptoError.openSSLFailure("i2d_PUBKEY") }
        var out = [UInt8](repeating: 0, count: Int(length))
        let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_PUBKEY(pkey, &cursor)
        }
        guard written == length else { throw CryptoError.openSSLFailure("i2d_PUBKEY") }
        return out
    }

    /// Parses one DER SubjectPublicKeyInfo (nothing may follow it) into an owned `EVP_PKEY`.
    static func parseSubjectPublicKeyInfo(_ der: [UInt8]) throws -> OpenSSLHandle {
        guard !der.isEmpty, der.count < Int(Int32.max) else { throw CryptoError.invalidEncoding("empty SubjectPublicKeyInfo") }
        return try der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let key = d2i_PUBKEY(nil, &cursor, Int(buffer.count))
            guard key != nil else { ERR_clear_error(); throw CryptoError.invalidEncoding("not a DER SubjectPublicKeyInfo") }
            let handle = try OpenSSLHandle(key, "d2i_PUBKEY") { EVP_PKEY_free($0) }
            guard let cursor, cursor == buffer.baseAddress! + buffer.count else {
                throw CryptoError.invalidEncoding("bytes after the SubjectPublicKeyInfo")
            }
            return handle
        }
    }
}
