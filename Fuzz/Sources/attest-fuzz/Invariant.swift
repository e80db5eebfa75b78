/// Invariant checks of the harnesses. A broken invariant must crash (so libFuzzer keeps the input
/// as a crash artifact, and the replay build exits non-zero); it never returns.
enum Invariant {
    /// Stops the process with `message` (SIGILL through `fatalError`).
    static func fail(_ harness: String, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
        fatalError("invariant broken [\(harness)]: \(message())", file: file, line: line)
    }

    /// Fails unless `condition` holds.
    @inline(__always)
    static func check(_ condition: Bool, _ harness: String, _ message: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
        if !condition { fail(harness, message(), file: file, line: line) }
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Writes `text` to standard error.
func printError(_ text: String) {
    var bytes = Array(text.utf8)
    _ = write(2, &bytes, bytes.count)
}

/// `ATTEST_FUZZ_VERBOSE=1`: harnesses print what they decided (replay only; slow).
enum Verbose {
    static let enabled: Bool = getenv("ATTEST_FUZZ_VERBOSE") != nil

    static func note(_ harness: String, _ text: @autoclosure () -> String) {
        if enabled { print("  [\(harness)] \(text())") }
    }
}
