import Testing
@testable import PrefetchCore

/// SPEC §8, mirrors: which listed URL a request goes to next, and what a pass comes to when
/// every URL failed — `MirrorOrder` over every combination of up to four URLs (the URL that
/// served the copy, each URL's hold, which were tried and how they failed), against a
/// reference written from the spec's sentences, plus the rows the spec spells out.
struct MirrorOrderTests {
    typealias Admission = MirrorOrder.Admission

    /// The spec's sentences, one row each.
    @Test func theRowsTheSpecSpellsOut() {
        // A request goes to the first listed URL (url, then the mirrors) whose origin is not held.
        #expect(MirrorOrder(count: 3).next { _ in .go } == .request(0))
        #expect(MirrorOrder(count: 3).next { $0 == 0 ? .wait : .go } == .request(1), "a held primary: the mirror, at once")
        #expect(MirrorOrder(count: 3).next { $0 < 2 ? .held : .go } == .request(2))
        // A copy is revalidated first at the URL that served it, then the others in order.
        #expect(MirrorOrder(count: 3, servedBy: 2).order == [2, 0, 1])
        #expect(MirrorOrder(count: 3, servedBy: 0).order == [0, 1, 2])
        #expect(MirrorOrder(count: 2, servedBy: 5).order == [0, 1], "a URL no longer listed: the listed order")
        // Every URL held: waits for a probe within the run, or is counted with the first's hold.
        #expect(MirrorOrder(count: 2).next { $0 == 0 ? .held : .wait } == .wait)
        #expect(MirrorOrder(count: 2).next { _ in .held } == .held(0))
        #expect(MirrorOrder(count: 2, servedBy: 1).next { _ in .held } == .held(1))
        // A failure moves to the next URL; when none is left, the pass is over.
        var pass = MirrorOrder(count: 2)
        pass.failed(.init(index: 0, transient: true, message: "HTTP 500"))
        #expect(pass.next { _ in .go } == .request(1))
        pass.failed(.init(index: 1, transient: false, message: "HTTP 404"))
        #expect(pass.next { _ in .go } == .over)
        let outcome = pass.outcome(heldCause: { _ in nil }, shown: { "u\($0)" })
        #expect(outcome.transient, "backoff: one URL failed transiently")
        #expect(outcome.message == "every URL failed: HTTP 500 (u0); HTTP 404 (u1)")
        // Every URL failed permanently (or by a mismatch): failed.
        var permanent = MirrorOrder(count: 2)
        permanent.failed(.init(index: 0, transient: false, message: "sha256 mismatch"))
        permanent.failed(.init(index: 1, transient: false, message: "HTTP 404"))
        #expect(!permanent.outcome(heldCause: { _ in nil }, shown: { "\($0)" }).transient)
        // A URL left untried because its origin is held after another failed: the pass is
        // over, and the hold makes it transient.
        var heldAfter = MirrorOrder(count: 2)
        heldAfter.failed(.init(index: 0, transient: false, message: "HTTP 404"))
        #expect(heldAfter.next { $0 == 1 ? .wait : .go } == .over)
        let heldOutcome = heldAfter.outcome(heldCause: { $0 == 1 ? "origin held: HTTP 503" : nil }, shown: { "u\($0)" })
        #expect(heldOutcome.transient && heldOutcome.message == "every URL failed: HTTP 404 (u0); origin held: HTTP 503 (u1)")
    }

