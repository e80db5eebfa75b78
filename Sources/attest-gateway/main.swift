// attest-gateway: the App Attest enforcing reverse proxy (thin executable over the Gateway module).
import Dispatch
import Foundation
import Gateway
import GatewayConfig
import GatewayRules
#if canImport(Glibc)
import Glibc
#endif

let usage = """
    usage: attest-gateway --config FILE        run the gateway
           attest-gateway check-config FILE    validate FILE: every problem with its YAML path; exit 0 if it loads
           attest-gateway --version

    Signals: SIGTERM / SIGINT drain in-flight requests (timeouts.drain), then exit 0; a second one exits at once.
    Logs: one JSON line per request on standard output; start-up and lifecycle lines on standard error.

    """

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(code)
}

/// Least severe lifecycle event written (`log.level`); set once the configuration is loaded.
nonisolated(unsafe) var minimumLevel = LogConfiguration.Level.info  // written once before any concurrent use

/// One JSON line on standard error (lifecycle events, not access lines), when `level` is at least
/// `log.level`; values are escaped by the one JSON writer (control characters included).
func event(_ name: String, level: LogConfiguration.Level = .info, _ fields: [(String, String)] = []) {
    guard level >= minimumLevel else { return }
    var json = JSONWriter(capacity: 256)
    json.beginObject()
    json.field("type", name)
    json.field("level", level.rawValue)
    for (key, value) in fields { json.field(key, value) }
    json.endObject()
    FileHandle.standardError.write(Data(json.bytes + [0x0A]))
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let first = arguments.first else { fail(usage) }

switch first {
case "--version", "version":
    print("attest-gateway 0.1.0")
    exit(0)
case "--help", "-h", "help":
    print(usage, terminator: "")
    exit(0)
case "check-config":
    guard arguments.count == 2 else { fail(usage) }
    let report = ConfigCheckReport.check(path: arguments[1], checkFiles: { TLSFileChecker.check($0) })
    print(report.standardOutput, terminator: "")
    FileHandle.standardError.write(Data(report.standardError.utf8))
    exit(report.exitCode)
case "--config", "-c":
    guard arguments.count == 2 else { fail(usage) }
default:
    if first.hasPrefix("--config=") {
        arguments = ["--config", String(first.dropFirst("--config=".count))]
    } else {
        fail("unknown argument \(first)\n" + usage)
    }
}

let path = arguments[1]
let loaded: LoadedConfiguration
do {
    loaded = try GatewayConfiguration.load(path: path)
} catch {
    let report = ConfigCheckReport(error: error, source: path)
    FileHandle.standardError.write(Data(report.standardError.utf8))
    fail("attest-gateway: \(path) does not load; nothing started", code: 1)
}
minimumLevel = loaded.configuration.log.level
for warning in loaded.warnings { event("config_warning", level: .warning, [("detail", warning.description)]) }

// Signals: drain on the first SIGTERM/SIGINT, exit at once on the second. Set up before the runtime
// starts: once the listeners are bound (and the `started` line or /readyz says so), a SIGTERM must
// drain, never kill the process (default action) nor be lost (ignored before its source exists).
signal(SIGTERM, SIG_IGN)
signal(SIGINT, SIG_IGN)
signal(SIGPIPE, SIG_IGN)
// The handlers run on the main queue: in top-level code they are main-actor isolated, and Swift 6
// checks that at run time (a handler on another queue traps with SIGILL on the first signal). They
// run once `dispatchMain()` serves the main queue, so after `activeRuntime` is set.
nonisolated(unsafe) var draining = false  // only touched on the main queue
nonisolated(unsafe) var activeRuntime: GatewayRuntime?  // set once below, before dispatchMain()
var sources: [DispatchSourceSignal] = []
for sig in [SIGTERM, SIGINT] {
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
    source.setEventHandler {
        if draining {
            event("stopped", [("reason", "second signal")])
            exit(1)
        }
        draining = true
        event("draining", [("signal", sig == SIGTERM ? "SIGTERM" : "SIGINT")])
        guard let runtime = activeRuntime else { exit(0) }
        runtime.shutdown {
            event("stopped", [("reason", "drained")])
            exit(0)
        }
    }
    source.resume()
    sources.append(source)
}

let runtime: GatewayRuntime
let listeners: GatewayRuntime.Listeners
do {
    runtime = try GatewayRuntime(loaded: loaded, events: { name, fields in event(name, level: .warning, fields) })
    listeners = try runtime.start()
} catch {
    fail("attest-gateway: cannot start: \(error)", code: 1)
}

let config = loaded.configuration
event("started", [
    ("listen", listeners.data.map(\.address).joined(separator: ",")),
    ("admin", listeners.admin?.address ?? "none"),
    ("store", config.store.description),
    ("routes", String(config.routes.count)),
    ("pid", String(getpid())),
])

activeRuntime = runtime

runtime.storeWarnings { warnings in
    for warning in warnings { event("store_warning", level: .warning, [("detail", warning)]) }
}

dispatchMain()
