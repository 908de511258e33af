import Foundation
import Testing
@testable import PrefetchCore

/// A `${VAR}` value is checked when it is filled in at request time (SPEC §7): each header
/// value at most 8 KiB, a resource's headers at most 64 KiB, no control character (no header
/// injection through the environment); the message names headers and variables, never a
/// value.
@Suite struct RequestHeaderTests {
    static func resource(_ headers: [(String, String)]) throws -> Resource {
        let yaml = "resources:\n  - url: https://a.example/x\n    headers:\n"
            + headers.map { "      \($0.0): \"\($0.1)\"\n" }.joined()
        let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "t.yaml")
        #expect(diagnostics.isEmpty)
        return try #require(feed?.resources.first)
    }

    static func x(_ count: Int) -> String { String(repeating: "x", count: count) }

    @Test func valuesAreFilledIn() throws {
        let resource = try Self.resource([("Authorization", "Bearer ${T}"), ("X-Site", "kiosk-${SITE}-${SITE}")])
        #expect(try resource.headerLines(environment: ["T": "s3cret", "SITE": "7"]) == ["Authorization: Bearer s3cret", "X-Site: kiosk-7-7"])
    }

    @Test(arguments: [
        (["A": x(8192 - 7)], nil),
        (["A": x(8193 - 7)], "header X-A with ${A} filled in: a header value has at most 8 KiB (8192 bytes); this one has 8193"),
        (["A": "a\r\nX-Injected: 1"], "header X-A: the value of ${A} holds a line break or another control character, which a header cannot carry"),
        (["A": "a\nb"], "header X-A: the value of ${A} holds a line break or another control character, which a header cannot carry"),
        (["A": "a\u{85}b"], "header X-A: the value of ${A} holds a line break or another control character, which a header cannot carry"),
        (["A": "a\u{7F}"], "header X-A: the value of ${A} holds a line break or another control character, which a header cannot carry"),
        (["A": "\t"], "header X-A: the value of ${A} holds a line break or another control character, which a header cannot carry"),
        ([:], "header X-A needs the environment variable A, which is not set"),
    ] as [([String: String], String?)])
    func aFilledInValueIsChecked(_ environment: [String: String], _ message: String?) throws {
        let resource = try Self.resource([("X-A", "Bearer ${A}")])
        do {
            let lines = try resource.headerLines(environment: environment)
            #expect(message == nil)
            #expect(lines.first?.utf8.count == "X-A: ".utf8.count + 8192)
        } catch {
            #expect(error.message == message)
            for value in environment.values where value.count > 1 { #expect(!error.message.contains(value)) }
        }
    }

    /// Names and values count: 64 KiB in all is fine, one byte more fails.
    @Test func allHeadersTogetherHaveAtMost64KiB() throws {
        let names = (0..<8).map { "X-\($0)" }
        let resource = try Self.resource(names.map { ($0, "${\($0.replacingOccurrences(of: "-", with: "_"))}") })
        var environment: [String: String] = [:]
        for name in names.dropLast() { environment[name.replacingOccurrences(of: "-", with: "_")] = Self.x(8192) }
        environment["X_7"] = Self.x(65536 - 7 * (3 + 8192) - 3)
        #expect(try resource.headerLines(environment: environment).count == 8)
        environment["X_7"]! += "x"
        #expect(throws: HeaderExpansionError(message: "with header X-7 filled in this resource's headers have 65537 bytes (names and values); "
                                              + "a resource's headers have at most 64 KiB (65536 bytes) in all")) {
            try resource.headerLines(environment: environment)
        }
    }
}
