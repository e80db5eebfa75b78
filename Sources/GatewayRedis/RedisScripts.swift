/// The Lua scripts of the Redis store: one script per state change, so each commit is atomic (Redis
/// runs a script to completion with no other command interleaved) and touches only the keys it names,
/// all carrying the same `{<keyId b64url>}` hash tag (one Redis Cluster slot; the account index
/// scripts of `RedisScript+Lifecycle` use the account's `{acct:<hash>}` tag instead).
///
/// Contract shared by the scripts:
/// - every check happens before any write, and the first write is `HSET` (a command Redis refuses with
///   `OOM`/`READONLY` before executing it), the `DEL` of the challenge comes last: a refused or failing
///   script changes nothing;
/// - times are unix milliseconds passed by the caller (injected `now`); Lua numbers are doubles, exact
///   for times and 32-bit counters;
/// - refusals are returned as the stable reason codes of `StoreRefusal`.
///
/// Scripts are sent with `SCRIPT LOAD` on every connect (the returned SHA-1 must equal `sha1`, otherwise
/// the connection is refused as misconfigured) and run with `EVALSHA`, falling back to `EVAL` with the
/// body when Redis answers `NOSCRIPT` (e.g. after `SCRIPT FLUSH` or a failover).
struct RedisScript: Sendable {
    /// The Lua source, byte for byte as loaded.
    let body: [UInt8]
    /// Lowercase hex SHA-1 of `body`, as `SCRIPT LOAD` returns it (checked by a test and at connect).
    let sha1: [UInt8]

    init(_ body: String, sha1: StaticString) {
        self.body = Array(body.utf8)
        self.sha1 = Array(UnsafeBufferPointer(start: sha1.utf8Start, count: sha1.utf8CodeUnitCount))
    }

    /// Lua shared by `commit` and `renew` (one home for the replay window's arithmetic, the layout of
    /// `ReplayWindow`): with `b` the window's 16 bytes as a Lua table and `counter > highest`, shifts
    /// the window up by `n = counter - highest` and marks the old highest (bit `n - 1`); a jump of
    /// 128 or more clears it. Interpolated into the scripts' bodies (their SHA-1 covers it).
    /// Plain arithmetic on exact doubles (`x % 256`, `(y - y % 256) / 256` for a right shift)
    /// rather than the `bit` library: each `bit.*` is a C function call, 4 per byte.
    static let advanceWindow = """
          local n = counter - highest
          if n >= 128 then
            for i = 1, 16 do b[i] = 0 end
          else
            local q = (n - n % 8) / 8
            local p = 2 ^ (n % 8)
            for i = 16, q + 1, -1 do
              local x = b[i - q] * p
              local v = x % 256
              if i > q + 1 then
                local y = b[i - q - 1] * p
                v = v + (y - y % 256) / 256
              end
              b[i] = v
            end
            for i = q, 1, -1 do b[i] = 0 end
          end
          if n <= 128 then
            local m = n - 1
            local j = (m - m % 8) / 8 + 1
            b[j] = b[j] + 2 ^ (m % 8)
          end
        """

    /// Lua of `commit`'s common case: a 16-byte window `w` moved up by `n` = 1...8 (the counter just
    /// advanced) without a table: the bytes in 16 locals, each shifted up by `n` bits with the top
    /// `n` bits of the byte below (`p` = 2^n, `d` = 256 / p), then bit `n - 1` (the old highest,
    /// in byte 1) marked. Same result as `advanceWindow` for those `n`.
    static let shiftWindowBits = """
          local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16 = string.byte(w, 1, 16)
          local p = 2 ^ n
          local d = 256 / p
          b16 = b16 * p % 256 + (b15 - b15 % d) / d
          b15 = b15 * p % 256 + (b14 - b14 % d) / d
          b14 = b14 * p % 256 + (b13 - b13 % d) / d
          b13 = b13 * p % 256 + (b12 - b12 % d) / d
          b12 = b12 * p % 256 + (b11 - b11 % d) / d
          b11 = b11 * p % 256 + (b10 - b10 % d) / d
          b10 = b10 * p % 256 + (b9 - b9 % d) / d
          b9 = b9 * p % 256 + (b8 - b8 % d) / d
          b8 = b8 * p % 256 + (b7 - b7 % d) / d
          b7 = b7 * p % 256 + (b6 - b6 % d) / d
          b6 = b6 * p % 256 + (b5 - b5 % d) / d
          b5 = b5 * p % 256 + (b4 - b4 % d) / d
          b4 = b4 * p % 256 + (b3 - b3 % d) / d
          b3 = b3 * p % 256 + (b2 - b2 % d) / d
          b2 = b2 * p % 256 + (b1 - b1 % d) / d
          b1 = b1 * p % 256 + p / 2
          w = string.char(b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16)
        """

