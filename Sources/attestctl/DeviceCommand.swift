import AppAttest
import AttestSimulator
import Foundation
import GatewayRules

/// Shared plumbing of the device subcommands: error reporting and exit codes, JSON output in the
/// shape of shared/tools/ref_device.py (indented, keys in a fixed order, binary values in standard
/// padded base64), and option decoding helpers.
enum DeviceCommand {
    /// Runs `body`; prints its JSON result on stdout and returns 0, or prints the error on stderr
    /// and returns 2 (usage, with `usage` text) or 1 (anything else).
    static func run(_ name: String, usage: String, _ body: () throws -> JSONText?) -> Int32 {
        do {
            if let output = try body() { print(output.pretty()) }
            return 0
        } catch DeviceCommandError.usage(let message) {
            FileHandle.standardError.write(Data("attestctl \(name): \(message)\nusage: \(usage)\n".utf8))
            return 2
        } catch {
            FileHandle.standardError.write(Data("attestctl \(name): \(error)\n".utf8))
            return 1
        }
    }

    /// Standard padded base64 of `bytes` as a JSON string.
    static func base64(_ bytes: [UInt8]) -> JSONText { .string(Base64.encode(bytes)) }

    /// Decodes a base64 / base64url option value (padded or not; whitespace ignored, as ref_device.py).
    static func decodeBase64(_ text: String, option: String) throws -> [UInt8] {
        let compact = String(text.unicodeScalars.filter { !$0.properties.isWhitespace })
        guard let bytes = Base64.decode(compact) else { throw DeviceCommandError.usage("--\(option) is not base64") }
        return bytes
    }

    /// The environment named by `--env`.
    static func environment(_ text: String) throws -> AppAttestEnvironment {
        guard let environment = AppAttestEnvironment(rawValue: text) else {
            throw DeviceCommandError.usage("--env must be development or production, got \(text)")
        }
        return environment
    }

    /// The iOS 27 extension for `--ios27-ext VERSION [--validation-category HEX]`, or nil.
    static func ios27Extension(_ options: DeviceCommandOptions) throws -> IOS27Extension? {
        let category = try options.value("validation-category")
        guard let version = try options.value("ios27-ext") else {
            if category != nil { throw DeviceCommandError.usage("--validation-category needs --ios27-ext") }
            return nil
        }
        guard let category else { return IOS27Extension(bundleVersion: version) }
        guard let bytes = hexBytes(category), !bytes.isEmpty else {
            throw DeviceCommandError.usage("--validation-category must be hex bytes, e.g. 01000000")
        }
        return IOS27Extension(bundleVersion: version, validationCategory: bytes)
    }

    /// Bytes of an even-length hex string, or nil.
    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < digits.count {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// `NAME:VALUE` of a `--bind` option split at the first colon (the name must not be empty).
    static func boundField(_ text: String) throws -> (name: String, value: String) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
            throw DeviceCommandError.usage("expected NAME:VALUE, got \(text)")
        }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }

    /// The absolute, standardized form of `path` (like Python's os.path.abspath).
    static func absolutePath(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
