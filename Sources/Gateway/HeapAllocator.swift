#if canImport(Glibc)
import Glibc
#endif

/// Which heap allocator serves this process's `malloc`, as operators see it in the `started` log line
/// and in `attest_gateway_build_info{allocator}`: `mimalloc 2.0.9` (name and version), `jemalloc`,
/// `tcmalloc` or `glibc`.
///
/// The attest-gateway executable links mimalloc (the `CMimalloc` system library, Debian's
/// `libmimalloc2.0`), which then answers every `malloc` and `free` of the process: the Swift runtime's,
/// OpenSSL's, nghttp2's and hiredis's. The library modules never link it, so test processes that load
/// them run on glibc's allocator. This type finds out at run time rather than assuming the build: it
/// looks the allocators' own entry points up in the process (`dlsym(RTLD_DEFAULT, ...)`) and, for
/// mimalloc, checks that a fresh `malloc` block lies in mimalloc's heap
/// (`mi_is_in_heap_region`), so a mimalloc that is loaded but not answering `malloc` (another
/// allocator preloaded ahead of it) is not reported as serving it. Why mimalloc: README, "Heap
/// allocator".
public enum HeapAllocator {
    /// The allocator serving `malloc` in this process, probed once.
    public static let current: String = probe()

    /// Looks the allocators up; see the type's documentation.
    static func probe() -> String {
        if let version = dlsym(nil, "mi_version"), let inHeap = dlsym(nil, "mi_is_in_heap_region") {
            let mimallocVersion = unsafeBitCast(version, to: (@convention(c) () -> Int32).self)
            let isInHeap = unsafeBitCast(inHeap, to: (@convention(c) (UnsafeRawPointer?) -> Bool).self)
            if let block = malloc(64) {
                let served = isInHeap(UnsafeRawPointer(block))
                free(block)
                if served { return "mimalloc " + versionText(mimallocVersion()) }
            }
        }
        if dlsym(nil, "mallctl") != nil { return "jemalloc" }
        if dlsym(nil, "tc_malloc") != nil { return "tcmalloc" }
        return "glibc"
    }

    /// mimalloc's `mi_version()` (`MI_MALLOC_VERSION`: 209 for 2.0.9, 212 for 2.1.2) as `major.minor.patch`.
    static func versionText(_ version: Int32) -> String {
        "\(version / 100).\(version / 10 % 10).\(version % 10)"
    }
}
