// attest-fuzz: coverage-guided fuzzing harnesses for every parser of attest-gateway that reads
// untrusted bytes (DESIGN.md section 3: "parsers are strict and fuzzed"). See Fuzz/README.md.
//
// Two builds of the same sources:
// - plain `swift build`: a replay tool. `attest-fuzz NAME PATH...` runs every file (folders are
//   walked) through harness NAME, checks its invariants, and exits 0 when none broke - a
//   regression runner for corpora and crash files. Other commands: `list`, `seeds`.
// - `-Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING` (scripts/fuzz): libFuzzer. The harness
//   is the first argument (or ATTEST_FUZZ_HARNESS); every other argument goes to libFuzzer.
//
// A broken invariant is a crash on purpose (`Invariant.fail`), so libFuzzer records the input.
import Foundation

@main
struct AttestFuzz {
    static func main() {
        var arguments = CommandLine.arguments
        let program = arguments.removeFirst()
        if arguments.first == "list" {
            for harness in Harnesses.all { print("\(harness.name)\t\(harness.summary)") }
            return
        }
        if arguments.first == "seeds" {
            exit(SeedCommand.run(Array(arguments.dropFirst())))
        }
        var name = getenv("ATTEST_FUZZ_HARNESS").map { String(cString: $0) }
        if let first = arguments.first, Harnesses.named(first) != nil {
            name = first
            arguments.removeFirst()
        }
        guard let name, let harness = Harnesses.named(name) else {
            printError("""
                usage: \(program) NAME [INPUT-FILE-OR-FOLDER...]   (NAME: \(Harnesses.all.map(\.name).joined(separator: ", ")))
                       \(program) list
                       \(program) seeds NAME OUTPUT-FOLDER [SHARED-VECTORS-FOLDER]

                """)
            exit(2)
        }
        Harnesses.selected = harness
        #if FUZZING
        exit(LibFuzzer.run(program: program, arguments: arguments))
        #else
        exit(Replay.run(harness, paths: arguments))
        #endif
    }
}
