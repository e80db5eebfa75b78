import AttestSimulator

/// `attestctl ca --out DIR`: creates the TEST App Attest CA in DIR, or reuses the one there
/// (same folder layout as shared/tools/ref_device.py `ca`; a partial folder is an error).
///
/// Output (JSON, as ref_device.py): `{"dir": absolute path, "root": RFC 4514 subject,
/// "intermediate": RFC 4514 subject}`. Exit 0, 1 on error, 2 on usage errors.
enum CACommand {
    static let usage = "attestctl ca --out DIR"

    static func run(_ arguments: [String]) -> Int32 {
        DeviceCommand.run("ca", usage: usage) {
            let options = try DeviceCommandOptions(arguments, valued: ["out"])
            let directory = try options.required("out")
            let ca = try TestCA.loadOrCreate(directory: directory)
            return .object([
                ("dir", .string(DeviceCommand.absolutePath(directory))),
                ("root", .string(ca.root.subject)),
                ("intermediate", .string(ca.intermediate.subject)),
            ])
        }
    }
}
