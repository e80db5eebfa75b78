import AppAttest
import AttestCrypto
import AttestSimulator

/// `attestctl attest --ca DIR --key KEYFILE --app-id ID --env development|production --challenge B64
/// [--ios27-ext VERSION [--validation-category HEX]] [--leaf-days N] [--not-before ISO]
/// [--client-data-hash B64]`: mints an attestation object for the key under the test CA.
///
/// clientDataHash = SHA-256(challenge bytes) unless `--client-data-hash` is given. Leaf validity:
/// now - 1 h .. now + N days (default 3), or NOT-BEFORE .. NOT-BEFORE + N days.
/// Output (as ref_device.py): `{"keyId", "attestation", "clientDataHash"}`, standard base64.
enum AttestCommand {
    static let usage = """
    attestctl attest --ca DIR --key KEYFILE --app-id TEAMID.bundle --env development|production --challenge B64 \
    [--ios27-ext VERSION [--validation-category HEX]] [--leaf-days N] [--not-before ISO] [--client-data-hash B64]
    """

    static func run(_ arguments: [String]) -> Int32 {
        DeviceCommand.run("attest", usage: usage) {
            let options = try DeviceCommandOptions(arguments, valued: ["ca", "key", "app-id", "env", "challenge", "ios27-ext",
                                                                       "validation-category", "leaf-days", "not-before",
                                                                       "client-data-hash"])
            let ca = try TestCA.load(directory: try options.required("ca"))
            let device = try SoftwareDevice.load(from: try options.required("key"))
            let appId = try options.required("app-id")
            let environment = try DeviceCommand.environment(try options.required("env"))
            let challenge = try DeviceCommand.decodeBase64(try options.required("challenge"), option: "challenge")
            var attestationOptions = AttestationOptions(ios27Extension: try DeviceCommand.ios27Extension(options))
            if let days = try options.value("leaf-days") {
                guard let value = Double(days), value.isFinite, value > 0, value <= 36_500 else {
                    throw DeviceCommandError.usage("--leaf-days must be a positive number of days")
                }
                attestationOptions.leafLifetime = Int64((value * 86_400).rounded())
            }
            if let text = try options.value("not-before") {
                guard let seconds = CivilTime.parseISO8601(text) else {
                    throw DeviceCommandError.usage("--not-before must be ISO 8601 UTC, e.g. 2026-01-02T03:04:05Z")
                }
                attestationOptions.notBefore = seconds
            }
            let clientDataHash = try options.value("client-data-hash").map { try DeviceCommand.decodeBase64($0, option: "client-data-hash") }
                ?? SHA256.hash(challenge)
            let minted = try device.mintAttestation(ca: ca, appId: appId, environment: environment, clientDataHash: clientDataHash,
                                                    options: attestationOptions)
            return .object([
                ("keyId", DeviceCommand.base64(minted.keyId)),
                ("attestation", DeviceCommand.base64(minted.attestationObject)),
                ("clientDataHash", DeviceCommand.base64(minted.clientDataHash)),
            ])
        }
    }
}
