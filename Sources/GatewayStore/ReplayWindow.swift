/// Anti-replay state for assertion counters, like the IPsec (RFC 4303 section 3.4.3) and DTLS
/// (RFC 6347 section 4.1.2.6) sliding windows: besides the highest counter accepted so far, a bitmap
/// remembers which of the `capacity` counters just below it were already accepted.
///
/// Rule (`admit`): with the highest accepted counter H and a route window W (0...capacity):
/// - c > H is accepted; the bitmap slides by c - H and the old H is marked seen;
/// - H - W <= c < H is accepted once if not seen before (out-of-order arrival on parallel connections);
/// - anything else (c == H, c below the window, or already seen) is a replay.
/// With W = 0 this is "strictly greater". The bitmap is maintained whatever W is, so widening a route's
/// window later never lets an already accepted counter pass again. Bit i (0-based) stands for counter
/// H - 1 - i. Stored form: 16 bytes, byte k holding bits 8k...8k+7 least significant first (the Redis
/// Lua script uses the same layout); an all-zero window may be stored as no bytes.
public struct ReplayWindow: Equatable, Sendable {
    /// Bits kept below the highest counter: the largest usable window.
    public static let capacity = 128
    /// Length of the stored form in bytes.
    public static let byteCount = 16

    private var low: UInt64   // bits 0...63
    private var high: UInt64  // bits 64...127

    /// An empty window (nothing below the highest counter seen yet).
    public init() { low = 0; high = 0 }

    /// Restores a window from its stored form.
    /// - Returns: nil unless `bytes` is empty (empty window) or exactly 16 bytes.
    public init?<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        low = 0; high = 0
        if bytes.isEmpty { return }
        guard bytes.count == ReplayWindow.byteCount else { return nil }
        for (k, byte) in bytes.enumerated() {
            if k < 8 { low |= UInt64(byte) << (8 * UInt64(k)) } else { high |= UInt64(byte) << (8 * UInt64(k - 8)) }
        }
    }

    /// The stored form: 16 bytes (see the type's documentation).
    public var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: ReplayWindow.byteCount)
        for k in 0..<8 {
            out[k] = UInt8(truncatingIfNeeded: low >> (8 * UInt64(k)))
            out[k + 8] = UInt8(truncatingIfNeeded: high >> (8 * UInt64(k)))
        }
        return out
    }

    /// Whether no counter below the highest is marked.
    public var isEmpty: Bool { low == 0 && high == 0 }

    /// Whether the counter `distance` below the highest (1...capacity) is marked seen.
    public func isSeen(distance: Int) -> Bool {
        guard distance >= 1 && distance <= ReplayWindow.capacity else { return false }
        let bit = distance - 1
        return bit < 64 ? (low >> UInt64(bit)) & 1 == 1 : (high >> UInt64(bit - 64)) & 1 == 1
    }

    private mutating func mark(distance: Int) {
        guard distance >= 1 && distance <= ReplayWindow.capacity else { return }
        let bit = distance - 1
        if bit < 64 { low |= 1 << UInt64(bit) } else { high |= 1 << UInt64(bit - 64) }
    }

    private mutating func slide(by n: Int) {
        if n >= ReplayWindow.capacity { low = 0; high = 0; return }
        if n >= 64 {
            high = low << UInt64(n - 64)
            low = 0
        } else if n > 0 {
            high = high << UInt64(n) | low >> UInt64(64 - n)
            low = low << UInt64(n)
        }
    }

    /// Clamps a route's window size to 0...capacity (negative means 0).
    public static func clampedSize(_ size: Int) -> Int { min(max(size, 0), capacity) }

    /// Applies the anti-replay rule to `counter` against the highest accepted counter `highest` and this
    /// window, with route window `size` (clamped to 0...capacity).
    /// - Returns: the new highest counter and window when accepted; nil when `counter` is a replay.
    public func admit(counter: UInt32, highest: UInt32, size: Int) -> (highest: UInt32, window: ReplayWindow)? {
        var next = self
        if counter > highest {
            let n = Int(counter - highest)
            next.slide(by: n)
            next.mark(distance: n)
            return (counter, next)
        }
        let distance = Int(highest - counter)
        guard distance >= 1, distance <= ReplayWindow.clampedSize(size), !isSeen(distance: distance) else { return nil }
        next.mark(distance: distance)
        return (highest, next)
    }
}
