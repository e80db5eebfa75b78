import Foundation

/// A child process started by a test (redis-server, an upstream, curl, python3), killed when stopped.
///
/// Output goes to a log file in a temporary folder so that a failing test can show it.
public final class ChildProcess: @unchecked Sendable {  // mutable state guarded by `lock`
    private let process = Process()
    private let lock = NSLock()
    /// File that receives stdout (and stderr, unless it was separated).
    public let logFile: URL
    /// File that receives stderr when started with `separateStandardError`, else nil.
    public let errorFile: URL?

    /// Starts `executable` (looked up in PATH when not absolute) with `arguments`; with
    /// `separateStandardError`, stderr goes to its own file (`errorOutput`) and `output` holds stdout only.
    /// - Throws: when the executable cannot be found or started.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                currentDirectory: URL? = nil, separateStandardError: Bool = false) throws {
        let path = try ChildProcess.which(executable)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        logFile = FileManager.default.temporaryDirectory
            .appendingPathComponent("attest-test-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: logFile)
        process.standardOutput = handle
        if separateStandardError {
            let errors = logFile.deletingPathExtension().appendingPathExtension("stderr.log")
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: errors)
            errorFile = errors
        } else {
            process.standardError = handle
            errorFile = nil
        }
        process.standardInput = FileHandle.nullDevice
        try process.run()
        ChildProcess.running.add(process)
    }

    /// Every child started and not yet deinitialised, killed at exit if still running: a server held
    /// by a `static let` (a class's shared Redis, a TLS cluster) is never deinitialised, and before
    /// this its processes outlived the test run (cluster gossip costing CPU to every later run).
    private static let running = RunningChildren()

    /// The children `ChildProcess` started; the first `add` installs an `atexit` hook that sends
    /// SIGKILL to each one still running (only children not reaped yet: `isRunning` is false once
    /// Foundation has collected its exit status, so a reused PID is never signalled).
    private final class RunningChildren: @unchecked Sendable {  // `processes` and `hooked` guarded by `lock`
        private let lock = NSLock()
        private var processes: [ObjectIdentifier: Process] = [:]
        private var hooked = false

        func add(_ process: Process) {
            lock.lock(); defer { lock.unlock() }
            processes[ObjectIdentifier(process)] = process
            if !hooked {
                hooked = true
                atexit { ChildProcess.running.killAll() }
            }
        }

        func remove(_ process: Process) {
            lock.lock(); defer { lock.unlock() }
            processes[ObjectIdentifier(process)] = nil
        }

        func killAll() {
            lock.lock(); defer { lock.unlock() }
            for process in processes.values where process.isRunning { kill(process.processIdentifier, SIGKILL) }
            processes = [:]
        }
    }

    /// The child's process ID.
    public var pid: Int32 { process.processIdentifier }
    /// Whether the child is still running.
    public var isRunning: Bool { process.isRunning }

    /// Everything the child wrote so far (stdout only when stderr was separated).
    public var output: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// What the child wrote on stderr so far, when it was separated ("" otherwise).
    public var errorOutput: String { errorFile.flatMap { try? String(contentsOf: $0, encoding: .utf8) } ?? "" }

    /// Waits at most `timeout` seconds for the child to exit; its exit status, or nil when it is
    /// still running (the caller fails the test; the child is not killed here).
    public func waitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline { return nil }
            usleep(10_000)
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends `signal` (default SIGTERM) and waits for the child to exit (SIGKILL after `grace` seconds).
    public func stop(signal: Int32 = SIGTERM, grace: TimeInterval = 5) {
        lock.lock(); defer { lock.unlock() }
        guard process.isRunning else { return }
        kill(process.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }

    /// Waits for the child to exit by itself and returns its exit status.
    public func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        stop(signal: SIGKILL, grace: 1)
        ChildProcess.running.remove(process)
    }

    /// Full path of `name` in PATH (or `name` itself when it contains a slash).
    public static func which(_ name: String) throws -> String {
        if name.contains("/") { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        // `map(String.init)`: without it `+` picks an overload that turns each entry into [Character]
        // and interpolates it as "[\"/\", \"u\", ...]", so no executable was ever found.
        for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"] {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw ChildProcessError.notFound(name)
    }

    /// Runs a command to completion (in `currentDirectory` when given); returns exit status and
    /// combined output.
    public static func run(_ executable: String, _ arguments: [String], stdin: Data? = nil,
                           environment: [String: String]? = nil,
                           currentDirectory: URL? = nil) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try which(executable))
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        try process.run()
        if let stdin {
            input.fileHandleForWriting.write(stdin)
            try? input.fileHandleForWriting.close()
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// Full path of `name`, a tool `scripts/setup --tests` installs.
    /// - Throws: `ChildProcessError.notFound` when it is missing: a failed setup, so the test fails
    ///   (never skips).
    @discardableResult
    public static func require(_ name: String) throws -> String { try which(name) }

    /// Whether `name` is in PATH.
    public static func isAvailable(_ name: String) -> Bool { (try? which(name)) != nil }
}

/// Errors starting a child process.
public enum ChildProcessError: Error, CustomStringConvertible {
    /// The executable is not in PATH.
    case notFound(String)
    /// The child did not become ready in time; carries its output.
    case notReady(String)

    public var description: String {
        switch self {
        case .notFound(let name): return "\(name) not found in PATH (scripts/setup --tests installs it; .ci/run does)"
        case .notReady(let output): return "child process not ready: \(output)"
        }
    }
}