    /// `issueChallenge`. KEYS[1] challenge hash. ARGV: purpose, expiresAt (ms), Redis TTL (ms, >= 1).
    /// Returns 1. The TTL is the challenge lifetime plus the grace period, so an expired challenge is
    /// still present (answers `challenge_expired`) for the grace period.
    static let issue = RedisScript("""
        redis.call('HSET', KEYS[1], 'p', ARGV[1], 'exp', ARGV[2])
        redis.call('PEXPIRE', KEYS[1], ARGV[3])
        return 1
        """, sha1: "14301cfd33af6bbf254644542664bd6c4607fb6f")

    /// `registerKey`. KEYS[1] key record hash, KEYS[2] challenge hash. ARGV[1] now (ms), ARGV[2...] the
    /// record's field/value pairs. Returns `ok` or `challenge_unknown` | `challenge_expired` |
    /// `challenge_wrong_purpose` | `key_exists`; on `ok` the record was written and the challenge deleted.
    static let register = RedisScript("""
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        if not c[1] or not c[2] then return 'challenge_unknown' end
        if tonumber(ARGV[1]) >= tonumber(c[2]) then return 'challenge_expired' end
        if c[1] ~= 'attest' then return 'challenge_wrong_purpose' end
        if redis.call('EXISTS', KEYS[1]) == 1 then return 'key_exists' end
        redis.call('HSET', KEYS[1], unpack(ARGV, 2))
        redis.call('DEL', KEYS[2])
        return 'ok'
        """, sha1: "7b8dff1107d6953de6c22134339c76edef60353c")

    /// `commitAssertion`, and `commitAssertion(…issuing:)` with a next challenge. KEYS[1] key record
    /// hash, KEYS[2] presented challenge hash, [KEYS[3] next challenge hash: same hash tag, never the
    /// presented one]. ARGV: counter, window W (0...128), now (ms) [, next expiresAt (ms), next Redis
    /// TTL (ms, >= 1)]. Returns `{code}` on refusal (`key_unknown`, `key_revoked`, `key_expired`,
    /// `challenge_unknown`, `challenge_expired`, `challenge_wrong_purpose`, `counter_replay`) or
    /// `{'ok', highest, risk, riskat, riskst, rcptexp}` (the last four `''` when absent) after storing
    /// the new highest counter and 16-byte window (layout of `ReplayWindow`) and deleting the
    /// challenge. It reads only the key fields it checks or updates (counter, status, expiry, window)
    /// and the fraud metric (which the receipt refresher changes); the rest is cached by the gateway.
    ///
    /// With a next challenge (ARGV[4] present), once the key checks passed (exists, active,
    /// unexpired) the next challenge is written (`p` assert, `exp`, PEXPIRE) before any reply,
    /// refusals of the challenge and the counter included. On acceptance that `HSET` is the first
    /// write (a Redis out of memory refuses it before anything changed), then the key record, then the
    /// `DEL` of the presented challenge. A corrupt replay window is an error before any write.
    ///
    /// Cost (issue 8: Redis' CPU counts per request): the checks only decide a refusal code, and one
    /// tail does the writes (no Lua closure per call); a counter that advances by 1...8 over a
    /// 16-byte window moves it in locals (`shiftWindowBits`), other advances go through
    /// `advanceWindow`, an in-window counter sets its one byte by string slicing.
    static let commit = RedisScript("""
        local k = redis.call('HMGET', KEYS[1], 'ctr', 'status', 'exp', 'win', 'risk', 'riskat', 'riskst', 'rcptexp')
        if not k[1] then return {'key_unknown'} end
        if k[2] ~= 'active' then return {'key_revoked'} end
        local now = tonumber(ARGV[3])
        if k[3] and now >= tonumber(k[3]) then return {'key_expired'} end
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        local refusal, h, w
        if not c[1] or not c[2] then
          refusal = 'challenge_unknown'
        elseif now >= tonumber(c[2]) then
          refusal = 'challenge_expired'
        elseif c[1] ~= 'assert' then
          refusal = 'challenge_wrong_purpose'
        else
          w = k[4] or ''
          if #w ~= 16 and #w ~= 0 then return redis.error_reply('ERR corrupt replay window') end
          local highest = tonumber(k[1])
          local counter = tonumber(ARGV[1])
          if counter > highest then
            local n = counter - highest
            if n <= 8 and #w == 16 then
        \(RedisScript.shiftWindowBits)
            else
              local b = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
              if #w == 16 then b = {string.byte(w, 1, 16)} end
        \(RedisScript.advanceWindow)
              w = string.char(unpack(b))
            end
            highest = counter
          else
            local dist = highest - counter
            if dist < 1 or dist > tonumber(ARGV[2]) then
              refusal = 'counter_replay'
            else
              if #w == 0 then w = string.rep(string.char(0), 16) end
              local m = dist - 1
              local j = (m - m % 8) / 8 + 1
              local mask = 2 ^ (m % 8)
              local v = string.byte(w, j)
              if v % (mask * 2) >= mask then
                refusal = 'counter_replay'
              else
                w = string.sub(w, 1, j - 1) .. string.char(v + mask) .. string.sub(w, j + 1)
              end
            end
          end
          h = string.format('%d', highest)
        end
        if ARGV[4] then
          redis.call('HSET', KEYS[3], 'p', 'assert', 'exp', ARGV[4])
          redis.call('PEXPIRE', KEYS[3], ARGV[5])
        end
        if refusal then return {refusal} end
        redis.call('HSET', KEYS[1], 'ctr', h, 'win', w)
        redis.call('DEL', KEYS[2])
        return {'ok', h, k[5] or '', k[6] or '', k[7] or '', k[8] or ''}
        """, sha1: "e262bb62dcdbb7eba2a768d9aa3b7effcef7fc4b")

