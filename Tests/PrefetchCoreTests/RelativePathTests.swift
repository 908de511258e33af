import Testing
@testable import PrefetchCore

@Suite struct RelativePathTests {
    @Test(arguments: ["intro.mp4", "loop/intro.mp4", "a/b/c.d", ".config", "..hidden", "a..b", "...",
                      "café/ü.txt", "with space.txt", String(repeating: "x", count: 255),
                      "d/" + String(repeating: "é", count: 127)])
    func acceptsSafePaths(_ path: String) {
        #expect(RelativePath.problem(path) == nil)
    }

    @Test(arguments: [("", 0, "empty"),
                      ("/etc/passwd", 0, "not absolute"),
                      ("/", 0, "not absolute"),
                      ("..", 0, "'..'"),
                      ("../x", 0, "'..'"),
                      ("a/../b", 2, "'..'"),
                      ("a/b/..", 4, "'..'"),
                      (".", 0, "'.'"),
                      ("./a", 0, "'.'"),
                      ("a/./b", 2, "'.'"),
                      ("a//b", 2, "'//'"),
                      ("a/", 2, "end with '/'"),
                      ("a/b/", 4, "end with '/'"),
                      ("a\u{1}b", 1, "control characters"),
                      ("a/b\nc", 3, "control characters"),
                      ("a/b\r\nc", 3, "control characters"),
                      ("x\u{7f}", 1, "control characters"),
                      ("ab\u{85}", 2, "control characters"),
                      ("a/" + String(repeating: "x", count: 256), 2, "at most 255 bytes"),
                      (String(repeating: "é", count: 128), 0, "at most 255 bytes"),
                      (Array(repeating: String(repeating: "x", count: 200), count: 21).joined(separator: "/"), 0, "at most 4000 bytes")])
    func refusesUnsafePaths(_ path: String, _ offset: Int, _ phrase: String) throws {
        let problem = try #require(RelativePath.problem(path))
        #expect(problem.offset == offset)
        #expect(problem.message.contains(phrase))
    }
}
