import Testing
@testable import PrefetchCore

/// SPEC §5's partial-trust rule over every combination of what a record and the file on
/// disk can say: each expected length is written from the rule's sentences.
@Suite struct PartialTrustRuleTests {
    enum URLCase: CaseIterable { case same, other }
    enum InodeCase: CaseIterable { case versionOne, same, other }
    enum BootCase: CaseIterable { case none, same, other }
    enum SizeCase: CaseIterable { case shorter, equal, longer }

    @Test func everyCombination() {
        let now = "boot-now"
        var checked = 0
        for synced: UInt64 in [0, 4096] {
            for url in URLCase.allCases {
                for inode in InodeCase.allCases {
                    for boot in BootCase.allCases {
                        for size in SizeCase.allCases {
                            for present in [true, false] {
                                for currentBoot in [now, BootID.unknown] {
                                    let fileSize: UInt64 = switch size {
                                    case .shorter: synced == 0 ? 0 : synced - 100
                                    case .equal: synced
                                    case .longer: synced + 5000
                                    }
                                    let record = PartialState(
                                        urlHash: url == .same ? "u" : "x", validators: Validators(etag: "\"e\""), totalLength: nil,
                                        syncedOffset: synced, updatedAt: 0,
                                        bootID: inode == .versionOne ? nil : (boot == .none ? nil : boot == .same ? now : "boot-before"),
                                        inode: inode == .versionOne ? nil : inode == .same ? 7 : 8)
                                    let got = PartialTrust.trustedLength(record: record, urlHash: "u",
                                                                         file: present ? (fileSize, 7) : nil, bootID: currentBoot)
                                    // The rule, sentence by sentence.
                                    let expected: UInt64?
                                    if url == .other || !present { expected = nil }  // another URL's, or nothing there
                                    else if inode == .other { expected = nil }  // "a partial whose inode differs … is discarded"
                                    else if inode == .same && boot == .same && currentBoot != BootID.unknown {
                                        expected = fileSize  // "within the same boot … trusted whole", shorter too
                                    } else {
                                        expected = min(fileSize, synced)  // "only the fsynced offset"; "shorter … resumes at its length"
                                    }
                                    #expect(got == expected, "synced \(synced) url \(url) inode \(inode) boot \(boot) size \(size) present \(present) now \(currentBoot)")
                                    checked += 1
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(checked == 2 * 2 * 3 * 3 * 3 * 2 * 2)
        // And no record at all: nothing on disk can be trusted.
        #expect(PartialTrust.trustedLength(record: nil, urlHash: "u", file: (100, 7), bootID: now) == nil)
    }

    @Test func theBootIDComesFromTheEnvironmentThenTheKernel() {
        #expect(BootID.current(environment: ["PREFETCH_BOOT_ID": "rehearsed"]) == "rehearsed")
        #expect(BootID.current(environment: ["PREFETCH_BOOT_ID": ""], file: "/nonexistent") == BootID.unknown)
        let kernel = BootID.current(environment: [:])
        #expect(kernel.count == 36 && kernel != BootID.unknown, "\(kernel)")  // a UUID
    }
}
