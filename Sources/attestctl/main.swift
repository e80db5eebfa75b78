// attestctl: command-line tools around the App Attest verifier.
// One file per subcommand; this file only dispatches.
import Foundation

let usage = """
usage: attestctl <command> [options]

commands:
  verify [--root PEM] [--now] FILE|DIR...   verify test vectors (shared/vectors JSON schema); one JSON line each
  inspect BASE64|FILE                       decode an attestation or assertion (base64, raw CBOR or vector JSON)
  bench [--seconds N]                       assertion and attestation verifications per second vs openssl speed
  bench-prepare keys|assertions|attestations ...
                                            bulk-prepare valid evidence for bench/run (see BenchPrepareCommand)
  ca --out DIR                              create (or reuse) the TEST App Attest CA (ref_device.py layout)
  keygen --out KEYFILE [--force]            new P-256 device key (PKCS#8 PEM, 0600)
  attest --ca DIR --key KEYFILE --app-id ID --env development|production --challenge B64 [--ios27-ext V]
                                            mint an attestation object (JSON: keyId, attestation, clientDataHash)
  assert --key KEYFILE --app-id ID --counter N --challenge B64 --method M --target T [--body S|--body-file F]
         [--bind NAME:VALUE]...            mint an assertion over client data v1 (JSON: keyId, assertion, clientData, counter)
  assert-raw --key KEYFILE --app-id ID --counter N --client-data-b64 B64
                                            mint an assertion over arbitrary client data
  simulate --gateway URL --app-id ID --ca DIR [--env E] [--route R] [--requests N] [--prefix P] [--key F]
                                            the whole client side against a running gateway: challenge,
                                            attestation, protected requests, a replay (simulate --help)
  simulate --device-key|--ios-unsupported --gateway URL --app-id ID [--route R] [--requests N]
                                            the same for a device without App Attest: register a device
                                            key (tier device), signed requests, a replay
  keys list|show|revoke|delete --store URL ...
                                            operator actions on the key records in the gateway's Redis store
                                            (attestctl keys --help; password from ATTESTCTL_REDIS_PASSWORD,
                                            REDISCLI_AUTH or --password-file, never on the command line)
  risk refresh --key-id B64 --config gateway.yaml
                                            force one exchange of the key's receipt with Apple's data server
  demo-upstream [--listen HOST:PORT]        a small backend that echoes what reached it (quickstart)
"""

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else {
    print(usage)
    exit(2)
}
let rest = Array(arguments.dropFirst())
let status: Int32
switch command {
case "verify": status = VerifyCommand.run(rest)
case "inspect": status = InspectCommand.run(rest)
case "bench": status = BenchCommand.run(rest)
case "bench-prepare": status = BenchPrepareCommand.run(rest)
case "ca": status = CACommand.run(rest)
case "keygen": status = KeygenCommand.run(rest)
case "attest": status = AttestCommand.run(rest)
case "assert": status = AssertCommand.run(rest)
case "assert-raw": status = AssertCommand.runRaw(rest)
case "simulate": status = SimulateCommand.run(rest)
case "demo-upstream": status = DemoUpstreamCommand.run(rest)
case "keys": status = KeysCommand.run(rest)
case "risk": status = RiskCommand.run(rest)
case "-h", "--help", "help":
    print(usage)
    status = 0
default:
    FileHandle.standardError.write(Data("attestctl: unknown command \(command)\n\(usage)\n".utf8))
    status = 2
}
exit(status)
