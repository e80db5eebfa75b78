// attestctl: command-line tools around the App Attest verifier.
// One file per subcommand; this file only dispatches.
import Foundation

let usage = """
usage: attestctl <command> [options]

commands:
  verify [--root PEM] [--now] FILE|DIR...   verify test vectors (shared/vectors JSON schema); one JSON line each
  inspect BASE64|FILE                       decode an attestation or assertion (base64, raw CBOR or vector JSON)
  bench [--seconds N]                       assertion and attestation verifications per second vs openssl speed
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
case "demo-upstream": status = DemoUpstreamCommand.run(rest)
case "-h", "--help", "help":
    print(usage)
    status = 0
default:
    FileHandle.standardError.write(Data("attestctl: unknown command \(command)\n\(usage)\n".utf8))
    status = 2
}
exit(status)
