import Testing
@testable import PrefetchCore

/// Expects `body` to throw a `ValueError` at character `offset` whose message contains
/// `phrase`: the check every value parser's table of bad inputs makes.
func expectValueError<T>(at offset: Int, containing phrase: String, sourceLocation: Testing.SourceLocation = #_sourceLocation,
                         _ body: () throws -> T) {
    #expect(sourceLocation: sourceLocation) {
        _ = try body()
    } throws: { error in
        guard let error = error as? ValueError else { return false }
        return error.offset == offset && error.message.contains(phrase)
    }
}

/// One row of a bad-input table: the text, where the error points, and a phrase of it.
struct InvalidValue: CustomTestStringConvertible, Sendable {
    let text: String
    let offset: Int
    let phrase: String
    var testDescription: String { "'\(text)' → \(phrase)" }
}
