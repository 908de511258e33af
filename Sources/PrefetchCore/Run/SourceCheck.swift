import Foundation

/// Checks feed sources (SPEC §8): fetches each due manifest (and its signature), verifies
/// it, validates it as a feed and applies it as the source's copy in force — whole and
/// valid, or not at all. Every failure keeps the copy in force, records when the source is
/// tried again, and is printed in §1's form with the source's label for the file name.
/// `run` and each daemon pass call it once, before planning; `plan`, `status` and
/// `validate` never do.
struct SourceCheck {
    let config: Config
    let environment: [String: String]
    let console: Console
    /// The usable machine id (the per-machine offset), nil without one.
    let machineID: String?

    /// The most bytes a detached signature may have: a minisign signature is about 300
    /// bytes; its trusted comment is what can make it longer.
    static let signatureLimit = MinisignVerifier.maxFileSize

    /// How one source's check ended.
    enum Outcome: Equatable {
        /// A new copy is in force.
        case applied
        /// A 304: the copy in force is current.
        case current
        /// Refused, for this reason (the copy in force stays).
        case failed(String)
    }

    /// When `source` is next due, by its record and the origin holds state.db keeps.
    func due(_ source: FeedSource, _ state: SourceState?, holds: [String: OriginHold], now: Instant) -> Instant {
        let offset = SourceTiming.offset(machineID: machineID, url: source.url.text, refresh: source.refresh)
        let hold = holds[source.url.origin].map(\.until)
        if let state, state.failures > 0, let retryAt = state.retryAt {
            return max(retryAt, hold ?? retryAt)
        }
        return SourceTiming.due(lastCheck: state?.lastCheck, failures: state?.failures ?? 0, refresh: source.refresh, offset: offset,
                                holdUntil: hold, now: now)
    }

    /// When each source comes due, in the config's order (the daemon wakes for the first:
    /// `DaemonWakeup.next`).
    func dues(_ sources: [FeedSource], state: StateStore, now: Instant) -> [(label: String, due: Instant)] {
        guard !sources.isEmpty else { return [] }  // no state read for nothing (the daemon at rest keeps no snapshot)
        let states = (try? state.sourceStates()) ?? [:]
        let holds = (try? state.snapshot().originHolds) ?? [:]
        return sources.map { (label: $0.label, due: due($0, states[$0.label], holds: holds, now: now)) }
    }

    /// Checks the sources that are due (`all`: every one, SIGHUP), in the config's order.
    /// `localNames`: each local feed's name and file (local feeds win a name). Returns the
    /// outcome of each source checked, by label.
    @discardableResult
    func run(all: Bool, localNames: [String: NameHolder], cache: CacheFolder, state: StateStore, now: () -> Instant,
             stopRequested: () -> Bool = { false }) -> [String: Outcome] {
        let sources = config.feedSources
        guard !sources.isEmpty else { return [:] }
        let states: [String: SourceState]
        let holds: [String: OriginHold]
        do {
            states = try state.sourceStates()
            holds = try state.snapshot().originHolds
        } catch {
            console.err("prefetch: error: cannot read \(state.path): \(error)\n")
            return [:]
        }
        var outcomes: [String: Outcome] = [:]
        /// The feed names taken so far: local feeds', then each earlier source's copy in force.
        var taken = localNames
        for source in sources {
            if stopRequested() { break }
            let copy = SourceCopies.read(cache: cache.path, label: source.label, maxManifestSize: config.maxManifestSize)
            let checkNow = now()
            // A copy in force gone or unreadable (another version wrote it) after a good check:
            // the source has nothing to run, so it is checked at once, not a refresh later.
            let lost = copy.copy == nil && states[source.label].map { $0.failures == 0 && $0.lastCheck != nil } == true
            if all || lost || due(source, states[source.label], holds: holds, now: checkNow) <= checkNow {
                let outcome = check(source, copy: copy.copy, taken: taken, cache: cache, at: checkNow)
                outcomes[source.label] = outcome
                record(outcome, source: source, state: state, failures: states[source.label]?.failures ?? 0, holds: holds, at: checkNow)
            }
            // The name this source's feed takes now (after its check), for the sources after it.
            let inForce = outcomes[source.label] == .applied
                ? SourceCopies.read(cache: cache.path, label: source.label, maxManifestSize: config.maxManifestSize) : copy
            if let bytes = inForce.copy?.manifest,
               let name = FeedDecoder(config: config).decode(bytes, file: source.label, defaultName: source.defaultFeedName).feed?.name,
               taken[name] == nil {
                taken[name] = .source(label: source.label)
            }
        }
        return outcomes
    }

