#if FUZZING
import Foundation

// libFuzzer's driver (compiler-rt FuzzerInterface.h): runs the fuzzing loop with our callback. The
// program keeps its own `main` (SwiftPM links executables with `--defsym main=<module>_main`), so
// libFuzzer's `main` is not used; `LLVMFuzzerRunDriver` is its documented replacement.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The libFuzzer entry point (also exported under its usual name for tools that look for it).
@_cdecl("LLVMFuzzerTestOneInput")
public func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    Harnesses.selected?.run(bytes)
    return 0
}

enum LibFuzzer {
    /// Hands `arguments` (the harness name removed) to libFuzzer.
    static func run(program: String, arguments: [String]) -> Int32 {
        let all = [program] + arguments
        var pointers: [UnsafeMutablePointer<CChar>?] = all.map { strdup($0) } + [nil]
        var argc = Int32(all.count)
        return pointers.withUnsafeMutableBufferPointer { buffer in
            var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv) { data, size in LLVMFuzzerTestOneInput(data, size) }
        }
    }
}
#endif
