import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation

/// `attestctl assert --key KEYFILE --app-id ID --counter N --challenge B64 --method M --target T
/// [--body STR | --body-file F] [--bind NAME:VALUE]... [--ios27-ext VERSION [--validation-category HEX]]`:
/// mints an assertion over the gateway's client-data binding v1 (challenge, method, target exactly
/// as sent, SHA-256 of the body, then each bound field `NAME:VALUE` in order; `--extra-field` is
/// accepted as in ref_device.py).
///
/// `attestctl assert-raw --key KEYFILE --app-id ID --counter N --client-data-b64 B64 [...]`: the same
/// over arbitrary client data.
///
/// Output (as ref_device.py): `{"keyId", "assertion", "clientData", "counter"}`, standard base64.
enum AssertCommand {
    static let usage = """
    attestctl assert --key KEYFILE --app-id TEAMID.bundle --counter N --challenge B64 --method M --target T \
    [--body STR | --body-file F] [--bind NAME:VALUE]... [--ios27-ext VERSION [--validation-category HEX]]
    """
    static let rawUsage = "attestctl assert-raw --key KEYFILE --app-id TEAMID.bundle --counter N --client-data-b64 B64 [--ios27-ext VERSION]"

    static func run(_ arguments: [String]) -> Int32 {
        DeviceCommand.run("assert", usage: usage) {
            let options = try DeviceCommandOptions(arguments, valued: ["key", "app-id", "counter", "challenge", "method", "target", "body",
                                                                       "body-file", "bind", "ios27-ext", "validation-category"],
                                                   aliases: ["extra-field": "bind"])
            let challenge = try DeviceCommand.decodeBase64(try options.required("challenge"), option: "challenge")
            let method = try options.required("method"), target = try options.required("target")
            let inline = try options.value("body"), file = try options.value("body-file")
            guard inline == nil || file == nil else { throw DeviceCommandError.usage("--body and --body-file are exclusive") }
            var body = Array((inline ?? "").utf8)
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else { throw DeviceCommandError.failed("cannot read \(file)") }
                body = Array(data)
            }
            let fields = try options.all("bind").map(DeviceCommand.boundField)
            let clientData = try ClientDataBinding.v1(challenge: challenge, method: method, target: target,
                                                      bodySHA256: AttestCrypto.SHA256.hash(body), boundFields: fields)
            return try mint(options, clientData: clientData)
        }
    }

    static func runRaw(_ arguments: [String]) -> Int32 {
        DeviceCommand.run("assert-raw", usage: rawUsage) {
            let options = try DeviceCommandOptions(arguments, valued: ["key", "app-id", "counter", "client-data-b64", "ios27-ext",
                                                                       "validation-category"])
            let clientData = try DeviceCommand.decodeBase64(try options.required("client-data-b64"), option: "client-data-b64")
            return try mint(options, clientData: clientData)
        }
    }

    private static func mint(_ options: DeviceCommandOptions, clientData: [UInt8]) throws -> JSONText {
        var device = try SoftwareDevice.load(from: try options.required("key"))
        guard let counter = try options.integer("counter", in: UInt32.min...UInt32.max) else {
            throw DeviceCommandError.usage("--counter is required")
        }
        let minted = try device.mintAssertion(appId: try options.required("app-id"), clientData: clientData,
                                              options: AssertionOptions(counter: counter, ios27Extension: try DeviceCommand.ios27Extension(options)))
        return .object([
            ("keyId", DeviceCommand.base64(minted.keyId)),
            ("assertion", DeviceCommand.base64(minted.assertionObject)),
            ("clientData", DeviceCommand.base64(minted.clientData)),
            ("counter", .integer(Int64(minted.counter))),
        ])
    }
}
