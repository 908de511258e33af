import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §8's timing of feed sources, against an independent reference: the per-machine
/// offset from coreutils' `sha256sum` and the hex digits' arithmetic, over seeded random
/// machine ids, URLs and refreshes (`PREFETCH_SOURCE_SEED` replays a seed); the backoff
/// from its definition; due times.
@Suite struct SourceTimingTests {
    /// The reference offset: `sha256sum` of the exact bytes, its first 16 hex digits as an
    /// unsigned number, modulo refresh/10 in whole seconds (0 when that is under 1).
    static func referenceOffsets(_ cases: [(id: String, url: String, refresh: Int64)]) throws -> [Int64] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("source-offsets-" + UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var names: [String] = []
        for (index, item) in cases.enumerated() {
            let name = String(format: "%04d", index)
            try Data((item.id + "\n" + item.url).utf8).write(to: folder.appendingPathComponent(name))
            names.append(name)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = names
        process.currentDirectoryURL = folder
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let digests = String(decoding: output, as: UTF8.self).split(separator: "\n").map { String($0.prefix(64)) }
        #expect(digests.count == cases.count)
        return zip(cases, digests).map { item, digest in
            let modulus = item.refresh / 10
            guard modulus >= 1, let high = UInt64(digest.prefix(16), radix: 16) else { return 0 }
            return Int64(high % UInt64(modulus))
        }
    }

    @Test func theOffsetMatchesTheReferenceOverRandomInputs() throws {
        let seed = ProcessInfo.processInfo.environment["PREFETCH_SOURCE_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64.max)
        print("theOffsetMatchesTheReferenceOverRandomInputs: PREFETCH_SOURCE_SEED=\(seed)")
        var random = SplitMix64(seed: seed)
        let alphabet = Array("abcdef0123456789")
        let urlParts = ["https://cms.example.com/kiosks/", "http://10.0.0.1:8080/feeds/", "https://a.b/x?site=", "https://c.d/ü/"]
        var cases: [(id: String, url: String, refresh: Int64)] = []
        for _ in 0..<300 {
            let id = String((0..<32).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
            let url = urlParts[Int(random.next() % UInt64(urlParts.count))] + "lobby\(random.next() % 1000).yaml"
            // Refreshes around the edges: under 10 s (offset 0), 10–19 s (modulus 1), up to days.
            let refresh: Int64 = switch random.next() % 4 {
            case 0: Int64(random.next() % 20)
            case 1: 900
            default: Int64(1 + random.next() % 400_000)
            }
            cases.append((id, url, refresh))
        }
        let expected = try Self.referenceOffsets(cases)
        for (item, reference) in zip(cases, expected) {
            let offset = SourceTiming.offset(machineID: item.id, url: item.url, refresh: TimeSpan(seconds: item.refresh))
            #expect(offset == reference, "seed \(seed): \(item)")
            #expect(offset >= 0 && (item.refresh < 10 ? offset == 0 : offset < item.refresh / 10))
        }
    }

    /// Without a usable machine id, no offset (as jitter, SPEC §6's fleet images).
    @Test func noMachineIDNoOffset() {
        #expect(SourceTiming.offset(machineID: nil, url: "https://a/b.yaml", refresh: .hours(1)) == 0)
    }

    /// 30 s, doubling, never past refresh, for every count of failures up to far past the cap.
    @Test func theBackoffDoublesFrom30sUpToRefresh() {
        for refresh in [1, 29, 30, 31, 59, 60, 61, 900, 3600, 86_400] as [Int64] {
            for failures in 1...80 {
                var reference: Double = 30
                for _ in 1..<failures { reference *= 2 }
                #expect(SourceTiming.backoff(failures: failures, refresh: TimeSpan(seconds: refresh)) == Int64(min(reference, Double(refresh))),
                        "refresh \(refresh), failures \(failures)")
            }
        }
    }

    @Test func dueTimes() {
        let now = Instant(seconds: 1_800_000_000)
        let refresh = TimeSpan.minutes(15)
        // No check recorded: at once.
        #expect(SourceTiming.due(lastCheck: nil, failures: 0, refresh: refresh, offset: 42, holdUntil: nil, now: now) == now)
        // After a good check: refresh less the offset.
        let last = now.advanced(bySeconds: -100)
        #expect(SourceTiming.due(lastCheck: last, failures: 0, refresh: refresh, offset: 42, holdUntil: nil, now: now)
                == last.advanced(bySeconds: 900 - 42))
        // After failed ones: the backoff (no offset), or the origin's hold when later.
        #expect(SourceTiming.due(lastCheck: last, failures: 3, refresh: refresh, offset: 42, holdUntil: nil, now: now) == last.advanced(bySeconds: 120))
        #expect(SourceTiming.due(lastCheck: last, failures: 1, refresh: refresh, offset: 42, holdUntil: last.advanced(bySeconds: 10), now: now)
                == last.advanced(bySeconds: 30))
        #expect(SourceTiming.due(lastCheck: last, failures: 1, refresh: refresh, offset: 42, holdUntil: last.advanced(bySeconds: 500), now: now)
                == last.advanced(bySeconds: 500))
    }
}