    /// `revokeKey`. KEYS[1] key record hash. Returns 1 after setting `status` to `revoked`, 0 when the key
    /// does not exist (nothing is created).
    static let revoke = RedisScript("""
        if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
        redis.call('HSET', KEYS[1], 'status', 'revoked')
        return 1
        """, sha1: "4231cad463835ca11942efa3aaa9976e269cc2b0")

    /// `revokeKey(_:reason:revokedBy:now:)` (attestctl): KEYS[1] key record hash. ARGV[1] now (ms),
    /// ARGV[2] reason, ARGV[3] operator (empty: not recorded). Returns 1 after setting `status` to
    /// `revoked` with `revoked_at` (and `revoked_reason`, `revoked_by`); 2 when the key was already
    /// revoked (nothing changes: the first revocation's record stays); 0 when it does not exist.
    static let revokeAudited = RedisScript("""
        local s = redis.call('HGET', KEYS[1], 'status')
        if not s then return 0 end
        if s == 'revoked' then return 2 end
        redis.call('HSET', KEYS[1], 'status', 'revoked', 'revoked_at', ARGV[1])
        if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'revoked_reason', ARGV[2]) end
        if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'revoked_by', ARGV[3]) end
        return 1
        """, sha1: "e5db9b8b7d469c1b30f20e5bb87e4a06e93af5c9")

    /// `registerDeviceKey`. KEYS[1] key record hash, KEYS[2] challenge hash, KEYS[3] the key's
    /// registration back-off. ARGV[1] now (ms), ARGV[2...] the record's field/value pairs. Returns `ok` or
    /// `challenge_unknown` | `challenge_expired` | `challenge_wrong_purpose` (not `register`) |
    /// `key_exists` (a record that is live, revoked, or without an expiry); on `ok` the record was
    /// written (replacing an active record whose registration expired), the challenge and the back-off
    /// deleted.
    static let registerDevice = RedisScript("""
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        if not c[1] or not c[2] then return 'challenge_unknown' end
        if tonumber(ARGV[1]) >= tonumber(c[2]) then return 'challenge_expired' end
        if c[1] ~= 'register' then return 'challenge_wrong_purpose' end
        local k = redis.call('HMGET', KEYS[1], 'status', 'exp')
        if k[1] then
          if k[1] ~= 'active' or not k[2] or tonumber(ARGV[1]) < tonumber(k[2]) then return 'key_exists' end
          redis.call('DEL', KEYS[1])
        end
        redis.call('HSET', KEYS[1], unpack(ARGV, 2))
        redis.call('DEL', KEYS[2], KEYS[3])
        return 'ok'
        """, sha1: "6146675591084c3cc1095682b8e78dedbbd54e00")

