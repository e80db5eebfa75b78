// attest-gateway: the App Attest enforcing reverse proxy (thin executable over the Gateway module).
// mimalloc serves this process's malloc (README, "Heap allocator"); importing links it.
import CMimalloc
import Dispatch
import Foundation
import Gateway
import GatewayConfig
import GatewayRules
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

let usage = """
    usage: attest-gateway --config FILE        run the gateway
           attest-gateway check-config FILE    validate FILE: every problem with its YAML path; exit 0 if it loads
           attest-gateway --version

    Signals: SIGTERM / SIGINT drain in-flight requests (timeouts.drain), then exit 0; a second one exits at once.
             SIGHUP reloads the configuration file and the TLS certificates (an invalid file keeps the
             running configuration; see the config_reloaded / config_reload_failed line).
             SIGUSR1 flushes the access log (logs go to standard output and error: nothing to reopen).
             SIGUSR2 and SIGPIPE are ignored.
    Logs: one JSON line per request on standard output; start-up, lifecycle and start-up failure lines
    on standard error, each a JSON object with `ts`, `type` and `level`.

    """

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(code)
}

/// Least severe lifecycle event written (`log.level`, as an index into `LogConfiguration.Level.allCases`);
/// set when the configuration is loaded and by each reload, read from any thread.
let minimumLevelIndex = Atomic<Int>(LogConfiguration.Level.allCases.firstIndex(of: .info)!)

func setMinimumLevel(_ level: LogConfiguration.Level) {
    minimumLevelIndex.store(LogConfiguration.Level.allCases.firstIndex(of: level)!, ordering: .relaxed)
}

/// One JSON line on standard error (lifecycle events, not access lines), when `level` is at least
/// `log.level`: `ts` (UTC, milliseconds), `type`, `level`, then `fields`; values are escaped by the
/// one JSON writer (control characters included). `more` adds structured members (arrays, numbers)
/// after `fields`.
func event(_ name: String, level: LogConfiguration.Level = .info, _ fields: [(String, String)] = [],
           more: ((inout JSONWriter) -> Void)? = nil) {
    guard level >= LogConfiguration.Level.allCases[minimumLevelIndex.load(ordering: .relaxed)] else { return }
    var json = JSONWriter(capacity: 256)
    json.beginObject()
    json.field("ts", LogTimestamp.now())
    json.field("type", name)
    json.field("level", level.rawValue)
    for (key, value) in fields { json.field(key, value) }
    more?(&json)
    json.endObject()
    lifecycleOutput.write(json.bytes + [0x0A])
}

/// Where `event` lines go: a writer queue, so that a stalled standard error never blocks an event
/// loop or a signal handler. Flushed (bounded) before every exit after start.
let lifecycleOutput = LifecycleOutput()

/// Exits with `code` once the queued lifecycle lines are written, or after `wait` at most.
func exitAfterLifecycleLines(_ code: Int32, wait: DispatchTimeInterval = .seconds(2)) -> Never {
    lifecycleOutput.flush(waitingAtMost: wait)
    exit(code)
}

/// A lifecycle line the runtime reports (`store_unavailable`, `store_recovered`, `upstream_*`,
/// `receipt_*`, ...): a warning, but for a recovery (`info`); counts and durations (`duration_ms`,
/// `connections`, `suppressed`) written as JSON numbers, as in the lines this file writes itself.
@Sendable func runtimeEvent(_ name: String, _ fields: [(String, String)]) {
    let numeric: Set<String> = ["duration_ms", "connections", "suppressed"]
    let texts = fields.filter { !numeric.contains($0.0) || Int($0.1) == nil }
    event(name, level: RuntimeEventLevel.of(name, fields), texts, more: { json in
        for (key, value) in fields where numeric.contains(key) {
            if let number = Int(value) { json.field(key, number) }
        }
    })
}

