// swift-tools-version:6.0
// attest-gateway: an App Attest enforcing reverse proxy. Module layout: ../shared/DESIGN.md section 6.
import PackageDescription

let package = Package(
    name: "attest-gateway",
    // Apple platforms matter for the AttestClient product only (the gateway is Linux): App Attest and
    // CryptoKit need iOS 14 / macOS 11 / tvOS 15 / watchOS 9.
    platforms: [.iOS(.v14), .macOS(.v11), .tvOS(.v15), .watchOS(.v9)],
    products: [
        .executable(name: "attest-gateway", targets: ["attest-gateway"]),
        .executable(name: "attestctl", targets: ["attestctl"]),
        .library(name: "AppAttest", targets: ["AppAttest"]),
        // The app side of every flow (DESIGN.md section 9): what an iOS app adds as one dependency.
        .library(name: "AttestClient", targets: ["AttestClient"]),
    ],
    targets: [
        // One system-library target per C library from Debian (pkg-config finds flags).
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        // mimalloc, the gateway binary's heap allocator (README, "Heap allocator"): overrides malloc/free
        // for the whole process when linked; only the attest-gateway executable links it.
        .systemLibrary(name: "CMimalloc", providers: [.apt(["libmimalloc-dev"])]),
        // Linux epoll header (sys/epoll.h is not in Swift's Glibc module): the event loops' poller.
        .systemLibrary(name: "CEpoll"),

        // Rules two modules need, written once (DESIGN.md section 6): request-target normal form, URL
        // grammars, environment names, JSON writing. A leaf: no dependencies.
        .target(name: "GatewayRules"),

        // The only Swift face of libcrypto.
        .target(name: "AttestCrypto", dependencies: ["COpenSSL"]),
        // Pure verifier: no sockets, files, clock or store.
        .target(name: "AppAttest", dependencies: ["AttestCrypto", "GatewayRules"]),
        // Software device and test CA minting Apple-format objects under a test root.
        .target(name: "AttestSimulator", dependencies: ["AppAttest", "AttestCrypto", "GatewayRules"]),

        // The client SDK (DESIGN.md section 9): platform-neutral logic behind small protocols; DeviceCheck,
        // CryptoKit and Keychain adapters where those exist. AttestCrypto (OpenSSL) only on Linux, so the
        // Apple build carries no OpenSSL.
        .target(name: "AttestClient", dependencies: [.target(name: "AttestCrypto", condition: .when(platforms: [.linux]))]),
        // The SDK's example client: only AttestClient's public API, plus App Attest played by the simulator.
        .executableTarget(name: "attest-client-example", dependencies: ["AttestClient", "AttestSimulator", "AppAttest", "AttestCrypto"]),

        // The I/O runtime both protocols and the Redis store share: event loops, poller, sockets,
        // addresses, timers, clock, the TLS transport.
        .target(name: "GatewayIO", dependencies: ["GatewayRules", "COpenSSL", "CEpoll"]),
        // State: store protocol + memory store; hiredis store living in the event loops.
        .target(name: "GatewayStore", dependencies: ["GatewayRules"]),
        .target(name: "GatewayRedis", dependencies: ["GatewayStore", "GatewayIO", "GatewayRules", "CHiredis"]),
        // Proxy core: HTTP/1.1, HTTP/2, upstream pool. Knows nothing of App Attest.
        .target(name: "GatewayHTTP", dependencies: ["GatewayIO", "GatewayRules", "CNghttp2", "COpenSSL"]),
        // YAML -> raw -> validated -> compiled route table.
        .target(name: "GatewayConfig", dependencies: ["GatewayRules", "CYAML"]),
        // Composition.
        .target(name: "Gateway", dependencies: [
            "AppAttest", "AttestCrypto", "GatewayRules", "GatewayStore", "GatewayRedis", "GatewayIO", "GatewayHTTP", "GatewayConfig",
        ]),

        .executableTarget(name: "attest-gateway", dependencies: ["Gateway", "GatewayConfig", "GatewayRules", "CMimalloc"]),
        .executableTarget(name: "attestctl", dependencies: ["Gateway", "AttestSimulator", "AppAttest", "AttestCrypto", "GatewayRules", "GatewayIO", "GatewayHTTP", "GatewayStore", "GatewayRedis"]),
        // Fuzzing harnesses (Fuzz/README.md): replays inputs in a plain build; libFuzzer with -DFUZZING (scripts/fuzz).
        .executableTarget(name: "attest-fuzz", dependencies: ["AppAttest", "AttestCrypto", "AttestSimulator", "GatewayRules", "GatewayIO", "GatewayHTTP", "GatewayConfig", "GatewayRedis"],
                          path: "Fuzz/Sources/attest-fuzz"),

        // Helpers shared by test targets: locating ../shared, free ports, child processes (redis-server, upstreams).
        .target(name: "GatewayTestSupport", dependencies: ["GatewayStore", "GatewayRules"], path: "Tests/GatewayTestSupport"),

        .testTarget(name: "GatewayRulesTests", dependencies: ["GatewayRules"]),
        .testTarget(name: "AttestCryptoTests", dependencies: ["AttestCrypto", "GatewayTestSupport"]),
        .testTarget(name: "AppAttestTests", dependencies: ["AppAttest", "AttestCrypto", "AttestSimulator", "GatewayRules", "GatewayTestSupport"]),
        // COpenSSL only for the ticket key callback test (EVP contexts as OpenSSL passes them).
        .testTarget(name: "GatewayIOTests", dependencies: ["GatewayIO", "GatewayRules", "GatewayTestSupport", "COpenSSL"]),
        .testTarget(name: "GatewayStoreTests", dependencies: ["GatewayStore", "GatewayIO", "GatewayRedis", "GatewayRules", "GatewayTestSupport", "CHiredis"]),
        .testTarget(name: "GatewayHTTPTests", dependencies: ["GatewayIO", "GatewayHTTP", "GatewayRules", "GatewayTestSupport", "CNghttp2"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "GatewayConfigTests", dependencies: ["GatewayConfig", "GatewayRules", "GatewayTestSupport"]),
        .testTarget(name: "GatewayTests", dependencies: ["Gateway", "AttestSimulator", "GatewayConfig", "GatewayIO", "GatewayHTTP", "GatewayRules", "GatewayTestSupport"], exclude: ["Fixtures"]),
        // The SDK against a scripted fake gateway and fake App Attest service; binding v1 against the gateway's own.
        .testTarget(name: "AttestClientTests", dependencies: ["AttestClient", "AppAttest", "AttestCrypto", "GatewayTestSupport"]),
        // The deployable artefacts (DESIGN.md section 10): the release tarball run in a clean root, the
        // systemd unit, the Dockerfile and compose file, the Kubernetes manifests.
        .testTarget(name: "DeployTests", dependencies: ["GatewayTestSupport"]),
    ]
)