/// The config's `feed_sources`: labels, default signature URLs, default feed names, and the
/// checks of each entry.
@Suite struct FeedSourceConfigTests {
    static func decode(_ yaml: String) -> (Config, [String]) {
        let (config, diagnostics) = ConfigLoader.decode(Array(yaml.utf8), file: "c.yaml")
        return (config, diagnostics.map(\.headline))
    }

    @Test func labelsElideQueryValuesAndKeepTheirKeys() throws {
        let table: [(String, String)] = [
            ("https://cms.example.com/kiosks/lobby.yaml", "https://cms.example.com/kiosks/lobby.yaml"),
            ("https://cms.example.com/feeds?site=lobby", "https://cms.example.com/feeds?site=…"),
            ("https://a/f?site=1&t=secret&flag", "https://a/f?site=…&t=…&…"),
            ("https://a/f?", "https://a/f?…"),
        ]
        for (url, label) in table {
            #expect(FeedSource.label(of: try ResourceURL.parse(url)) == label, "\(url)")
        }
    }

    @Test func theDefaultSignatureKeepsTheQuery() throws {
        #expect(FeedSource.defaultSignature(of: try ResourceURL.parse("https://a/k/lobby.yaml?t=X")) == "https://a/k/lobby.yaml.minisig?t=X")
        #expect(FeedSource.defaultSignature(of: try ResourceURL.parse("https://a/k/lobby.yaml")) == "https://a/k/lobby.yaml.minisig")
    }

    @Test func everyKeyAndTheDefaults() throws {
        let key = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"
        let (config, errors) = Self.decode("""
            feed_sources:
              - url: https://cms.example.com/kiosks/lobby.yaml
              - url: http://cms.example.com/feeds?site=hall
                name: hall
                public_keys: [\(key), \(key)]
                refresh: 1h
                signature: http://cms.example.com/sig?site=hall
                headers: { Authorization: "Bearer ${CMS_TOKEN}" }
            """)
        #expect(errors.isEmpty, "\(errors)")
        #expect(config.feedSources.count == 2)
        let lobby = config.feedSources[0], hall = config.feedSources[1]
        #expect(lobby.refresh.seconds == 900 && lobby.publicKeys.isEmpty && lobby.label == "https://cms.example.com/kiosks/lobby.yaml")
        #expect(lobby.signature.text == "https://cms.example.com/kiosks/lobby.yaml.minisig" && lobby.defaultFeedName == "lobby")
        #expect(hall.label == "hall" && hall.refresh.seconds == 3600 && hall.publicKeys.count == 2)
        let id = try MinisignPublicKey(parsing: key).keyIDHex
        #expect(hall.publicKeys.map(\.keyIDHex) == [id, id])
        #expect(hall.signature.text == "http://cms.example.com/sig?site=hall")
        #expect(hall.headers.map(\.name) == ["Authorization"] && hall.headers.first?.value.variables == ["CMS_TOKEN"])
    }