/// The start-up failure line on standard error (whatever `log.level`), then exit 1: `ts`, `type`
/// `start_failed`, `level` `error`, `detail`, `config` (the file) and, for a file that does not load,
/// `issues`: every problem with its YAML `path`, `severity`, `message`, `line` and `column`.
func startFailed(_ detail: String, config: String, issues: [ConfigIssue] = []) -> Never {
    var json = JSONWriter(capacity: 256)
    json.beginObject()
    json.field("ts", LogTimestamp.now())
    json.field("type", "start_failed")
    json.field("level", LogConfiguration.Level.error.rawValue)
    json.field("detail", detail)
    json.field("config", config)
    if !issues.isEmpty { ConfigIssue.write(issues, named: "issues", withSeverity: true, into: &json) }
    json.endObject()
    lifecycleOutput.flush(waitingAtMost: .seconds(2))  // the config_warning lines before it
    FileHandle.standardError.write(Data(json.bytes + [0x0A]))
    exit(1)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard let first = arguments.first else { fail(usage) }

switch first {
case "--version", "version":
    print("attest-gateway \(BuildInfo.version) (\(BuildInfo.revision))")
    exit(0)
case "--help", "-h", "help":
    print(usage, terminator: "")
    exit(0)
case "check-config":
    guard arguments.count == 2 else { fail(usage) }
    let report = ConfigCheckReport.check(path: arguments[1], checkFiles: { TLSFileChecker.check($0) },
                                         resolveHost: { UpstreamHostChecker.problem(resolving: $0) })
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
// The checks `check-config` and a reload run, TLS files included (expiry, chain order, key match):
// a file `check-config` refuses never starts (names that do not resolve stay warnings, as there).
switch ConfigCheckReport.validate(path: path, checkFiles: { TLSFileChecker.check($0) }) {
case .success(let checked): loaded = checked
case .failure(let error):
    startFailed("\(path) does not load; nothing started", config: path, issues: error.issues + error.warnings)
}
setMinimumLevel(loaded.configuration.log.level)
for warning in loaded.warnings { event("config_warning", level: .warning, [("detail", warning.description)]) }

// Signals (DESIGN.md section 10): no signal an operator commonly sends ends the process except
// SIGTERM / SIGINT, which drain. Every handler runs on the main queue: in top-level code they are
// main-actor isolated, and Swift 6 checks that at run time (a handler on another queue traps with
// SIGILL on the first signal). The dispositions are set to "ignore" first, so that a signal
// arriving before its source is ready cannot kill the process.
for sig in [SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE] { signal(sig, SIG_IGN) }
nonisolated(unsafe) var draining = false  // only touched on the main queue
// Set once the runtime started, before `dispatchMain()` serves the main queue: the handlers run only
// then. The signals are set up before the runtime starts: once the listeners are bound (and the
// `started` line or /readyz says so) a SIGTERM must drain, never kill the process (default action)
// nor be lost (ignored before its source exists).
nonisolated(unsafe) var activeRuntime: GatewayRuntime?
var sources: [DispatchSourceSignal] = []

// SIGTERM / SIGINT: drain on the first, exit at once on the second.
for sig in [SIGTERM, SIGINT] {
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
    source.setEventHandler {
        if draining {
            event("stopped", [("reason", "second signal")],
                  more: { $0.field("requests_cut", activeRuntime?.requestsCutByDrain ?? 0) })
            exitAfterLifecycleLines(1, wait: .milliseconds(500))
        }
        draining = true
        event("draining", [("signal", sig == SIGTERM ? "SIGTERM" : "SIGINT")])
        guard let runtime = activeRuntime else { exitAfterLifecycleLines(0) }
        runtime.shutdown {
            // Requests still in progress when timeouts.drain ran out were cut by the gateway (their
            // access lines say "cut": "drain_deadline").
            let cut = runtime.requestsCutByDrain
            // A stalled standard output held the last access lines past the bounded final flush.
            let unflushed = runtime.accessLogUnflushedAtStop
            let dropped = lifecycleOutput.dropped
            event("stopped", [("reason", cut == 0 ? "drained" : "drain deadline")], more: {
                $0.field("requests_cut", cut)
                if unflushed { $0.field("access_log", "unflushed") }
                if dropped > 0 { $0.field("lifecycle_lines_dropped", dropped) }
            })
            exitAfterLifecycleLines(0)
        }
    }
    source.resume()
    sources.append(source)
}

// SIGHUP: reload the configuration and the TLS certificates (a bad file keeps the running one).
let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .main)
hangUp.setEventHandler {
    guard !draining, let runtime = activeRuntime else {
        event("config_reload_skipped", level: .warning, [("reason", draining ? "draining" : "starting")])
        return
    }
    let report = runtime.reload()
    if report.succeeded { setMinimumLevel(runtime.loaded.configuration.log.level) }
    event(report.eventName, level: report.succeeded ? (report.restartRequired.isEmpty ? .info : .warning) : .error,
          more: { report.write(into: &$0) })
}
hangUp.resume()
sources.append(hangUp)

// SIGUSR1: the logrotate signal. Access lines go to standard output and lifecycle lines to standard
// error (never to files the gateway opens), so there is nothing to reopen: flush, and say so. The
// flush is only asked for, never waited on: every signal handler runs on the main queue, and a wait
// on a stalled output would hold up SIGHUP and SIGTERM behind it.
let user1 = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: .main)
user1.setEventHandler {
    activeRuntime?.flushLogs()
    event("log_reopen", [("detail", "logs go to standard output and standard error; nothing to reopen (rotate them where they are collected)")])
}
user1.resume()
sources.append(user1)
// SIGUSR2 and SIGPIPE stay ignored (SIG_IGN above).
let runtime: GatewayRuntime
let listeners: GatewayRuntime.Listeners
do {
    runtime = try GatewayRuntime(loaded: loaded, events: runtimeEvent)
    listeners = try runtime.start()
} catch {
    startFailed("cannot start: \(error)", config: path)
}

let config = loaded.configuration
event("started", [
    ("listen", listeners.data.map(\.address).joined(separator: ",")),
    ("admin", listeners.admin?.address ?? "none"),
    ("store", config.store.description),
    ("allocator", HeapAllocator.current),
], more: { json in
    // Counts are JSON numbers, as in the other lifecycle lines (`stopped`'s `requests_cut`).
    json.field("routes", config.routes.count)
    json.field("pid", Int(getpid()))
})

activeRuntime = runtime

runtime.storeWarnings { warnings in
    for warning in warnings { event("store_warning", level: .warning, [("detail", warning)]) }
}

// `bench/instructions` runs the gateway under valgrind, which dies when `dispatchMain()` lets
// libdispatch end the main thread and park it in a thread-specific-data destructor (valgrind 3.19).
// With ATTEST_GATEWAY_MAIN_RUNLOOP set, Foundation's run loop serves the main queue instead: the same
// signal handlers on the same queue. Production leaves it unset.
if getenv("ATTEST_GATEWAY_MAIN_RUNLOOP") != nil { RunLoop.main.run() }
dispatchMain()
