import Foundation
import Testing
@testable import PrefetchCore

/// `PathClaims` (a radix tree) against the plain reference it replaced — every folder of
/// every path in a map by its whole path — on seeded random paths whose components share
/// prefixes (`a`, `ab`, `b`…), so edges split at every kind of place. `PREFETCH_PATHS_SEED`
/// replays a run.
@Suite struct PathClaimsTests {
    /// The reference: files and folders by their whole path, as the decoder once kept them.
    struct Reference {
        var files: [String: Int] = [:]
        var folders: [String: Int] = [:]

        mutating func claim(_ path: String, line: Int) -> PathClaims.Conflict? {
            if let first = files[path] { return .duplicate(line: first) }
            if let other = folders[path] { return .folder(line: other) }
            var parts = path.split(separator: "/").map(String.init)
            var added: [String] = []
            while parts.count > 1 {
                parts.removeLast()
                let folder = parts.joined(separator: "/")
                if let file = files[folder] {
                    for name in added { folders[name] = nil }
                    return .fileAbove(prefix: folder, line: file)
                }
                if folders[folder] != nil { break }
                folders[folder] = line
                added.append(folder)
            }
            files[path] = line
            return nil
        }
    }

    static let seed: UInt64 = {
        ProcessInfo.processInfo.environment["PREFETCH_PATHS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
    }()

    @Test func claimsAgreeWithTheReference() {
        print("PathClaimsTests: PREFETCH_PATHS_SEED=\(Self.seed)")
        let components = ["a", "ab", "abc", "b", "ba", "é", "éa", "x"]
        var random = SplitMix64(seed: Self.seed)
        var conflicts = 0
        for round in 0..<300 {
            var claims = PathClaims()
            var reference = Reference()
            for line in 1...Int(random.next() % 40 + 1) {
                let depth = Int(random.next() % 5) + 1
                let path = (0..<depth).map { _ in components[Int(random.next() % UInt64(components.count))] }.joined(separator: "/")
                let expected = reference.claim(path, line: line)
                #expect(claims.claim(path, line: line) == expected, "seed \(Self.seed), round \(round), line \(line): \(path)")
                if expected != nil { conflicts += 1 }
            }
        }
        #expect(conflicts > 100)
    }

    /// Deep paths cost memory for their bytes, not for their folders squared: 1,000 paths
    /// of 2,000 folders each (a 4 MB manifest's worth) are claimed, each conflict still found.
    @Test func deepPathsAreClaimedInLinearTime() {
        var claims = PathClaims()
        let chain = Array(repeating: "a", count: 1990).joined(separator: "/")
        for index in 0..<1000 {
            #expect(claims.claim("d\(index)/" + chain, line: index + 2) == nil)
        }
        #expect(claims.claim("d7/" + chain, line: 5000) == .duplicate(line: 9))
        #expect(claims.claim("d7/a/a", line: 5000) == .folder(line: 9))
        #expect(claims.claim("d7/" + chain + "/b", line: 5000) == .fileAbove(prefix: "d7/" + chain, line: 9))
        #expect(claims.claim("d7/a/a/b", line: 5000) == nil)
        #expect(claims.claim("d7/a/a", line: 5001) == .folder(line: 9))
    }
}
