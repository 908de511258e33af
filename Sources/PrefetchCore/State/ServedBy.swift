/// Of a resource with mirrors (SPEC §8): which listed URL served its cached copy, and the
/// validators the other URLs gave for that same copy. Each URL keeps its own validators:
/// the resource's row holds those of the URL that served it, this those of the others,
/// recorded only for the copy's SHA-256 (another version's validators are never sent).
public struct ServedBy: Sendable, Equatable {
    /// Identity hash of the URL that served the copy (nil: the entry's `url`).
    public var hash: String?
    /// That URL as shown, query values elided (nil: the entry's `url`).
    public var shown: String?
    /// Other listed URLs' validators of the copy, by their identity hash.
    public var validators: [String: Validators] = [:]

    public init(hash: String? = nil, shown: String? = nil, validators: [String: Validators] = [:]) {
        self.hash = hash
        self.shown = shown
        self.validators = validators
    }
}

/// The listed URL that answered a request of a resource with mirrors, as state.db records
/// it (SPEC §8).
public struct MirrorURL: Sendable, Equatable {
    /// Its identity hash (scheme, host, port and path).
    public var hash: String
    /// As shown, query values elided; nil for the entry's `url` (then nothing is stored).
    public var shown: String?
    /// It is the URL the cached copy came from: a 304 there updates the row's validators;
    /// one from another URL records that URL's own.
    public var servedCopy: Bool

    public init(hash: String, shown: String?, servedCopy: Bool) {
        self.hash = hash
        self.shown = shown
        self.servedCopy = servedCopy
    }
}
