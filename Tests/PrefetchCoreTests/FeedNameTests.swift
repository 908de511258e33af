import Testing
@testable import PrefetchCore

@Suite struct FeedNameTests {
    @Test(arguments: ["lobby-screens", "a", "0", "9lives", "a.b_c-d", "feed.2026", String(repeating: "a", count: 64)])
    func acceptsValidNames(_ name: String) {
        #expect(FeedName.problem(name) == nil)
    }

    @Test(arguments: [("", 0, "cannot be empty"),
                      ("Lobby", 0, "starts with a lowercase letter or digit"),
                      ("-a", 0, "starts with"),
                      (".a", 0, "starts with"),
                      ("_a", 0, "starts with"),
                      ("..", 0, "starts with"),
                      ("lob by", 3, "only lowercase letters, digits, '.', '_' and '-'"),
                      ("lobby/x", 5, "only lowercase"),
                      ("aB", 1, "only lowercase"),
                      ("caf\u{e9}", 3, "only lowercase"),
                      ("a:b", 1, "only lowercase"),
                      (String(repeating: "a", count: 65), 64, "at most 64 characters")])
    func refusesInvalidNames(_ name: String, _ offset: Int, _ phrase: String) throws {
        let problem = try #require(FeedName.problem(name))
        #expect(problem.offset == offset)
        #expect(problem.message.contains(phrase))
    }
}
