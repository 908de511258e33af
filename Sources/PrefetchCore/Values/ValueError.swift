/// Why a manifest value could not be read, and where inside the value the problem is.
public struct ValueError: Error, Sendable, Equatable {
    /// What is wrong.
    public var message: String
    /// Character offset inside the value's text (0 = its first character).
    public var offset: Int

    /// Creates an error at `offset` characters into the value.
    public init(_ message: String, at offset: Int = 0) {
        self.message = message
        self.offset = offset
    }
}
