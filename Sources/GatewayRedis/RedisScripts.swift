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
    static let advanceWindow = """
          local n = counter - highest
          if n >= 128 then
            for i = 1, 16 do b[i] = 0 end
          else
            local q = math.floor(n / 8)
            local s = n % 8
            for i = 16, 1, -1 do
              local src = i - q
              local v = 0
              if src >= 1 then v = bit.band(bit.lshift(b[src], s), 255) end
              if s > 0 and src >= 2 then v = bit.bor(v, bit.rshift(b[src - 1], 8 - s)) end
              b[i] = v
            end
          end
          if n <= 128 then
            local m = n - 1
            local j = math.floor(m / 8) + 1
            b[j] = bit.bor(b[j], bit.lshift(1, m % 8))
          end
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
    /// unexpired) `issue()` writes it (`p` assert, `exp`, PEXPIRE) before any reply, refusals of the
    /// challenge and the counter included. On acceptance that `HSET` is the first write (a Redis out
    /// of memory refuses it before anything changed), then the key record, then the `DEL` of the
    /// presented challenge. A corrupt replay window is an error before any write. Without one,
    /// `issue()` does nothing.
    static let commit = RedisScript("""
        local k = redis.call('HMGET', KEYS[1], 'ctr', 'status', 'exp', 'win', 'risk', 'riskat', 'riskst', 'rcptexp')
        if not k[1] then return {'key_unknown'} end
        if k[2] ~= 'active' then return {'key_revoked'} end
        local now = tonumber(ARGV[3])
        if k[3] and now >= tonumber(k[3]) then return {'key_expired'} end
        local function issue()
          if not ARGV[4] then return end
          redis.call('HSET', KEYS[3], 'p', 'assert', 'exp', ARGV[4])
          redis.call('PEXPIRE', KEYS[3], ARGV[5])
        end
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        if not c[1] or not c[2] then issue() return {'challenge_unknown'} end
        if now >= tonumber(c[2]) then issue() return {'challenge_expired'} end
        if c[1] ~= 'assert' then issue() return {'challenge_wrong_purpose'} end
        local highest = tonumber(k[1])
        local counter = tonumber(ARGV[1])
        local size = tonumber(ARGV[2])
        local w = k[4]
        local b
        if w and #w == 16 then
          b = {string.byte(w, 1, 16)}
        elseif not w or #w == 0 then
          b = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
        else
          return redis.error_reply('ERR corrupt replay window')
        end
        if counter > highest then
        \(RedisScript.advanceWindow)
          highest = counter
        else
          local d = highest - counter
          if d < 1 or d > size then issue() return {'counter_replay'} end
          local m = d - 1
          local j = math.floor(m / 8) + 1
          local mask = bit.lshift(1, m % 8)
          if bit.band(b[j], mask) ~= 0 then issue() return {'counter_replay'} end
          b[j] = bit.bor(b[j], mask)
        end
        local h = string.format('%d', highest)
        issue()
        redis.call('HSET', KEYS[1], 'ctr', h, 'win', string.char(unpack(b)))
        redis.call('DEL', KEYS[2])
        return {'ok', h, k[5] or '', k[6] or '', k[7] or '', k[8] or ''}
        """, sha1: "5e9be870da63d00cd27e246247e2224f55d532f8")

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
    /// `key_exists`; on `ok` the record was written, the challenge and the back-off deleted.
    static let registerDevice = RedisScript("""
        local c = redis.call('HMGET', KEYS[2], 'p', 'exp')
        if not c[1] or not c[2] then return 'challenge_unknown' end
        if tonumber(ARGV[1]) >= tonumber(c[2]) then return 'challenge_expired' end
        if c[1] ~= 'register' then return 'challenge_wrong_purpose' end
        if redis.call('EXISTS', KEYS[1]) == 1 then return 'key_exists' end
        redis.call('HSET', KEYS[1], unpack(ARGV, 2))
        redis.call('DEL', KEYS[2], KEYS[3])
        return 'ok'
        """, sha1: "c56ef317412bee51d3c39c4c0acae6be5b9851b8")

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
                                     registrationRefused, fleet] + lifecycle
}