    /// `registerVouchingKey` (the App Attest key of `/register`'s attestation form, stored after the
    /// device key's registration consumed its challenge). KEYS[1] key record hash. ARGV the record's
    /// field/value pairs. Returns `ok` after writing the record, or `key_exists` when any record of
    /// the keyId exists (it is never replaced: a held key's counter never goes back).
    static let registerVouching = RedisScript("""
        if redis.call('EXISTS', KEYS[1]) == 1 then return 'key_exists' end
        redis.call('HSET', KEYS[1], unpack(ARGV))
        return 'ok'
        """, sha1: "b4a6d56dc4a92aeebb5946f7aecd3828609986dd")

    /// `commitSignedRequest` (a request signed by a device key: the challenge is the replay guard).
    /// KEYS[1] key record hash, KEYS[2] challenge hash. ARGV[1] now (ms). Returns `ok` after deleting the
    /// challenge, or `key_unknown` | `key_revoked` | `key_expired` | `challenge_unknown` |
    /// `challenge_expired` | `challenge_wrong_purpose` (not `assert`) with nothing changed.
    static let commitSigned = RedisScript("""
        local k = redis.call('HMGET', KEYS[1], 'status', 'exp')
        if not k[1] then return 'key_unknown' end
        if k[1] ~= 'active' then return 'key_revoked' end
        local now = tonumber(ARGV[1])
        if k[2] and now >= tonumber(k[2]) then return 'key_expired' end
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        if not c[1] or not c[2] then return 'challenge_unknown' end
        if now >= tonumber(c[2]) then return 'challenge_expired' end
        if c[1] ~= 'assert' then return 'challenge_wrong_purpose' end
        redis.call('DEL', KEYS[2])
        return 'ok'
        """, sha1: "b3b97e0f3cbcf04c82783832615042d262493906")

    /// `recordRegistrationRefusal`. KEYS[1] the key's registration back-off hash (`n` refusals in a
    /// row, `retry` ms). ARGV[1] now (ms), ARGV[2] the longest delay (ms), ARGV[3] the first delay (ms).
    /// Increments `n`, sets `retry` = now + min(first * 2^(n-1), longest) and a TTL of that delay plus
    /// the longest delay (then the count starts again). Returns `{n, retry}` as decimal text.
    static let registrationRefused = RedisScript("""
        local b = redis.call('HMGET', KEYS[1], 'n')
        local n = 1
        if b[1] then n = math.min(tonumber(b[1]), 1000000) + 1 end
        local delay = tonumber(ARGV[2])
        if n <= 8 then delay = math.min(tonumber(ARGV[3]) * math.pow(2, n - 1), delay) end
        local retry = string.format('%d', tonumber(ARGV[1]) + delay)
        redis.call('HSET', KEYS[1], 'n', string.format('%d', n), 'retry', retry)
        redis.call('PEXPIRE', KEYS[1], string.format('%d', delay + tonumber(ARGV[2])))
        return {string.format('%d', n), retry}
        """, sha1: "c4967f6a407b0cc04aacceb37b4c20b1166a0679")

    /// `acquireFleetSlot`. KEYS[1] the window's counter (`<p>:{fleet}:<name>:<window index>`).
    /// ARGV: limit, counter TTL (ms, two windows). Returns 1 (within the limit) or 0 (over it); every
    /// call counts.
    static let fleet = RedisScript("""
        local n = redis.call('INCR', KEYS[1])
        if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
        if n > tonumber(ARGV[1]) then return 0 end
        return 1
        """, sha1: "76af0234bea29228fd2be83725cd000857397367")

    /// Every script, in the order they are loaded at connect.
    static let all: [RedisScript] = [issue, register, commit, revoke, revokeAudited, registerDevice, commitSigned,
                                     registrationRefused, fleet, registerVouching] + lifecycle
}
