import Glibc
import Testing
@testable import PrefetchCore

/// `PREFETCH_FAULT` (debug builds, which the tests are): every form it takes, and what each
/// rule does on each hit. Exits and kills are driven through the real binary (CrashTests).
@Suite struct FaultPointsTests {
    @Test func everyPointTakesEveryErrnoActionInEveryForm() throws {
        for point in FaultPoints.Point.allCases {
            for (action, code) in [("eio", EIO), ("enospc", ENOSPC)] {
                // every time; only the 3rd; the 3rd and after
                for (suffix, expected) in [("", [true, true, true, true, true]), ("@3", [false, false, true, false, false]),
                                           ("@3+", [false, false, true, true, true])] {
                    let faults = try FaultPoints.parse(environment: ["PREFETCH_FAULT": "\(point.rawValue):\(action)\(suffix)"])
                    let hits = (0..<5).map { _ in faults.reach(point) }
                    #expect(hits.map { $0 != nil } == expected, "\(point.rawValue):\(action)\(suffix)")
                    #expect(hits.compactMap { $0 }.allSatisfy { $0.code == code })
                    for other in FaultPoints.Point.allCases where other != point { #expect(faults.reach(other) == nil) }
                }
            }
        }
    }

    @Test func severalRulesAndNone() throws {
        let faults = try FaultPoints.parse(environment: ["PREFETCH_FAULT": "rename:eio@2,commit:enospc"])
        #expect(faults.reach(.rename) == nil && faults.reach(.rename)?.code == EIO && faults.reach(.commit)?.code == ENOSPC)
        let none = try FaultPoints.parse(environment: [:])
        #expect(FaultPoints.Point.allCases.allSatisfy { none.reach($0) == nil })
    }

    @Test(arguments: ["rename", "rename:", "nowhere:eio", "rename:explode", "rename:eio@0", "rename:eio@x", "rename:eio@2++", ":eio"])
    func aBadRuleIsAnErrorNamingIt(_ text: String) {
        #expect(throws: ValueError.self) { try FaultPoints.parse(environment: ["PREFETCH_FAULT": text]) }
    }
}
