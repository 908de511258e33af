import Testing
@testable import PrefetchCore

/// Paths are split at their last '/' on bytes, as the file system does: the leaf keeps
/// every byte after the slash, a combining mark after it included.
@Suite struct PathSplitTests {
    @Test(arguments: [("a/b/c.txt", "a/b", "c.txt"), ("café/ü.txt", "café", "ü.txt"),
                      ("dir/\u{301}e.txt", "dir", "\u{301}e.txt"), ("x/y", "x", "y")])
    func splitsAtTheLastSlash(_ path: String, _ parent: String, _ leaf: String) throws {
        let slash = try #require(path.lastSlash)
        #expect(String(path[..<slash]) == parent)
        #expect(path.suffix(afterSlash: slash).utf8.elementsEqual(leaf.utf8))
        #expect(Substring(path).lastSlash == slash)
    }

    @Test func aPathWithoutSlashHasNone() {
        #expect("file.bin".lastSlash == nil)
    }
}
