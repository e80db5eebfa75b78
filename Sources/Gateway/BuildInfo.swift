#if canImport(Glibc)
import Glibc
#endif

/// What was built: the version of `attest-gateway --version` and the source revision, exposed with the
/// heap allocator serving the process (`HeapAllocator.current`) as
/// `attest_gateway_build_info{version, revision, allocator} 1`.
///
/// The revision is the `ATTEST_GATEWAY_REVISION` environment variable at start when it holds a
/// plausible revision (1 to 64 characters of `[0-9A-Za-z._-]`; a packaging step or a Dockerfile sets
/// it from `git rev-parse --short HEAD`), else `unknown`: never an empty label.
public enum BuildInfo {
    /// The release version.
    public static let version = "0.1.0"

    /// The source revision, or `unknown`.
    public static let revision: String = {
        guard let raw = getenv("ATTEST_GATEWAY_REVISION") else { return "unknown" }
        return plausibleRevision(String(cString: raw)) ?? "unknown"
    }()

    /// `text` when it can be a revision label, else nil.
    static func plausibleRevision(_ text: String) -> String? {
        let ok = !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2E || b == 0x5F || b == 0x2D
        }
        return ok ? text : nil
    }

    /// The `attest_gateway_build_info` family.
    static var prometheusText: String {
        var out = "# HELP attest_gateway_build_info Version, source revision and heap allocator of the running gateway (always 1).\n"
        out += "# TYPE attest_gateway_build_info gauge\nattest_gateway_build_info"
        GatewayMetrics.appendLabels(&out, [("version", version), ("revision", revision), ("allocator", HeapAllocator.current)])
        out += " 1\n"
        return out
    }
}
