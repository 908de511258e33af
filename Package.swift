// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "prefetch",
    products: [
        .executable(name: "prefetch", targets: ["prefetch"]),
        .library(name: "PrefetchCore", targets: ["PrefetchCore"]),
    ],
    targets: [
        // C libraries from Debian packages, bound as system-library targets.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CYAML", pkgConfig: "yaml-0.1", providers: [.apt(["libyaml-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Typed wrappers for the C calls Swift cannot make (variadics).
        .target(name: "CShims", dependencies: ["CCurl"]),

        // Core: everything the commands do, one folder per concern.
        .target(
            name: "PrefetchCore",
            dependencies: ["CCurl", "CYAML", "CSQLite", "CCrypto", "CShims"],
            // Crash tests' fault points (System/FaultPoints.swift): debug builds only.
            swiftSettings: [.define("PREFETCH_FAULT_POINTS", .when(configuration: .debug))]
        ),

        // CLI: argv → command → exit code.
        .executableTarget(name: "prefetch", dependencies: ["PrefetchCore"]),

        // Tests, and what both test targets share (a temporary folder, golden files).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "PrefetchCoreTests", dependencies: ["PrefetchCore", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "PrefetchEndToEndTests", dependencies: ["prefetch", "PrefetchCore", "TestSupport"], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)
