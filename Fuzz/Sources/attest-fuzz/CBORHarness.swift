import AppAttest
import AttestSimulator

/// `cbor`: `CBORDecoder` (strict, RFC 8949 subset) on arbitrary bytes.
///
/// Invariants:
/// - `decode` and `decodePrefix` agree (the only extra refusal of `decode` is trailing bytes);
/// - an independent well-formedness walker (written here, RFC 8949 appendix C, restricted to the
///   accepted subset) agrees on the end of the item; when the walker accepts but the decoder
///   refuses, the refusal is one of the documented semantic ones (duplicate key, UTF-8, limits);
/// - re-encoding an accepted value in shortest form (the simulator's `CBORWriter`) is never longer
///   than the accepted bytes and decodes back to an equal value;
/// - errors carry an offset inside the input.
enum CBORHarness {
    static let harness = Harness(name: "cbor", summary: "CBORDecoder.decode / decodePrefix, round trip, independent walker") { run($0) }

    static func run(_ input: [UInt8]) {
        let decoder = CBORDecoder()
        var whole: CBORValue? = nil
        var wholeError: CBORDecodingError? = nil
        do { whole = try decoder.decode(input) } catch let e as CBORDecodingError { wholeError = e } catch {
            Invariant.fail("cbor", "decode threw \(type(of: error)), not CBORDecodingError")
        }
        if let wholeError { Invariant.check(wholeError.offset >= 0 && wholeError.offset <= input.count, "cbor", "error offset \(wholeError.offset) outside the input") }

        var prefix: (value: CBORValue, end: Int)? = nil
        var prefixError: CBORDecodingError? = nil
        do { prefix = try decoder.decodePrefix(input, from: 0) } catch let e as CBORDecodingError { prefixError = e } catch {
            Invariant.fail("cbor", "decodePrefix threw \(type(of: error))")
        }
        if let whole {
            Invariant.check(prefix?.end == input.count && prefix?.value == whole, "cbor", "decode accepted but decodePrefix differs")
        } else if let prefix {
            Invariant.check(prefix.end < input.count, "cbor", "decodePrefix spans the input but decode refused: \(String(describing: wholeError))")
        }

        // Independent walker.
        let walked = Walker.item(input, from: 0, depth: 1)
        if let prefix {
            Invariant.check(walked == prefix.end, "cbor", "decoder ended at \(prefix.end), independent walker at \(String(describing: walked))")
            let encoded: [UInt8]
            do { encoded = try CBORWriter.encode(prefix.value) } catch {
                Invariant.fail("cbor", "an accepted value does not re-encode: \(error)")
            }
            Invariant.check(encoded.count <= prefix.end, "cbor", "shortest re-encoding (\(encoded.count)) longer than the accepted item (\(prefix.end))")
            guard let again = try? decoder.decode(encoded) else { Invariant.fail("cbor", "the re-encoding is refused") }
            Invariant.check(again == prefix.value, "cbor", "the re-encoding decodes to another value")
        } else if walked != nil, let message = prefixError?.message {
            let semantic = ["duplicate map key", "UTF-8", "nesting deeper", "items exceeds", "entries exceeds", "longer than"]
            Invariant.check(semantic.contains { message.contains($0) }, "cbor",
                            "well-formed subset item refused for a syntax reason: \(message)")
        }
    }

    /// Well-formedness of the accepted subset: definite-length major types 0-5, simple values
    /// 20-23; depth and item limits of `CBORDecoder.Limits.appAttest`. Returns the end offset.
    enum Walker {
        static func item(_ b: [UInt8], from start: Int, depth: Int) -> Int? {
            guard start < b.count else { return nil }
            let major = b[start] >> 5
            let info = b[start] & 0x1F
            var i = start + 1
            var argument: UInt64
            switch info {
            case 0...23: argument = UInt64(info)
            case 24...27:
                let width = 1 << Int(info - 24)
                guard b.count - i >= width else { return nil }
                argument = 0
                for k in 0..<width { argument = argument << 8 | UInt64(b[i + k]) }
                i += width
            default: return nil
            }
            switch major {
            case 0, 1: return i
            case 2, 3:
                guard argument <= UInt64(b.count - i) else { return nil }
                return i + Int(argument)
            case 4, 5:
                guard depth <= CBORDecoder.Limits.appAttest.maxDepth, argument <= UInt64(CBORDecoder.Limits.appAttest.maxItems) else { return nil }
                let count = Int(argument) * (major == 5 ? 2 : 1)
                for _ in 0..<count {
                    guard let next = item(b, from: i, depth: depth + 1) else { return nil }
                    i = next
                }
                return i
            case 7:
                return (20...23).contains(info) ? i : nil
            default:
                return nil
            }
        }
    }
}
