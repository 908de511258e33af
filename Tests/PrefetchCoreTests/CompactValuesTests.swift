import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// The compact records a large manifest and state.db are held in (`StringInterner`,
/// `Digest256`, `HexText`, `ResourceURL`'s offsets, `Planner.permute`,
/// `ResourceStates`, `ResourceState`'s packed fields), each against a plain
/// reference on seeded random input. `PREFETCH_COMPACT_SEED` replays a run.
@Suite struct CompactValuesTests {
    static let seed: UInt64 = {
        ProcessInfo.processInfo.environment["PREFETCH_COMPACT_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64(UInt32.max))
    }()

    /// Random text from pieces that include canonically equivalent spellings ("é" as one
    /// scalar and as "e" + U+0301), which must stay apart.
    static func text(_ random: inout SplitMix64) -> String {
        let pieces = ["a", "b", "é", "e\u{301}", "host", ".example.com", "-", "0", "ü", "u\u{308}", "x" + String(repeating: "y", count: 20)]
        return (0..<Int(random.next() % 4 + 1)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
    }

    @Test func theInternerJoinsEqualBytesOnly() {
        print("CompactValuesTests: PREFETCH_COMPACT_SEED=\(Self.seed)")
        var random = SplitMix64(seed: Self.seed)
        var interner = StringInterner()
        var reference: [[UInt8]: String] = [:]  // the first string of each byte sequence
        for round in 0..<2000 {
            let text = Self.text(&random)
            let kept = interner.intern(text)
            #expect(Array(kept.utf8) == Array(text.utf8), "seed \(Self.seed), round \(round): \(text.debugDescription)")
            let first = reference[Array(text.utf8), default: text]
            reference[Array(text.utf8)] = first
            // The same storage as the first one with these bytes: equal identity of the buffers.
            #expect(kept.utf8.withContiguousStorageIfAvailable { $0.baseAddress } == first.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
                    || kept.utf8.count <= 15, "seed \(Self.seed), round \(round)")
            // Found from bytes too, without a string made of them.
            var copy = text
            let viaBytes = copy.withUTF8 { interner.intern($0) }
            #expect(Array(viaBytes.utf8) == Array(text.utf8))
        }
        #expect(interner.count == reference.count)
        #expect(interner.intern("e\u{301}").utf8.count == 3 && interner.intern("é").utf8.count == 2)
    }

    @Test func digestsGiveBackTheirHex() {
        var random = SplitMix64(seed: Self.seed)
        let digits = Array("0123456789abcdef")
        for round in 0..<1000 {
            let hex = String((0..<64).map { _ in digits[Int(random.next() % 16)] })
            let digest = Digest256(hex: hex)
            #expect(digest?.hex == hex, "seed \(Self.seed), round \(round)")
            #expect(HexText(hex).text == hex)
            #expect(HexText(hex) == HexText(String(hex)))
            // Anything else is kept as text, as given.
            let other = random.next() % 2 == 0 ? String(hex.dropLast()) : hex.uppercased()
            #expect(Digest256(hex: other) == nil || other == hex)
            #expect(HexText(other).text == other)
            #expect((HexText(other) == HexText(hex)) == (other == hex))
            // From the bytes (as state.db's columns are read): the same value either way.
            for text in [hex, other] {
                #expect(Array(text.utf8).withUnsafeBufferPointer { HexText(bytes: $0) } == HexText(text), "seed \(Self.seed), round \(round)")
            }
        }
        for bad in ["", "v1:" + String(repeating: "a", count: 64), String(repeating: "g", count: 64), String(repeating: "a", count: 65)] {
            #expect(Digest256(hex: bad) == nil)
            #expect(HexText(bad).text == bad)
            #expect(Array(bad.utf8).withUnsafeBufferPointer { HexText(bytes: $0) }.text == bad)
        }
        #expect(HexText("é") != HexText("e\u{301}"))
    }

    /// The parts a URL gives from its offsets are those a plain split of its text finds.
    @Test func urlPartsComeFromTheirOffsets() throws {
        var random = SplitMix64(seed: Self.seed)
        let schemes = ["http", "https", "HTTPS", "Http"]
        let hosts = ["cdn.example.com", "CDN.Example.COM", "[::1]", "static.example-cdn.com", "é.example", "127.0.0.1"]
        let ports = ["", ":8443", ":", ":80"]
        let paths = ["", "/", "/a/b.mp4", "/%41%2Fx", "/v1/é/file"]
        let queries = ["", "?", "?v=1", "?exp=1&sig=abc", "?\u{317}x"]
        let fragments = ["", "#top", "#a?b"]
        var interner: StringInterner? = StringInterner()
        for round in 0..<1000 {
            func pick(_ list: [String]) -> String { list[Int(random.next() % UInt64(list.count))] }
            let scheme = pick(schemes), host = pick(hosts), port = pick(ports), path = pick(paths), query = pick(queries)
            let fragment = pick(fragments)
            let text = scheme + "://" + host + port + path + query + fragment
            let plain = try ResourceURL.parse(text)
            let interned = try ResourceURL.parse(text, hosts: &interner)
            let context = "seed \(Self.seed), round \(round): \(text)"
            for url in [plain, interned] {
                #expect(url.text == text, "\(context)")
                #expect(url.scheme == scheme.lowercased(), "\(context)")
                #expect(url.host == host.lowercased(), "\(context)")
                let explicit = port.count > 1 ? Int(port.dropFirst())! : (scheme.lowercased() == "https" ? 443 : 80)
                #expect(url.port == explicit, "\(context)")
                #expect(url.path == (path.isEmpty ? "/" : path), "\(context)")
                #expect(url.query == (query.isEmpty ? nil : String(decoding: query.utf8.dropFirst(), as: UTF8.self)), "\(context)")
                #expect(url.identityHash == Array((url.origin + url.path).utf8).withUnsafeBytes { SHA256.hexDigest($0) }, "\(context)")
                #expect(url.identityDigest.hex == url.identityHash, "\(context)")
            }
            #expect(plain == interned)
        }
        #expect(interner?.count == Set(hosts.map { $0.lowercased() }).count)
    }

    @Test func permutingInPlaceMatchesAMap() {
        var random = SplitMix64(seed: Self.seed)
        for round in 0..<500 {
            let count = Int(random.next() % 40)
            let items = (0..<count).map { "item \($0)" }
            var order = Array(0..<count)
            for index in order.indices.reversed() where index > 0 {
                order.swapAt(index, Int(random.next() % UInt64(index + 1)))
            }
            var permuted = items
            Planner.permute(&permuted, into: order)
            #expect(permuted == order.map { items[$0] }, "seed \(Self.seed), round \(round)")
        }
    }

    /// state.db's records in their table answer as a `Dictionary` keyed by the keys' bytes
    /// (the reference: a path is its bytes, as on disk and in state.db) does: reads, writes,
    /// removals, changes through `default:` and `?.`, iteration, equality, on few keys (many
    /// repeats) and many (the table grows), with paths that include canonically equivalent
    /// spellings. A table filled from keys' bytes (`appendNew`, as state.db's reader fills
    /// it) is equal to it and finds the same records.
    @Test func resourceStatesActAsADictionaryOfBytes() {
        var random = SplitMix64(seed: Self.seed)
        func bytes(_ key: ResourceKey) -> [UInt8] { Array(key.feed.utf8) + [0] + Array(key.path.utf8) }
        for round in 0..<40 {
            let keySpace = round % 2 == 0 ? 12 : 3000
            var table = ResourceStates()
            var reference: [[UInt8]: (ResourceKey, ResourceState)] = [:]
            if round % 4 == 1 { table.reserveCapacity(Int(random.next() % 200)) }
            for step in 0..<1500 {
                let n = random.next() % UInt64(keySpace)
                let path = n % 3 == 0 ? Self.text(&random) : "p\(n)"
                let key = ResourceKey(feed: ["f0", "f1", "f\u{E9}", "fe\u{301}"][Int(random.next() % 4)], path: path)
                let context = "seed \(Self.seed), round \(round), step \(step)"
                var state = ResourceState(urlHash: String(repeating: "a", count: 64))
                state.failures = Int(random.next() % 5)
                switch random.next() % 6 {
                case 0, 1:
                    table[key] = state
                    reference[bytes(key)] = (key, state)
                case 2:
                    table[key] = nil
                    reference[bytes(key)] = nil
                case 3:
                    table[key, default: state].validatedAt = Instant(seconds: Int64(step))
                    var record = reference[bytes(key)]?.1 ?? state
                    record.validatedAt = Instant(seconds: Int64(step))
                    reference[bytes(key)] = (key, record)
                case 4:
                    table[key]?.lastError = "e\(step)"
                    if var record = reference[bytes(key)] { record.1.lastError = "e\(step)"; reference[bytes(key)] = record }
                default:
                    #expect(table[key] == reference[bytes(key)]?.1, "\(context)")
                }
                #expect(table.count == reference.count && table.isEmpty == reference.isEmpty, "\(context)")
            }
            for (key, value) in reference.values { #expect(table[key] == value, "seed \(Self.seed), round \(round): \(key)") }
            var seen = Set<[UInt8]>()
            for (key, value) in table {
                #expect(seen.insert(bytes(key)).inserted && reference[bytes(key)]?.1 == value, "seed \(Self.seed), round \(round): \(key)")
            }
            #expect(seen.count == reference.count && Set(table.keys.map(bytes)) == Set(reference.keys) && table.values.count == reference.count)
            // Equal whatever the order the records were added in; unequal after any change.
            var reordered = ResourceStates()
            for (key, value) in reference.values.sorted(by: { $0.0.path > $1.0.path }) { reordered[key] = value }
            #expect(reordered == table, "seed \(Self.seed), round \(round)")
            // Filled from bytes, as state.db's reader fills it: the same records, found by key.
            var fromBytes = ResourceStates()
            for (key, value) in reference.values { fromBytes.appendNew(value, feed: key.feed) { $0.append(contentsOf: key.path.utf8) } }
            #expect(fromBytes == table, "seed \(Self.seed), round \(round): a table filled from bytes")
            for (key, value) in reference.values { #expect(fromBytes[key] == value, "seed \(Self.seed), round \(round): \(key) filled from bytes") }
            if let (key, value) = reference.values.first {
                reordered[key]?.failures = value.failures + 1
                #expect(reordered != table, "seed \(Self.seed), round \(round)")
            }
        }
        let literal: ResourceStates = [ResourceKey(feed: "a", path: "b"): ResourceState(urlHash: "x")]
        #expect(literal.count == 1 && literal[ResourceKey(feed: "a", path: "b")]?.urlHash == "x")
    }

    /// A record's packed fields (the numbers with their bits, the failure record and the
    /// last response behind a reference each) give back what was set, in any order, as a
    /// plain struct of optionals would; and the record stays as small as its comment says.
    @Test func resourceStateFieldsGiveBackWhatWasSet() {
        struct Plain: Equatable {
            var length: UInt64?, placedAt: Instant?, validatedAt: Instant?, lastSuccess: Instant?
            var permanent = false, lastError: String?, failures = 0, failureRelease: Instant?, nextRetry: Instant?, entry: String?
            var response: ResponseFacts?, responseLength: UInt64?, validators = Validators()
            var partial: PartialState?, servedBy: ServedBy?
        }
        func read(_ state: ResourceState) -> Plain {
            Plain(length: state.length, placedAt: state.placedAt, validatedAt: state.validatedAt, lastSuccess: state.lastSuccess,
                  permanent: state.permanentFailure, lastError: state.lastError, failures: state.failures,
                  failureRelease: state.failureRelease, nextRetry: state.nextRetry, entry: state.failureEntry,
                  response: state.lastResponse, responseLength: state.lastResponseLength, validators: state.validators,
                  partial: state.partial, servedBy: state.servedBy)
        }
        var random = SplitMix64(seed: Self.seed)
        func number() -> UInt64? { random.next() % 3 == 0 ? nil : [0, 1, UInt64.max, random.next()][Int(random.next() % 4)] }
        func instant() -> Instant? { number().map { Instant(nanoseconds: Int64(bitPattern: $0)) } }
        func text() -> String? { random.next() % 2 == 0 ? nil : ["", "HTTP 404", Self.text(&random)][Int(random.next() % 3)] }
        // Few validators, so that a response's are often the copy's (kept inline) and often not.
        func validators() -> Validators {
            [Validators(), Validators(etag: "\"a\""), Validators(etag: "\"a\"", lastModified: "Sun, 06 Nov 1994 08:49:37 GMT"),
             Validators(etag: "\"b\"")][Int(random.next() % 4)]
        }
        func response() -> ResponseFacts? {
            guard random.next() % 4 != 0 else { return nil }
            let v = validators()
            return ResponseFacts(etag: v.etag, lastModified: v.lastModified, date: text(), acceptRangesNone: random.next() % 2 == 0,
                                 contentEncoding: random.next() % 3 == 0 ? "gzip" : nil)
        }
        for round in 0..<2000 {
            var state = ResourceState(urlHash: "u")
            var plain = Plain()
            for _ in 0..<10 {
                switch random.next() % 15 {
                case 13:
                    let v: PartialState? = random.next() % 3 == 0 ? nil
                        : PartialState(urlHash: "p", validators: validators(), totalLength: number(), syncedOffset: random.next() % 9, updatedAt: 1)
                    state.partial = v; plain.partial = v
                    #expect(state.hasPartial == (v != nil))
                case 14:
                    let v: ServedBy? = random.next() % 3 == 0 ? nil : ServedBy(hash: text(), shown: text())
                    state.servedBy = v; plain.servedBy = v
                case 0: let v = number(); state.length = v; plain.length = v
                case 1: let v = instant(); state.placedAt = v; plain.placedAt = v
                case 2: let v = instant(); state.validatedAt = v; plain.validatedAt = v
                case 3: let v = instant(); state.lastSuccess = v; plain.lastSuccess = v
                case 4: let v = random.next() % 2 == 0; state.permanentFailure = v; plain.permanent = v
                case 5: let v = text(); state.lastError = v; plain.lastError = v
                case 6: let v = Int(random.next() % 4); state.failures = v; plain.failures = v
                case 7: let v = instant(); state.failureRelease = v; plain.failureRelease = v
                case 8: let v = instant(); state.nextRetry = v; plain.nextRetry = v
                case 9: let v = text(); state.failureEntry = v; plain.entry = v
                case 10: let v = response(); state.lastResponse = v; plain.response = v
                case 11: let v = validators(); state.validators = v; plain.validators = v
                default: let v = number(); state.lastResponseLength = v; plain.responseLength = v
                }
                #expect(read(state) == plain, "seed \(Self.seed), round \(round)")
            }
            // Equal records compare equal whichever way they were reached.
            var again = ResourceState(urlHash: "u")
            (again.length, again.placedAt, again.validatedAt, again.lastSuccess) = (plain.length, plain.placedAt, plain.validatedAt, plain.lastSuccess)
            (again.permanentFailure, again.lastError, again.failures) = (plain.permanent, plain.lastError, plain.failures)
            (again.failureRelease, again.nextRetry, again.failureEntry) = (plain.failureRelease, plain.nextRetry, plain.entry)
            (again.lastResponse, again.lastResponseLength) = (plain.response, plain.responseLength)
            (again.partial, again.servedBy) = (plain.partial, plain.servedBy)
            again.validators = plain.validators  // after the response: an inline one is kept apart first
            #expect(again == state, "seed \(Self.seed), round \(round)")
        }
        #expect(MemoryLayout<ResourceState>.stride <= 200, "\(MemoryLayout<ResourceState>.stride) bytes a record")
    }

    /// `CachedFiles`, a bit per resource, against a `Set` of keys: feeds of 0 to 200
    /// resources (word edges at 63, 64, 127, 128 among them), random subsets.
    @Test func cachedFilesAgreeWithASetOfKeys() throws {
        var random = SplitMix64(seed: Self.seed)
        for round in 0..<40 {
            let counts = (0..<3).map { _ in [0, 1, 63, 64, 65, 128, 129, Int(random.next() % 200)][Int(random.next() % 8)] }
            let feeds = try counts.enumerated().map { (f, count) in
                try #require(FeedDecoder(config: Config()).decode(Array(("name: f\(f)\nresources:" + (count == 0 ? " []\n" : "\n") + (0..<count).map {
                    "  - url: https://e.com/r\($0).bin\n" }.joined()).utf8), file: "f\(f).yaml").feed, "seed \(Self.seed)")
            }
            var keys = Set<ResourceKey>()
            var cached = CachedFiles()
            for (f, feed) in feeds.enumerated() {
                for position in feed.resources.indices where random.next() % 3 == 0 {
                    keys.insert(ResourceKey(feed: feed.name, path: feed.resources[position].path))
                    cached.insert(feed: feed.name, position: position)
                }
                #expect(!cached.contains(feed: feed.name, position: feed.resources.count), "seed \(Self.seed), round \(round), feed \(f)")
            }
            #expect(cached.isEmpty == keys.isEmpty)
            #expect(CachedFiles(keys, in: feeds) == cached, "seed \(Self.seed), round \(round)")
            for feed in feeds {
                for (position, resource) in feed.resources.enumerated() {
                    #expect(cached.contains(feed: feed.name, position: position) == keys.contains(ResourceKey(feed: feed.name, path: resource.path)),
                            "seed \(Self.seed), round \(round): \(feed.name) #\(position)")
                }
            }
            #expect(!cached.contains(feed: "elsewhere", position: 0))
        }
    }

    /// A read of state.db keys each row by its path's bytes: paths that are canonically
    /// equivalent but not the same bytes ("é" as one scalar and as "e" + U+0301) are two
    /// files on disk and two records, and each reads back its own bytes.
    @Test func stateRowsAreKeyedByTheirPathsBytes() throws {
        let folder = try TemporaryFolder()
        let store = try StateStore.openForWriting(folder.path + "/state.db")
        let paths = ["a/rather/long/path.bin", "short.bin", "caf\u{E9}.bin", "cafe\u{301}.bin", "d/\u{FC}ber-a-long-name.mp4", "d/u\u{308}ber-a-long-name.mp4"]
        for (index, path) in paths.enumerated() {
            try store.recordValidated(ResourceKey(feed: "f", path: path), urlHash: "h", validators: Validators(), length: UInt64(index),
                                      sha256: nil, placed: true, at: 1)
        }
        let snapshot = try store.snapshot()
        #expect(snapshot.resources.count == paths.count)
        #expect(Set(snapshot.resources.map { Array($0.key.path.utf8) }) == Set(paths.map { Array($0.utf8) }))
        for (index, path) in paths.enumerated() {
            #expect(snapshot.resources[ResourceKey(feed: "f", path: path)]?.length == UInt64(index), "\(path.debugDescription)")
        }
        // The same in a set of keys, and in the records' table without state.db.
        #expect(Set(paths.map { ResourceKey(feed: "f", path: $0) }).count == paths.count)
        var table = ResourceStates()
        for (index, path) in paths.enumerated() { table[ResourceKey(feed: "f", path: path)] = ResourceState(urlHash: "\(index)") }
        #expect(table.count == paths.count && table[ResourceKey(feed: "f", path: "cafe\u{301}.bin")]?.urlHash == "3")
    }

    /// Validators are octets (RFC 9110 §8.8.3): an ETag canonically equivalent to another but
    /// not the same bytes is another validator, and a record keeps the last response's own.
    @Test func validatorsCompareTheirBytes() {
        let composed = Validators(etag: "\"caf\u{E9}\""), decomposed = Validators(etag: "\"cafe\u{301}\"")
        #expect(composed != decomposed)
        var state = ResourceState(urlHash: String(repeating: "a", count: 64))
        state.validators = composed
        state.lastResponse = ResponseFacts(etag: decomposed.etag, date: "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(state.lastResponse.map { Array(($0.etag ?? "").utf8) } == Array((decomposed.etag ?? "").utf8))
    }

    /// `PlanRows` (numbers, and indexes into the feed's texts) against a plain array of
    /// `PlanItem`s: random rows appended, rewritten whole, changed through their numbers and
    /// their reason, and reordered, read back the same each way.
    @Test func planRowsGiveBackTheirItems() throws {
        var random = SplitMix64(seed: Self.seed)
        let yaml = "name: f\nresources:\n" + (0..<40).map { "  - { url: \"https://e.com/\($0)?sig=\($0)\", path: \"d/p\($0)-and-a-longer-name.bin\" }\n" }.joined()
        let feed = try #require(FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "f.yaml").feed, "seed \(Self.seed)")
        let statuses = ResourceStatus.allCases, reasons = ["fresh", "", "not cached", "attempt 1 of 5 failed", "é", "e\u{301}"]
        func number() -> UInt64? { random.next() % 3 == 0 ? nil : random.next() % 5 }
        func item(row: Int) -> PlanItem {
            var item = PlanItem(feed: feed.name, resource: feed.resources[row], row: row, status: statuses[Int(random.next() % 7)],
                                reason: reasons[Int(random.next() % 6)], bytes: number(), remaining: number())
            item.error = random.next() % 2 == 0 ? nil : Self.text(&random)
            switch random.next() % 3 {
            case 0: item.servedBy = nil
            case 1: item.server = .entry
            default: item.servedBy = random.next() % 2 == 0 ? "" : Self.text(&random)
            }
            item.next = number().map { Instant(nanoseconds: Int64($0)) }
            item.fits = random.next() % 3 == 0 ? nil : random.next() % 2 == 0
            item.startOrder = number().map { Int($0) - 2 }
            item.resumable = random.next() % 2 == 0
            item.priority = Priority.allCases[Int(random.next() % 3)]
            return item
        }
        for round in 0..<30 {
            var rows = PlanRows(feed: feed.name, resources: feed.resources)
            var plain: [PlanItem] = []
            for row in 0..<Int(random.next() % 41) {
                let made = item(row: row)
                rows.append(made)
                plain.append(made)
            }
            for _ in 0..<plain.count {
                let at = Int(random.next() % UInt64(plain.count))
                switch random.next() % 3 {
                case 0:
                    let made = item(row: Int(random.next() % 40))
                    rows[at] = made
                    plain[at] = made
                case 1:
                    let status = statuses[Int(random.next() % 7)], bytes = number()
                    rows[values: at].status = status
                    rows[values: at].bytes = bytes
                    plain[at].status = status
                    plain[at].bytes = bytes
                default:
                    let reason = reasons[Int(random.next() % 6)]
                    rows.setReason(reason, at: at)
                    plain[at].reason = reason
                }
            }
            var order = Array(plain.indices)
            order.shuffle(using: &random)
            rows.permute(into: order)
            plain = order.map { plain[$0] }
            #expect(Array(rows) == plain, "seed \(Self.seed), round \(round)")
            // Byte for byte: `==` would take "é" for "e\u{301}".
            let bytes = { (items: [PlanItem]) in items.map { [$0.reason, $0.error ?? "-", $0.servedBy ?? "-"].map { Array($0.utf8) } } }
            #expect(bytes(Array(rows)) == bytes(plain), "seed \(Self.seed), round \(round)")
            #expect(rows.allValues.map(\.status) == plain.map(\.status), "seed \(Self.seed), round \(round)")
            #expect(rows.indices.allSatisfy { rows.path(at: $0) == plain[$0].path && rows.reason(at: $0) == plain[$0].reason })
            for reason in reasons {
                #expect(rows.contains(reason: reason) == plain.contains { $0.reason.utf8.elementsEqual(reason.utf8) }, "seed \(Self.seed): \(reason)")
            }
            #expect(plain.allSatisfy { !$0.url.contains("sig") }, "query values are elided")
        }
        #expect(MemoryLayout<PlanRows.Row>.stride <= 88, "\(MemoryLayout<PlanRows.Row>.stride) bytes a row")
    }

    /// `TransferJob`'s packed fields (narrow counts, a bit for the length, the mirror parts
    /// behind one reference) against plain optionals: a job is a value, so a copy changed
    /// leaves the one it came from as it was.
    /// `Resource` keeps `size`, `expires` and its `sha256` inline with bits, and the parts few
    /// entries have (mirrors, headers, `max_size`, `not_before`) behind one shared reference,
    /// copied on change: every field reads back what was set, in any order, and a copy made
    /// before a change keeps what it had.
    @Test func resourcesKeepWhatIsSetAndCopiesStayApart() {
        var random = SplitMix64(seed: Self.seed &+ 8)
        let listed = PlannerTests.feed(
            "name: t\nresources:\n  - url: https://e.com/a.bin\n    sha256: \(String(repeating: "0f", count: 32))\n"
                + "    mirrors: [https://m.com/a.bin, https://n.com/a.bin]\n    headers: { X-Key: one }\n"
                + "  - url: https://e.com/b.bin\n    headers: { X-Key: two, X-Other: three }\n").resources
        var resource = listed[0]
        #expect(resource.sha256 == String(repeating: "0f", count: 32) && listed[1].sha256 == nil)
        typealias Plain = (size: UInt64?, maxSize: UInt64?, notBefore: Instant?, expires: Instant?, mirrors: [ResourceURL]?,
                           headers: [HeaderField], priority: Priority, line: Int)
        var plain: Plain = (resource.size, resource.maxSize, resource.notBefore, resource.expires, resource.mirrors,
                            resource.headers, resource.priority, resource.location.line)
        #expect(plain.mirrors?.count == 2 && plain.headers.count == 1)
        func same(_ r: Resource, _ p: Plain) -> Bool {
            r.size == p.size && r.maxSize == p.maxSize && r.notBefore == p.notBefore && r.expires == p.expires && r.mirrors == p.mirrors
                && r.headers == p.headers && r.priority == p.priority && r.location.line == p.line
                && r.sha256 == String(repeating: "0f", count: 32) && r.url.text == "https://e.com/a.bin"
        }
        var copies: [(Resource, Plain)] = []
        func number() -> UInt64? { random.next() % 3 == 0 ? nil : [0, 1, UInt64.max, random.next()][Int(random.next() % 4)] }
        func instant() -> Instant? { number().map { Instant(nanoseconds: Int64(bitPattern: $0)) } }
        for round in 0..<3000 {
            switch random.next() % 8 {
            case 0: let v = number(); (resource.size, plain.size) = (v, v)
            case 1: let v = number(); (resource.maxSize, plain.maxSize) = (v, v)
            case 2: let v = instant(); (resource.notBefore, plain.notBefore) = (v, v)
            case 3: let v = instant(); (resource.expires, plain.expires) = (v, v)
            case 4:
                let v: [ResourceURL]? = random.next() % 3 == 0 ? nil : Array(listed[0].mirrors!.prefix(Int(random.next() % 2) + 1))
                (resource.mirrors, plain.mirrors) = (v, v)
            case 5: let v = random.next() % 3 == 0 ? [] : listed[Int(random.next() % 2)].headers; (resource.headers, plain.headers) = (v, v)
            case 6: let v = Priority.allCases[Int(random.next() % 3)]; (resource.priority, plain.priority) = (v, v)
            default: let v = Int(random.next() % 100_000) + 1; (resource.location, plain.line) = (SourceLocation(line: v, column: 5), v)
            }
            #expect(same(resource, plain), "seed \(Self.seed), round \(round)")
            if random.next() % 50 == 0 { copies.append((resource, plain)) }
        }
        #expect(copies.allSatisfy { same($0.0, $0.1) }, "seed \(Self.seed): a copy changed with the resource it came from")
        #expect(MemoryLayout<Resource>.stride <= 136, "\(MemoryLayout<Resource>.stride) bytes a resource")
    }

    /// A path written in the URL is read from the URL's text; whatever the bytes, it reads
    /// back as set, and changing the URL or the path leaves the other as it was.
    @Test func pathsReadFromTheirURLGiveBackTheirBytes() throws {
        var random = SplitMix64(seed: Self.seed &+ 9)
        let parts = ["video", "2026", "a", "menü", "e\u{301}t\u{e9}", "%20x", "lobby-000123.mp4", "d042", "f0000042.bin", "日本"]
        func segments() -> [String] { (0..<Int(random.next() % 4) + 1).map { _ in parts[Int(random.next() % UInt64(parts.count))] } }
        var shared = 0
        for round in 0..<2000 {
            let folders = segments()
            let query = random.next() % 3 == 0 ? "?sig=\(random.next())" : ""
            let url = try ResourceURL.parse("https://cdn.example.com/" + folders.joined(separator: "/") + query)
            let path: String = switch random.next() % 4 {
            case 0: folders.joined(separator: "/")  // the URL's path without its '/'
            case 1: folders.suffix(2).joined(separator: "/")  // its end
            case 2: "other/" + folders.joined(separator: "/")  // not in the URL
            default: String(decoding: Array(url.text.utf8).suffix(Int(random.next() % 30) + 1), as: UTF8.self)  // the text's last bytes
            }
            var resource = Resource(url: url, path: path, digest: nil, size: nil, maxSize: nil, notBefore: nil, expires: nil,
                                    priority: .normal, headers: [], location: SourceLocation(line: 1, column: 1))
            #expect(Array(resource.path.utf8) == Array(path.utf8) && resource.url.text == url.text, "seed \(Self.seed), round \(round)")
            if resource.pathIsShared { shared += 1 }
            let bytes = Array(url.text.utf8), count = path.utf8.count
            let written = count > 15 && (bytes.prefix(url.pathBytes.upperBound).suffix(count).elementsEqual(path.utf8)
                || bytes.suffix(count).elementsEqual(path.utf8))
            #expect(!written || resource.pathIsShared, "seed \(Self.seed), round \(round): '\(path)' is in \(url.text) and not shared")
            let copy = resource
            let other = try ResourceURL.parse("http://m.example.org/x/" + segments().joined(separator: "/"))
            resource.url = other
            #expect(Array(resource.path.utf8) == Array(path.utf8) && resource.url.text == other.text, "seed \(Self.seed), round \(round)")
            let tail = String(decoding: Array(other.text.utf8).suffix(20), as: UTF8.self)  // repaired when cut in a character
            resource.path = tail
            #expect(resource.url.text == other.text && resource.path.utf8.elementsEqual(tail.utf8), "seed \(Self.seed), round \(round)")
            #expect(Array(copy.path.utf8) == Array(path.utf8) && copy.url.text == url.text, "seed \(Self.seed): a copy changed")
        }
        #expect(shared > 500, "seed \(Self.seed): \(shared) of 2,000 paths read from their URL")
        // The decoder's resources too, the default path among them.
        let feed = PlannerTests.feed("name: t\nresources:\n  - url: https://e.com/media/2026/lobby-000123.mp4?v=2\n"
            + "    path: media/2026/lobby-000123.mp4\n  - url: https://e.com/media/2026/lobby-000124.mp4\n")
        #expect(feed.resources.map(\.path) == ["media/2026/lobby-000123.mp4", "lobby-000124.mp4"])
        #expect(feed.resources.allSatisfy { $0.pathIsShared })
        #expect(MemoryLayout<Resource>.stride <= 136, "\(MemoryLayout<Resource>.stride) bytes a resource")
    }

    @Test func transferJobsKeepWhatIsSetAndCopiesStayApart() throws {
        var random = SplitMix64(seed: Self.seed &+ 7)
        let feed = JobFeed(PlannerTests.feed("name: t\nresources:\n  - url: https://e.com/a.bin\n    mirrors: [https://m.com/a.bin, https://n.com/a.bin]\n"))
        let digest = try! #require(Digest256(hex: String(repeating: "ab", count: 32)))
        var job = TransferJob(feed: feed, position: 0, urlDigest: digest, release: 0, cachedValidators: nil,
                              partial: nil, failures: 0)
        typealias Plain = (length: UInt64?, failures: Int, url: Int, pass: MirrorOrder?, served: Int?, byURL: [Validators?]?, partial: PartialState?)
        var plain: Plain = (nil, 0, 0, nil, nil, nil, nil)
        var copies: [(TransferJob, Plain)] = []
        func same(_ job: TransferJob, _ plain: Plain) -> Bool {
            job.cachedLength == plain.length && job.failures == plain.failures && job.urlIndex == plain.url && job.mirrorPass == plain.pass
                && job.servedIndex == plain.served && job.validatorsByURL == plain.byURL && job.partial == plain.partial
        }
        for round in 0..<3000 {
            switch random.next() % 7 {
            case 6:
                let partial: PartialState? = random.next() % 3 == 0 ? nil
                    : PartialState(urlHash: "h\(random.next() % 9)", validators: Validators(etag: "\"p\""), totalLength: random.next() % 2 == 0 ? nil : 9,
                                   syncedOffset: random.next() % 100, updatedAt: 1)
                (job.partial, plain.partial) = (partial, partial)
            case 0:
                let length: UInt64? = random.next() % 3 == 0 ? nil : [0, 1, UInt64.max, random.next()][Int(random.next() % 4)]
                (job.cachedLength, plain.length) = (length, length)
            case 1:
                let failures = Int(random.next() % 1000)
                (job.failures, plain.failures) = (failures, failures)
            case 2:
                let index = Int(random.next() % 3)
                (job.urlIndex, plain.url) = (index, index)
            case 3:
                let pass: MirrorOrder? = random.next() % 3 == 0 ? nil : MirrorOrder(count: 3, servedBy: Int(random.next() % 3))
                (job.mirrorPass, plain.pass) = (pass, pass)
            case 4:
                let served: Int? = random.next() % 3 == 0 ? nil : Int(random.next() % 3)
                (job.servedIndex, plain.served) = (served, served)
            default:
                let byURL: [Validators?]? = random.next() % 3 == 0 ? nil : [Validators(etag: "\"\(random.next() % 9)\""), nil, Validators()]
                (job.validatorsByURL, plain.byURL) = (byURL, byURL)
            }
            #expect(same(job, plain), "seed \(Self.seed), round \(round)")
            if random.next() % 50 == 0 { copies.append((job, plain)) }
        }
        #expect(copies.allSatisfy { same($0.0, $0.1) }, "seed \(Self.seed): a copy changed with the job it came from")
        #expect(job.urlHash == String(repeating: "ab", count: 32))
        #expect(MemoryLayout<TransferJob>.stride <= 144, "\(MemoryLayout<TransferJob>.stride) bytes a job")
    }

    /// `DateText` against Foundation's formatter (the reference for the IMF-fixdate form) and
    /// plain strings: a date as `fixdate` writes it is held as seconds, anything else as it
    /// is, and `text` gives back every byte; equality is byte equality.
    @Test func dateTextsGiveBackTheirBytes() {
        var random = SplitMix64(seed: Self.seed &+ 11)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let first: Int64 = -2_208_988_800, last: Int64 = 253_402_300_799  // 1900-01-01 to 9999-12-31, 23:59:59
        var kept: [(String, DateText)] = []
        for round in 0..<3000 {
            let seconds = first + Int64(random.next() % UInt64(last - first + 1))
            let reference = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            #expect(DateText.fixdate(seconds) == reference, "seed \(Self.seed), round \(round): \(seconds)")
            #expect(HTTPDate.parse(reference) == seconds, "seed \(Self.seed), round \(round)")
            let date = DateText(reference)
            #expect(date.isSeconds && Array(date.text.utf8) == Array(reference.utf8), "seed \(Self.seed), round \(round): \(reference)")
            // One byte changed, dropped or added, or a spelling no formatter writes: kept as text
            // unless it is still a date exactly as formatted.
            var bytes = Array(reference.utf8)
            switch random.next() % 5 {
            case 0: bytes[Int(random.next() % 29)] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.remove(at: Int(random.next() % 29))
            case 2: bytes.insert(UInt8(truncatingIfNeeded: random.next() % 128), at: Int(random.next() % 30))
            case 3: bytes = Array(["", "\u{0}", "\u{0}\u{0}x", "\u{0}12", "Thu, 01 Jan 1970 00:00:60 GMT", "thu, 01 Jan 1970 00:00:00 GMT",
                                   "Thu, 01 Jan 1970 00:00:00 UTC", "Fri, 01 Jan 1970 00:00:00 GMT", "Sat, 29 Feb 2025 00:00:00 GMT",
                                   "Thu, 01 Jan 1970 00:00:00 GMT\u{0}", "e\u{301}", "\u{e9}", "Sunday, 06-Nov-94 08:49:37 GMT"][Int(random.next() % 13)].utf8)
            default: bytes = Array(reference.replacingOccurrences(of: " ", with: "  ").utf8)
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let other = DateText(text)
            let viaBytes = bytes.withUnsafeBufferPointer { DateText(bytes: $0) }
            // Held as seconds only for the years DateText keeps so, 1900 to 9999 (a byte changed
            // in the year can make an earlier date that is still formatted as written).
            let stillADate = formatter.date(from: text).map {
                Array(formatter.string(from: $0).utf8) == Array(text.utf8) && $0.timeIntervalSince1970 >= TimeInterval(first)
            } ?? false
            #expect(Array(other.text.utf8) == Array(text.utf8), "seed \(Self.seed), round \(round): \(text.debugDescription)")
            #expect(other == viaBytes && Array(viaBytes.text.utf8) == Array(text.utf8), "seed \(Self.seed), round \(round)")
            #expect(other.isSeconds == (stillADate && Array(text.utf8).count == 29 && !text.hasPrefix("\u{0}")),
                    "seed \(Self.seed), round \(round): \(text.debugDescription)")
            kept.append((reference, date))
            kept.append((text, other))
        }
        for _ in 0..<2000 {
            let a = kept[Int(random.next() % UInt64(kept.count))], b = kept[Int(random.next() % UInt64(kept.count))]
            #expect((a.1 == b.1) == Array(a.0.utf8).elementsEqual(Array(b.0.utf8)), "seed \(Self.seed): \(a.0.debugDescription), \(b.0.debugDescription)")
        }
        #expect(DateText("e\u{301}") != DateText("\u{e9}"), "canonically equal, not the same bytes")
        // Before 1900 (seed 3868056905 made this from a 1932 date): a date, kept as its text.
        let early = DateText("Sat, 14 Jul 1832 07:50:15 GMT")
        #expect(!early.isSeconds && early.text == "Sat, 14 Jul 1832 07:50:15 GMT")
        #expect(DateText("Mon, 01 Jan 1900 00:00:00 GMT").isSeconds && !DateText("Sun, 31 Dec 1899 23:59:59 GMT").isSeconds)
        #expect(MemoryLayout<Validators>.size <= 32, "\(MemoryLayout<Validators>.size) bytes")
    }
}