    private func record(_ outcome: Outcome, source: FeedSource, state: StateStore, failures: Int, holds: [String: OriginHold], at time: Instant) {
        do {
            switch outcome {
            case .applied, .current:
                try state.recordSourceSuccess(source.label, at: time)
            case .failed(let reason):
                let retry = time.advanced(bySeconds: SourceTiming.backoff(failures: failures + 1, refresh: source.refresh))
                let hold = holds[source.url.origin].map(\.until)
                try state.recordSourceFailure(source.label, error: reason, at: time, checked: true,
                                              retryAt: hold.map { max($0, retry) } ?? retry)
            }
        } catch {
            console.err("prefetch: error: cannot record state: \(error)\n")
        }
    }

    /// One check of `source`; prints what went wrong.
    func check(_ source: FeedSource, copy: SourceCopy?, taken: [String: NameHolder], cache: CacheFolder, at time: Instant) -> Outcome {
        let label = source.label
        func fail(_ message: String, reason: String? = nil) -> Outcome {
            console.report([Diagnostic(.error, file: label, at: nil, message)], sources: [:])
            return .failed(reason ?? message)
        }
        let headers: [String]
        do { headers = try source.headers.lines(environment: environment) } catch { return fail(error.message) }
        let fetcher = SourceFetcher(config: config)
        let request = SourceRequest(url: source.url, headers: headers, validators: copy?.validators, limit: Int(config.maxManifestSize.bytes),
                                    limitName: "max_manifest_size \(config.maxManifestSize) (\(config.maxManifestSize.bytes) bytes)", what: "manifest",
                                    allowsDowngrade: source.isSigned, clientCertificate: source.clientCertificate ?? config.clientCertificate)
        let manifest: [UInt8]
        let validators: Validators
        switch fetcher.fetch(request) {
        case .notModified: return .current
        case .failed(let why): return fail("cannot fetch the manifest: \(why)")
        case .body(let bytes, let got):
            manifest = bytes
            validators = got
        }
        var signature: [UInt8]?
        var signer: VerifiedSignature?
        if source.isSigned {
            let signatureRequest = SourceRequest(url: source.signature, headers: source.signature.origin == source.url.origin ? headers : [],
                                                 validators: nil, limit: Self.signatureLimit,
                                                 limitName: "the 64KiB a signature may have", what: "signature", allowsDowngrade: true,
                                                 clientCertificate: source.clientCertificate ?? config.clientCertificate)
            switch fetcher.fetch(signatureRequest) {
            case .body(let bytes, _): signature = bytes
            case .notModified: return fail("cannot fetch the signature \(source.signature.redacted): HTTP 304", reason: "missing signature")
            case .failed(let why): return fail("cannot fetch the signature \(source.signature.redacted): \(why)", reason: "missing signature: \(why)")
            }
            do {
                signer = try MinisignVerifier.verify(message: manifest, signatureFile: signature ?? [], keys: source.publicKeys)
            } catch {
                return fail("bad signature: \(error.message)", reason: "bad signature: \(error.message)")
            }
            if let older = signer?.timestamp, let inForce = copy?.timestamp, older < inForce {
                return fail("rollback refused: the manifest was signed at timestamp \(older), before the copy in force (\(inForce))",
                            reason: "rollback refused (signed at \(older), the copy in force at \(inForce))")
            }
        }
        let (decoded, diagnostics) = FeedDecoder(config: config).decode(manifest, file: label, defaultName: source.defaultFeedName)
        console.report(diagnostics, sources: [label: SourceText(bytes: manifest)])
        guard let feed = decoded else {
            let errors = diagnostics.filter { $0.severity == .error }
            let first = errors.first.map { d in (d.location.map { "\($0.line):\($0.column): " } ?? "") + d.message }
                .map { "; the first at \($0)" } ?? ""
            let reason = "invalid manifest (\(errors.count) error\(errors.count == 1 ? "" : "s")\(first))"
            return .failed(reason)
        }
        if let name = source.name, feed.name != name {
            console.report([Diagnostic(.error, file: label, at: feed.nameLocation,
                                       "the manifest names the feed '\(feed.name)', but the source's name is '\(name)'")],
                           sources: [label: SourceText(bytes: manifest)])
            return .failed("the manifest names the feed '\(feed.name)', not '\(name)'")
        }
        if let other = taken[feed.name] {
            return fail(other.reason(feed.name))
        }
        let applied = SourceCopy(manifest: manifest, signature: signature, validators: validators, fetchedAt: time,
                                 keyID: signer?.keyIDHex, timestamp: signer?.timestamp)
        if case .failure(let error) = cache.writeSourceCopy(applied, label: label, url: FeedSource.label(of: source.url)) {
            return fail("cannot write the copy in force: \(error)")
        }
        return .applied
    }
}
