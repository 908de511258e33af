/// SPEC §7's one resumable rule, and the `If-Range` a resume sends (RFC 9110 §13.1.5,
/// FAULTS 7 and 8). A partial is resumable when all three hold:
///
/// - its transfer is not `encoding: decode` (decoded bytes have no ranges to continue);
/// - the 2xx response that began it did not say `Accept-Ranges: none`;
/// - that response carried a strong ETag; or no ETag and a Last-Modified at least 60 s
///   before its `Date` (RFC 9110 §8.8.2.2: only then is a date a strong validator for a
///   client; no `Date` leaves it weak); or the entry has a `sha256`, which checks the
///   result instead (then `Range` without `If-Range`).
///
/// With `encoding: keep` the resume must also carry the same encoding (checked on the 206,
/// `continuesEncoding`) and a usable validator: a `sha256` alone does not make it
/// resumable, since a server that encodes on the fly need not send the same bytes twice.
/// Under `refuse` a partial stored with an encoding cannot go on. Validators belong to the
/// URL that sent them: a partial moving to another URL (a §8 mirror) resumes only with a
/// `sha256`, without `If-Range`.
///
/// Pure: the recorded facts in, the verdict out. §3's resume (`TransferStateMachine`),
/// §5's partial trust, §6's deadline rule and `plan` (`Planner`), `status`, `run`'s pause
/// lines and the daemon's stop all ask this one type; `ResumeRuleTests` checks it over
/// every combination.
enum ResumeRule {
    /// Why a partial cannot resume.
    enum Obstacle: Sendable, Equatable {
        case decode
        case acceptRangesNone
        /// Under `refuse`, a partial stored with this encoding (only a `keep` transfer writes one).
        case encoded(String)
        /// At another URL than the one that began it, without a `sha256`.
        case anotherURL
        /// Only a weak ETag (or one that is not a quoted entity tag), and no `sha256`.
        case weakETag
        /// No ETag, and a Last-Modified that is not 60 s before the response's `Date` (or no
        /// `Date`), and no `sha256`.
        case weakDate
        /// Neither an ETag nor a Last-Modified, and no `sha256`.
        case noValidator
        /// `encoding: keep` without a strong validator (a `sha256` alone is not enough).
        case keepWithoutValidator

        /// What a pause line and the docs say: "cannot resume: …".
        var description: String {
            switch self {
            case .decode: "encoding: decode restarts"
            case .acceptRangesNone: "the server said Accept-Ranges: none"
            case .encoded(let coding): "it is stored Content-Encoding: \(coding)"
            case .anotherURL: "another URL, and no sha256"
            case .weakETag: "only a weak ETag, and no sha256"
            case .weakDate: "no ETag, a Last-Modified not 60 s before the Date, and no sha256"
            case .noValidator: "no ETag or Last-Modified, and no sha256"
            case .keepWithoutValidator: "encoding: keep needs a strong ETag or Last-Modified"
            }
        }
    }

    /// The rule's answer for one partial (or for the resource's last 2xx response).
    enum Verdict: Sendable, Equatable {
        /// Resumable: `Range` from the partial's length, guarded by this `If-Range` (nil: none
        /// is sent; the `sha256` checks the result).
        case resume(ifRange: String?)
        /// Not resumable: restarted from zero, and its partial discarded when its transfer stops.
        case restart(Obstacle)

        var isResumable: Bool { if case .resume = self { true } else { false } }

        /// The `If-Range` to send, when resumable.
        var ifRange: String? { if case .resume(let value) = self { value } else { nil } }

        var obstacle: Obstacle? { if case .restart(let obstacle) = self { obstacle } else { nil } }
    }

    /// How long before the response's `Date` a Last-Modified must lie to be strong for a
    /// client (RFC 9110 §8.8.2.2 suggests 60 s; Apache uses the same margin for If-Range).
    static let strongDateMargin: Int64 = 60