    @Test func entryErrors() {
        let key = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"
        let table: [(String, String)] = [
            ("  - url: http://a/b.yaml\n", "c.yaml:2:10: error: a feed source over plain http needs a public_key (its manifest must be signed), or use https"),
            ("  - name: x\n", "c.yaml:2:5: error: a feed source needs a 'url'"),
            ("  - url: ftp://a/b.yaml\n", "c.yaml:2:10: error:"),
            ("  - url: https://a/b.yaml\n    refrsh: 1m\n", "c.yaml:3:5: error: unknown key 'refrsh' in a feed source (did you mean 'refresh'?)"),
            ("  - url: https://a/b.yaml\n    refresh: 0s\n", "c.yaml:3:14: error: refresh must be longer than 0s"),
            ("  - url: https://a/b.yaml\n    public_key: \(key)\n    public_keys: [\(key)]\n",
             "c.yaml:4:5: error: give either public_key or public_keys, not both"),
            ("  - url: https://a/b.yaml\n    name: Bad Name\n", "c.yaml:3:11: error:"),
            ("  - url: https://a/b.yaml\n  - url: https://a/b.yaml\n", "c.yaml:3:5: error: feed source 'https://a/b.yaml' is listed twice (first at line 2)"),
            ("  - url: https://a/b.yaml\n    client_cert: /nonexistent.pem\n", "c.yaml:3:18: error: client_cert '/nonexistent.pem' cannot be read"),
        ]
        for (entries, expected) in table {
            let (_, errors) = Self.decode("feed_sources:\n" + entries)
            #expect(errors.contains { $0.hasPrefix(expected) }, "\(entries): \(errors)")
        }
    }
}

/// The copy in force's file: what is written is read back whole; another format or damaged
/// bytes read as unreadable (never applied, SPEC §8), never as a copy.
@Suite struct SourceCopiesTests {
    @Test func aCopyIsReadBackWhole() {
        let copy = SourceCopy(manifest: Array("resources:\n  - url: https://a/b\n".utf8), signature: Array("untrusted comment: x\n".utf8),
                              validators: Validators(etag: "\"v1\"", lastModified: "Sun, 29 Nov 2026 10:00:00 GMT"),
                              fetchedAt: Instant(nanoseconds: 1_800_000_000_123_456_789), keyID: "72B8714AD9EFAED7", timestamp: 1_780_000_000)
        #expect(SourceCopies.decode(SourceCopies.encode(copy, url: "https://a/lobby.yaml?…")) == .copy(copy))
        let unsigned = SourceCopy(manifest: [], signature: nil, validators: Validators(), fetchedAt: Instant(seconds: 5), keyID: nil, timestamp: nil)
        #expect(SourceCopies.decode(SourceCopies.encode(unsigned, url: "u")) == .copy(unsigned))
    }

    @Test func anotherFormatOrDamageIsUnreadable() {
        let copy = SourceCopy(manifest: Array("resources: []\n".utf8), signature: nil, validators: Validators(),
                              fetchedAt: Instant(seconds: 5), keyID: nil, timestamp: nil)
        let bytes = SourceCopies.encode(copy, url: "u")
        var newer = bytes
        newer.replaceSubrange(0..<22, with: Array("prefetch source copy 2".utf8))
        guard case .unreadable(let reason) = SourceCopies.decode(newer) else { Issue.record("a newer format was read"); return }
        #expect(reason.contains("format 2"))
        var flipped = bytes
        flipped[flipped.count - 2] ^= 0x01
        #expect(SourceCopies.decode(flipped) == .unreadable("the copy in force is damaged"))
        #expect(SourceCopies.decode(Array(bytes.dropLast())) == .unreadable("the copy in force is damaged"))
        #expect(SourceCopies.decode([]) == .unreadable("the copy in force is damaged"))
    }
}
