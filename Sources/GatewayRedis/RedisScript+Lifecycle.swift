/// The scripts of `KeyLifecycleStore` (issue 10): renew and forget under the key's hash tag, and the
/// account index under the account's own hash tag (`{acct:<hash>}`), each script touching one slot.
/// Same contract as the other scripts (`RedisScript`): every check before any write, the first write
/// an `HSET`/`ZADD` (refused by Redis under `OOM` before it runs), refusals as `StoreRefusal` codes.
extension RedisScript {
    /// `renewKey`. KEYS[1] key record hash, KEYS[2] challenge hash. ARGV: now (ms), counter (empty: no
    /// counter, a device key), new expiresAt (ms; empty: no expiry). Returns `{code}` on refusal
    /// (`key_unknown`, `key_revoked`, `key_expired`, `challenge_unknown`, `challenge_expired`,
    /// `challenge_wrong_purpose`, `counter_replay`) or `{'ok', acct}` (acct: the record's account
    /// hash, empty when none) after storing counter, window and expiry and deleting the challenge. The
    /// counter and window move exactly as in `commit` with a window of 0 (strictly greater).
    static let renew = RedisScript("""
        local k = redis.call('HMGET', KEYS[1], 'ctr', 'status', 'exp', 'win', 'acct')
        if not k[1] then return {'key_unknown'} end
        if k[2] ~= 'active' then return {'key_revoked'} end
        local now = tonumber(ARGV[1])
        if k[3] and now >= tonumber(k[3]) then return {'key_expired'} end
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        if not c[1] or not c[2] then return {'challenge_unknown'} end
        if now >= tonumber(c[2]) then return {'challenge_expired'} end
        if c[1] ~= 'renew' then return {'challenge_wrong_purpose'} end
        local h = k[1]
        local w = k[4] or ''
        if ARGV[2] ~= '' then
          local highest = tonumber(k[1])
          local counter = tonumber(ARGV[2])
          if counter <= highest then return {'counter_replay'} end
          local b
          if #w == 16 then
            b = {string.byte(w, 1, 16)}
          elseif #w == 0 then
            b = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
          else
            return redis.error_reply('ERR corrupt replay window')
          end
        \(RedisScript.advanceWindow)
          h = string.format('%d', counter)
          w = string.char(unpack(b))
        end
        redis.call('HSET', KEYS[1], 'ctr', h, 'win', w)
        if ARGV[3] == '' then
          redis.call('HDEL', KEYS[1], 'exp')
        else
          redis.call('HSET', KEYS[1], 'exp', ARGV[3])
        end
        redis.call('DEL', KEYS[2])
        return {'ok', k[5] or ''}
        """, sha1: "c59aa2c21552cbf7e6553f88ab66d37d644c1086")

    /// `forgetKey`. KEYS[1] key record hash, KEYS[2] challenge hash. ARGV: now (ms), counter (empty:
    /// none). Returns `{code}` on refusal (as `renew`, without `key_expired`: an expired key may forget
    /// itself) or `{'ok', acct}` after deleting the key record and the challenge.
    static let forget = RedisScript("""
        local k = redis.call('HMGET', KEYS[1], 'ctr', 'status', 'acct')
        if not k[1] then return {'key_unknown'} end
        if k[2] ~= 'active' then return {'key_revoked'} end
        local now = tonumber(ARGV[1])
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        if not c[1] or not c[2] then return {'challenge_unknown'} end
        if now >= tonumber(c[2]) then return {'challenge_expired'} end
        if c[1] ~= 'forget' then return {'challenge_wrong_purpose'} end
        if ARGV[2] ~= '' and tonumber(ARGV[2]) <= tonumber(k[1]) then return {'counter_replay'} end
        redis.call('DEL', KEYS[1], KEYS[2])
        return {'ok', k[3] or ''}
        """, sha1: "b17aa2424b440c4bc6f2a776cbb3738d1ac9cc77")

    /// `indexAccountKey`. KEYS[1] account index (sorted set: member raw keyId, score createdAt ms),
    /// KEYS[2] account expiries (hash: raw keyId -> expiresAt ms). ARGV: keyId, createdAt, expiresAt
    /// (empty: none), limit, now. Adds the key, drops entries whose expiry is <= now, then removes the
    /// oldest (lowest score, then lowest member) while more than `limit` remain. Returns the removed
    /// keyIds, oldest first (the caller revokes them).
    static let accountIndex = RedisScript("""
        redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
        if ARGV[3] == '' then
          redis.call('HDEL', KEYS[2], ARGV[1])
        else
          redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
        end
        local now = tonumber(ARGV[5])
        local e = redis.call('HGETALL', KEYS[2])
        for i = 1, #e, 2 do
          if tonumber(e[i + 1]) <= now then
            redis.call('ZREM', KEYS[1], e[i])
            redis.call('HDEL', KEYS[2], e[i])
          end
        end
        local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
        if over <= 0 then return {} end
        local out = redis.call('ZRANGE', KEYS[1], 0, over - 1)
        for _, m in ipairs(out) do
          redis.call('ZREM', KEYS[1], m)
          redis.call('HDEL', KEYS[2], m)
        end
        return out
        """, sha1: "9e4d90beec628e4cdf43f77c16b5db51b0f96f7e")

    /// `updateAccountKeyExpiry`. KEYS as `accountIndex`. ARGV: keyId, expiresAt (empty: none). Returns
    /// 1 after updating, 0 when the key is not in the index (nothing is written).
    static let accountExpiry = RedisScript("""
        if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
        if ARGV[2] == '' then
          redis.call('HDEL', KEYS[2], ARGV[1])
        else
          redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
        end
        return 1
        """, sha1: "a4a4764c2e5f8cb3c8df19be169828f977d93c3c")

    /// `removeAccountKey`. KEYS as `accountIndex`. ARGV: keyId. Returns 1 when it was in the index, else 0.
    static let accountRemove = RedisScript("""
        local n = redis.call('ZREM', KEYS[1], ARGV[1])
        redis.call('HDEL', KEYS[2], ARGV[1])
        return n
        """, sha1: "b9cfd10472e4e0c8d0f0a31651917bd1f220702c")

    /// The lifecycle scripts, loaded at connect after the others.
    static let lifecycle: [RedisScript] = [renew, forget, accountIndex, accountExpiry, accountRemove]
}
