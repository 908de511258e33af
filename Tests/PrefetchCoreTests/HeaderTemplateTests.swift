import Testing
@testable import PrefetchCore

@Suite struct HeaderTemplateTests {
    typealias Part = HeaderTemplate.Part

    @Test(arguments: [("Bearer ${TOKEN}", [Part.literal("Bearer "), .variable("TOKEN")], ["TOKEN"]),
                      ("$5 ${A}${B}", [.literal("$5 "), .variable("A"), .variable("B")], ["A", "B"]),
                      ("plain value", [.literal("plain value")], []),
                      ("", [], []),
                      ("${_x1}", [.variable("_x1")], ["_x1"]),
                      ("$${A}", [.literal("$"), .variable("A")], ["A"]),
                      ("cost: 5$", [.literal("cost: 5$")], []),
                      ("$A {A} $ {B}", [.literal("$A {A} $ {B}")], []),
                      ("${A}-${A}", [.variable("A"), .literal("-"), .variable("A")], ["A", "A"])])
    func parses(_ text: String, _ parts: [Part], _ variables: [String]) throws {
        let template = try HeaderTemplate.parse(text)
        #expect(template.parts == parts)
        #expect(template.variables == variables)
        #expect(template.display == text)
    }

    @Test(arguments: [("Bearer ${TOKEN", 7, "'${' is not closed with '}'"),
                      ("${", 0, "not closed"),
                      ("a ${B", 2, "not closed"),
                      ("${1A}", 2, "'${1A}' is not a valid variable name"),
                      ("${}", 2, "not a valid variable name"),
                      ("${A-B}", 2, "not a valid variable name"),
                      ("x ${A} ${\u{e9}}", 9, "not a valid variable name"),
                      ("${ A}", 2, "not a valid variable name"),
                      ("a\rb", 1, "line breaks or NUL"),
                      ("a\nb", 1, "line breaks"),
                      ("ab\r\n", 2, "line breaks"),
                      ("a\u{0}b", 1, "NUL"),
                      ("a\u{1}b", 1, "control characters"),
                      ("ab\u{7f}", 2, "control characters")])
    func rejects(_ text: String, _ offset: Int, _ phrase: String) throws {
        let error = try #require(throws: ValueError.self) { try HeaderTemplate.parse(text) }
        #expect(error.offset == offset)
        #expect(error.message.contains(phrase))
    }

    @Test func resolvesFromTheEnvironment() throws {
        let template = try HeaderTemplate.parse("Bearer ${TOKEN}")
        #expect(try template.resolve(["TOKEN": "s3cret", "OTHER": "x"]) == "Bearer s3cret")
        #expect(try template.resolve(["TOKEN": ""]) == "Bearer ")
        #expect(try HeaderTemplate.parse("$5 ${A}${B}").resolve(["A": "1", "B": "2"]) == "$5 12")
        #expect(try HeaderTemplate.parse("no vars").resolve([:]) == "no vars")
    }

    @Test func valuesAreNotExpandedAgain() throws {
        let template = try HeaderTemplate.parse("${A}")
        #expect(try template.resolve(["A": "${B}", "B": "oops"]) == "${B}")
    }

    @Test func missingVariableIsNamed() throws {
        let template = try HeaderTemplate.parse("Bearer ${TOKEN}")
        #expect(throws: MissingVariable(name: "TOKEN")) { try template.resolve([:]) }
        #expect(throws: MissingVariable(name: "TOKEN")) { try template.resolve(["token": "lowercase is another name"]) }
        let two = try HeaderTemplate.parse("${A}${B}")
        #expect(throws: MissingVariable(name: "B")) { try two.resolve(["A": "1"]) }
        #expect(throws: MissingVariable(name: "A")) { try two.resolve([:]) }
    }

    @Test func displayNeverShowsValues() throws {
        let template = try HeaderTemplate.parse("Bearer ${TOKEN}")
        let resolved = try template.resolve(["TOKEN": "s3cret"])
        #expect(resolved.contains("s3cret"))
        #expect(template.display == "Bearer ${TOKEN}")
        #expect(!template.display.contains("s3cret"))
        #expect(!"\(template)".contains("s3cret"))
        #expect(!String(reflecting: template).contains("s3cret"))
    }

    @Test(arguments: ["Authorization", "X-Api-Key", "Accept", "x_custom", "X.Trace~1", "Cookie", "If-Match"])
    func acceptsHeaderNames(_ name: String) {
        #expect(HeaderTemplate.nameProblem(name) == nil)
    }

    @Test(arguments: ["Range", "range", "If-Range", "if-none-match", "If-None-Match", "IF-MODIFIED-SINCE",
                      "Accept-Encoding", "Host", "Content-Length", "Transfer-Encoding", "Connection"])
    func refusesReservedHeaderNames(_ name: String) throws {
        let problem = try #require(HeaderTemplate.nameProblem(name))
        #expect(problem.message == "prefetch sets the '\(name)' header itself (for resume and revalidation)")
    }

    @Test(arguments: [("", 0, "cannot be empty"), ("Bad Name", 3, "not a valid header name"),
                      ("X:Y", 1, "not a valid header name"), ("X(Y)", 1, "not a valid"), ("a\nb", 1, "not a valid"),
                      ("\u{dc}ber", 0, "not a valid"), ("X-Key\"", 5, "not a valid")])
    func refusesInvalidHeaderNames(_ name: String, _ offset: Int, _ phrase: String) throws {
        let problem = try #require(HeaderTemplate.nameProblem(name))
        #expect(problem.offset == offset)
        #expect(problem.message.contains(phrase))
    }
}
