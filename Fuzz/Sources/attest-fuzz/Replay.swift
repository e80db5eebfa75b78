import Foundation

/// The plain build's mode: runs files (folders walked recursively, sorted) through a harness.
enum Replay {
    static func run(_ harness: Harness, paths: [String]) -> Int32 {
        guard !paths.isEmpty else {
            printError("attest-fuzz \(harness.name): give input files or folders (this build has no libFuzzer; see scripts/fuzz)\n")
            return 2
        }
        var files: [String] = []
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                printError("attest-fuzz: \(path): no such file or folder\n")
                return 2
            }
            if isDirectory.boolValue {
                let base = URL(fileURLWithPath: path)
                let found = (FileManager.default.enumerator(atPath: path)?.compactMap { $0 as? String } ?? [])
                    .map { base.appendingPathComponent($0).path }
                    .filter { var d: ObjCBool = false; return FileManager.default.fileExists(atPath: $0, isDirectory: &d) && !d.boolValue }
                files += found.sorted()
            } else {
                files.append(path)
            }
        }
        var total = 0
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else {
                printError("attest-fuzz: cannot read \(file)\n")
                return 2
            }
            if ProcessInfo.processInfo.environment["ATTEST_FUZZ_VERBOSE"] != nil { print("running \(file) (\(data.count) bytes)") }
            harness.run([UInt8](data))
            total += 1
        }
        print("attest-fuzz \(harness.name): \(total) inputs, every invariant held")
        return 0
    }
}
