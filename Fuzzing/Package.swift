// swift-tools-version:6.0
// The libFuzzer targets (docs/RELIABILITY.md, "Fuzzing"). A package of its own, beside the
// root one and depending on it by path, so that `swift build` at the root never builds
// them (they link libFuzzer's main and need -sanitize=fuzzer). Built only by scripts/fuzz:
//   swift build --package-path Fuzzing --scratch-path .build/fuzz -Xswiftc -sanitize=fuzzer,address
// They reach the parsers' internal API (ResponseRules, ResponseHead) with @testable import:
// debug builds compile PrefetchCore with testability, so no entry point is added for them.
import Foundation
import PackageDescription

// A path dependency is known by its folder's name, lowercased: whatever the checkout is called.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let fuzzTargets = ["fuzz-manifest", "fuzz-config", "fuzz-cron", "fuzz-values", "fuzz-response", "fuzz-minisig", "fuzz-zsync"]

let package = Package(
    name: "prefetch-fuzz",
    products: fuzzTargets.map { .executable(name: $0, targets: [$0]) },
    dependencies: [.package(path: root.path)],
    targets: [
        // What every target shares: the property check that fails loudly.
        .target(name: "CLibFuzzer"),
        .target(name: "FuzzCheck", dependencies: ["CLibFuzzer", .product(name: "PrefetchCore", package: rootIdentity)]),
    ] + fuzzTargets.map {
        .executableTarget(name: $0, dependencies: [.product(name: "PrefetchCore", package: rootIdentity), "FuzzCheck"])
    },
    swiftLanguageModes: [.v6]
)
