import AttestSimulator
import Foundation

/// `attestctl keygen --out KEYFILE [--force]`: a new P-256 device key, written as unencrypted
/// PKCS#8 PEM with mode 0600 (ref_device.py `keygen` format). An existing file is kept unless
/// `--force` is given.
///
/// Output: `{"keyId": base64}` (keyId = SHA-256 of the uncompressed public point).
enum KeygenCommand {
    static let usage = "attestctl keygen --out KEYFILE [--force]"

    static func run(_ arguments: [String]) -> Int32 {
        DeviceCommand.run("keygen", usage: usage) {
            let options = try DeviceCommandOptions(arguments, valued: ["out"], flags: ["force"])
            let path = try options.required("out")
            if !options.flag("force") && FileManager.default.fileExists(atPath: path) {
                throw DeviceCommandError.failed("\(path) already exists (use --force to replace it)")
            }
            let device = try SoftwareDevice()
            try device.save(to: path, replace: options.flag("force"))
            return .object([("keyId", DeviceCommand.base64(device.keyId))])
        }
    }
}