    /// Every combination of 1–4 URLs, the URL that served the copy (none or any), each URL's
    /// admission, and each URL's state in the pass (untried, failed transiently, failed
    /// otherwise), consistent with a pass tried in its order: `next` and `outcome` agree with
    /// the reference.
    @Test func everyCombinationAgreesWithTheReference() {
        let admissions: [Admission] = [.go, .wait, .held]
        var cases = 0
        for count in 1...4 {
            for served in [nil] + Array(0..<count) {
                let order = Self.referenceOrder(count: count, servedBy: served)
                for admitted in Self.product(admissions, count) {
                    // The pass has tried a prefix of the URLs it could reach, each failed one way or the other.
                    for tried in 0...count {
                        for kinds in Self.product([true, false], tried) {
                            var pass = MirrorOrder(count: count, servedBy: served)
                            #expect(pass.order == order)
                            for (position, transient) in kinds.enumerated() {
                                pass.failed(.init(index: order[position], transient: transient, message: "m\(order[position])",
                                                  retryAfter: transient ? Int64(10 + order[position]) : nil))
                            }
                            let triedSet = Set(order.prefix(tried))
                            let expected = Self.referenceNext(order: order, tried: triedSet, admission: { admitted[$0] })
                            let got = pass.next { admitted[$0] }
                            #expect(got == expected, "count \(count) served \(String(describing: served)) admitted \(admitted) tried \(kinds)")
                            if got == .over {
                                let heldCause: (Int) -> String? = { admitted[$0] == .go ? nil : "origin held: cause\($0)" }
                                let outcome = pass.outcome(heldCause: heldCause, shown: { "u\($0)" })
                                let untriedHeld = order.filter { !triedSet.contains($0) && admitted[$0] != .go }
                                #expect(outcome.transient == (kinds.contains(true) || !untriedHeld.isEmpty))
                                #expect(outcome.index == order[0])
                                let waits = zip(order, kinds).filter { $0.1 }.map { Int64(10 + $0.0) }
                                #expect(outcome.retryAfter == waits.min())
                                for index in order where triedSet.contains(index) { #expect(outcome.message.contains("m\(index) (u\(index))")) }
                                for index in untriedHeld { #expect(outcome.message.contains("origin held: cause\(index) (u\(index))")) }
                            }
                            cases += 1
                        }
                    }
                }
            }
        }
        #expect(cases > 10_000, "\(cases) cases")
    }

    /// A partial is judged at the URL the next pass asks first (the one that served the
    /// copy, else `url`): begun at another, it moves (§7: then only a `sha256` resumes it).
    @Test func aPartialMovesWhenTheNextPassAsksAnotherURL() throws {
        let (feed, diagnostics) = ManifestErrorTests.decode(
            "resources:\n  - url: https://a.example.com/f\n    mirrors: [https://b.example.com/f, https://c.example.com/f]\n"
            + "  - url: https://a.example.com/g\n")
        #expect(diagnostics.isEmpty)
        let resources = try #require(feed?.resources)
        let mirrored = resources[0], plain = resources[1]
        let b = mirrored.url(at: 1).identityHash, c = mirrored.url(at: 2).identityHash
        func partial(_ servedBy: String?) -> PartialState {
            PartialState(urlHash: mirrored.url.identityHash, validators: Validators(), totalLength: nil, syncedOffset: 1, updatedAt: 0,
                         servedBy: servedBy)
        }
        func state(servedBy: String?) -> ResourceState {
            var state = ResourceState(urlHash: mirrored.url.identityHash)
            state.servedBy = servedBy.map { ServedBy(hash: $0, shown: "x") }
            return state
        }
        let rows: [(partial: String?, served: String?, moves: Bool)] = [
            (nil, nil, false),  // begun at url, no copy: url first
            (b, nil, true),  // begun at a mirror, the next pass asks url first
            (b, b, false),  // the copy came from that mirror: it goes first
            (nil, b, true),
            (c, b, true),
            (nil, "0000", false),  // the copy's URL is no longer listed: url first
        ]
        for row in rows {
            #expect(MirrorOrder.partialMoves(partial(row.partial), resource: mirrored, state: state(servedBy: row.served)) == row.moves, "\(row)")
        }
        #expect(MirrorOrder.partialMoves(partial(b), resource: mirrored, state: nil))
        #expect(!MirrorOrder.partialMoves(partial(nil), resource: plain, state: nil))
        #expect(MirrorOrder.partialMoves(partial(b), resource: plain, state: state(servedBy: b)), "mirrors dropped since: url is asked")
    }

    // MARK: The reference, written from SPEC §8's sentences

    static func referenceOrder(count: Int, servedBy: Int?) -> [Int] {
        guard let served = servedBy, served > 0 else { return Array(0..<count) }
        var order = [served]
        for index in 0..<count where index != served { order.append(index) }
        return order
    }

    static func referenceNext(order: [Int], tried: Set<Int>, admission: (Int) -> Admission) -> MirrorOrder.Choice {
        let untried = order.filter { !tried.contains($0) }
        if let open = untried.first(where: { admission($0) == .go }) { return .request(open) }
        if !tried.isEmpty { return .over }
        if untried.contains(where: { admission($0) == .wait }) { return .wait }
        return .held(order[0])
    }

    static func product<T>(_ values: [T], _ count: Int) -> [[T]] {
        var result: [[T]] = [[]]
        for _ in 0..<count { result = result.flatMap { prefix in values.map { prefix + [$0] } } }
        return result
    }
}
