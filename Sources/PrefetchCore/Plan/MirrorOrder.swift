/// SPEC §8's mirrors, the decisions of one pass over a resource's URLs: which listed URL
/// a request goes to next, and what the pass comes to when every URL failed. Pure: the
/// holds of the URLs' origins come in as `Admission`s, the failures as `URLFailure`s;
/// `RunBoard` and `FailureReporter` carry out what it answers, `ResumePoint` and the run judge
/// partials by it (`partialMoves`), and
/// `MirrorOrderTests` checks it over every combination.
///
/// A pass tries the URLs in `order`: the listed order (`url`, then the mirrors), except
/// that a copy is revalidated first at the URL that served it. A request goes to the first
/// URL of the order not yet tried in the pass whose origin is not held. A URL that failed
/// in a way that counts an attempt or fails the resource moves the pass on to the next;
/// when none is left the pass is over, and only then is one attempt counted: transient
/// (`backoff`) when any URL failed transiently or was held, else permanent (`failed`).
struct MirrorOrder: Sendable, Equatable {
    /// The listed URLs' indexes (0: `url`, then the mirrors in order), in the order this
    /// pass tries them.
    let order: [Int]
    /// What each URL tried in this pass came to, in the order tried.
    private(set) var failures: [URLFailure] = []

    /// How one URL's request failed.
    struct URLFailure: Sendable, Equatable {
        /// The listed URL's index.
        var index: Int
        /// A failure that is retried with backoff (network, 5xx, 429, a stall; a hold of
        /// its origin), as opposed to one that fails the resource for the release or counts
        /// as a mismatch (SPEC §8: those make the pass `failed` when no URL was transient).
        var transient: Bool
        var message: String
        /// Seconds the server asked to wait (Retry-After), if any.
        var retryAfter: Int64? = nil
    }

    /// What a URL's origin allows now (`OriginHolds`).
    enum Admission: Sendable, Equatable {
        /// Not held (or its hold has ended: this request is the probe).
        case go
        /// Held, and its probe comes within this run.
        case wait
        /// Held for the rest of the run.
        case held
    }

    /// Where the pass goes next.
    enum Choice: Sendable, Equatable {
        /// Ask this listed URL now.
        case request(Int)
        /// Nothing tried yet and every URL's origin is held, one of them only until a probe
        /// in this run: the resource waits for it.
        case wait
        /// Nothing tried yet and every URL's origin is held for the rest of the run: the
        /// resource is counted with the hold of this URL (the first of the order).
        case held(Int)
        /// Every URL failed, or is held after others failed: the pass is over (`outcome`).
        case over
    }

    /// A pass over `count` listed URLs; `servedBy`: the index of the URL that served the
    /// cached copy being revalidated (it goes first), when there is one.
    init(count: Int, servedBy: Int? = nil) {
        precondition(count >= 1)
        if let first = servedBy, first > 0, first < count {
            order = [first] + (0..<count).filter { $0 != first }
        } else {
            order = Array(0..<count)
        }
    }

    /// How state.db names the URL a resource's next pass asks first, holds aside (nil: its
    /// `url`): the mirror that served its copy (`servedBy`, that copy's recorded URL hash)
    /// when it still lists it, else `url`.
    static func firstKey(of resource: Resource, servedBy hash: String?) -> String? {
        guard let hash, let mirrors = resource.mirrors, mirrors.contains(where: { $0.identityHash == hash }) else { return nil }
        return hash
    }

    /// Whether the next pass would ask `partial` of at another URL than the one it was begun
    /// at (§7: then it resumes only with a `sha256`).
    static func partialMoves(_ partial: PartialState, resource: Resource, state: ResourceState?) -> Bool {
        guard resource.mirrors != nil || partial.servedBy != nil else { return false }
        return partial.servedBy != firstKey(of: resource, servedBy: state?.servedBy?.hash)
    }

    /// Whether no URL was tried yet in this pass.
    var isFresh: Bool { failures.isEmpty }

    /// The URLs not tried yet in this pass, in order.
    var untried: [Int] { order.filter { index in !failures.contains { $0.index == index } } }

    /// Where the next request goes, given what each listed URL's origin allows now.
    func next(_ admission: (Int) -> Admission) -> Choice {
        let left = untried
        var anyWait = false
        for index in left {
            switch admission(index) {
            case .go: return .request(index)
            case .wait: anyWait = true
            case .held: break
            }
        }
        if !isFresh || left.isEmpty { return .over }
        return anyWait ? .wait : .held(order[0])
    }

    /// The request to `index` failed so.
    mutating func failed(_ failure: URLFailure) {
        precondition(!failures.contains { $0.index == failure.index }, "a URL is tried once per pass")
        failures.append(failure)
    }

    /// What the pass comes to once it is over: `heldCause` names the cause of a URL left
    /// untried because its origin is held ("origin held: HTTP 503"), nil when not held.
    /// Transient when any URL failed transiently or was held; the message names every
    /// URL's failure in the order tried (`shown`: a URL as people see it, query elided).
    func outcome(heldCause: (Int) -> String?, shown: (Int) -> String) -> URLFailure {
        var parts = failures.map { "\($0.message) (\(shown($0.index)))" }
        var transient = failures.contains(where: \.transient)
        for index in untried {
            if let cause = heldCause(index) {
                parts.append("\(cause) (\(shown(index)))")
                transient = true
            }
        }
        let waits = failures.filter(\.transient).compactMap(\.retryAfter)
        return URLFailure(index: order[0], transient: transient, message: "every URL failed: " + parts.joined(separator: "; "),
                          retryAfter: waits.min())
    }
}
