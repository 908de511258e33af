/// A request header from the manifest; its value may hold `${VAR}` references.
public struct HeaderField: Sendable, Hashable {
    public var name: String
    public var value: HeaderTemplate
}