    /// The verdict for a partial begun by `response`. `sha256Given`: the entry has one;
    /// `encoding`: the transfer's mode; `atAnotherURL`: the transfer asks another URL than
    /// the one that began the partial (a mirror, §8).
    static func judge(_ response: ResponseFacts, sha256Given: Bool, encoding: EncodingMode, atAnotherURL: Bool = false) -> Verdict {
        if encoding == .decode { return .restart(.decode) }
        if response.acceptRangesNone { return .restart(.acceptRangesNone) }
        if encoding == .refuse, let coding = normalized(response.contentEncoding) { return .restart(.encoded(coding)) }
        let checkedByDigest = sha256Given && encoding != .keep
        if atAnotherURL { return checkedByDigest ? .resume(ifRange: nil) : .restart(.anotherURL) }
        if let validator = strongValidator(response) { return .resume(ifRange: validator) }
        if checkedByDigest { return .resume(ifRange: nil) }
        if encoding == .keep { return .restart(.keepWithoutValidator) }
        if nonEmpty(response.etag) != nil { return .restart(.weakETag) }
        if nonEmpty(response.lastModified) != nil { return .restart(.weakDate) }
        return .restart(.noValidator)
    }

    /// The strong validator a response gives `If-Range`, if any: its ETag when that is a
    /// strong entity tag; with no ETag at all, its Last-Modified when that is a strong date.
    /// A weak ETag rules the date out too: the client holds an entity tag (FAULTS 7).
    static func strongValidator(_ response: ResponseFacts) -> String? {
        if let etag = nonEmpty(response.etag) { return isStrongETag(etag) ? etag : nil }
        if let lastModified = nonEmpty(response.lastModified), isStrongDate(lastModified: lastModified, date: response.date) {
            return lastModified
        }
        return nil
    }

    /// A strong entity tag: a quoted opaque tag without `W/` (RFC 9110 §8.8.3). Anything
    /// else in an ETag field is no validator a server would match in If-Range.
    static func isStrongETag(_ tag: String) -> Bool {
        tag.utf8.count >= 2 && tag.utf8.first == 0x22 && tag.utf8.last == 0x22
    }

    /// RFC 9110 §8.8.2.2: a Last-Modified is strong for a client when it lies at least
    /// `strongDateMargin` before the `Date` of the response that carried it. No `Date`, or
    /// either one unparsable, leaves it weak.
    static func isStrongDate(lastModified: String, date: String?) -> Bool {
        guard let date, let sent = HTTPDate.parse(date), let modified = HTTPDate.parse(lastModified) else { return false }
        return sent - modified >= strongDateMargin
    }

    /// Whether a 206 answering a resume carries the partial's encoding (`keep`: both the
    /// same coding, or both identity). Compared as octets (`normalized`), never as Unicode
    /// text, where "é" and "e" + U+0301 are one string.
    static func continuesEncoding(partial: String?, response: String?) -> Bool {
        switch (normalized(partial), normalized(response)) {
        case (nil, nil): true
        case (let ours?, let theirs?): SameBytes.equal(ours, theirs)
        default: false
        }
    }

    /// A Content-Encoding as compared and recorded: without the blanks around it, ASCII
    /// letters in lower case (RFC 9110 §8.4.1: codings are case-insensitive tokens), every
    /// other byte as sent; nil for none, an empty one or identity.
    static func normalized(_ encoding: String?) -> String? {
        guard let encoding else { return nil }
        var bytes = Substring(encoding).utf8[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
        let lower = bytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        guard !lower.isEmpty, lower != Array("identity".utf8) else { return nil }
        return String(decoding: lower, as: UTF8.self)
    }

    /// Whether an `Accept-Ranges` field value says `none` (RFC 9110 §14.3; a token list,
    /// case-insensitive).
    static func saysNone(_ acceptRanges: String?) -> Bool {
        guard let acceptRanges else { return false }
        return acceptRanges.split(separator: ",").contains { String($0).trimmingSpaces().lowercased() == "none" }
    }

    /// A resume the origin refused (a 200 to a `Range`), as the run's line says it (SPEC §7
    /// "Run summary").
    static func refusal(from offset: UInt64) -> String {
        "the server refused the resume from \(ByteSize.format(offset)): HTTP 200, the whole file again"
    }

    private static func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }
}
