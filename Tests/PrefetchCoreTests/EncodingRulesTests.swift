import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §7 "Encoded bodies": the response rules over every kind of `Content-Encoding` a
/// server sends × the three `encoding` modes × the statuses that carry a body × a
/// revalidation answered with the cached copy's own strong ETag × a resume of a partial
/// stored with or without an encoding × a Content-Length given or not. The expected
/// decision is worked out here from the SPEC's words, not from the code.
@Suite struct EncodingRulesTests {
    /// Content-Encoding fields as servers send them, with the coding they name (nil: none).
    static let fields: [(field: String?, coding: String?, decodable: Bool)] = [
        (nil, nil, true), ("identity", nil, true), ("gzip", "gzip", true), ("GZIP", "gzip", true), ("x-gzip", "x-gzip", true),
        (" gzip ", "gzip", true), ("deflate", "deflate", true), ("br", "br", true), ("zstd", "zstd", true),
        ("gzip, br", "gzip, br", true), ("compress", "compress", false), ("gzip, compress", "gzip, compress", false),
    ]
    static let offered = ["gzip", "deflate", "br", "zstd"]
    static let cachedTag = "\"copy-1\""

    enum Expected: Equatable {
        case cachedCopy, restart(UInt64?), append, refuse(TransferFailure.Kind, discard: Bool, says: [String])
    }

    @Test func everyEncodingUnderEveryMode() {
        var combinations = 0
        for (field, coding, decodable) in Self.fields {
            for mode in EncodingMode.allCases {
                for status in [200, 206] {
                    for sameStrongETag in [false, true] where !(sameStrongETag && status == 206) {
                        for partialEncoding in [nil, "gzip", "br"] as [String?] {
                            for resumed in [false, true] where !(resumed && sameStrongETag) {
                                for length in [nil, 5000] as [UInt64?] {
                                    combinations += 1
                                    let label = "Content-Encoding \(field ?? "(none)"), encoding: \(mode), \(status), same strong ETag \(sameStrongETag), partial stored \(partialEncoding ?? "identity"), resumed \(resumed), Content-Length \(length.map(String.init) ?? "none")"
                                    var request = ResponseRules.Request(resumeFrom: resumed ? 1000 : 0, partialTotal: resumed ? 5000 : nil,
                                                                        revalidating: resumed ? nil : Validators(etag: Self.cachedTag),
                                                                        encoding: mode, offered: mode == .decode ? Self.offered : [],
                                                                        partialEncoding: resumed ? partialEncoding : nil)
                                    request.size = nil
                                    var head = ResponseRules.Head(status: status, etag: sameStrongETag ? Self.cachedTag : "\"new-2\"")
                                    head.contentEncoding = field
                                    head.contentLength = length
                                    if status == 206 { head.contentRange = "bytes \(resumed ? 1000 : 0)-4999/5000" }
                                    let expected = Self.expect(coding: coding, decodable: decodable, mode: mode, status: status,
                                                               sameStrongETag: sameStrongETag, resumed: resumed,
                                                               partialEncoding: resumed ? partialEncoding : nil, length: length)
                                    Self.check(ResponseRules.onHead(request, head), expected, label)
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(combinations > 1000, "\(combinations)")
    }

    /// SPEC §7, read literally.
    static func expect(coding: String?, decodable: Bool, mode: EncodingMode, status: Int, sameStrongETag: Bool, resumed: Bool,
                       partialEncoding: String?, length: UInt64?) -> Expected {
        // "The rule that keeps a 200 carrying the copy's own strong ETag as a 304 comes first."
        if status == 200 && sameStrongETag { return .cachedCopy }
        let named = coding.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        switch mode {
        case .refuse:
            // "refused by default: an error naming the encoding and the key …, one attempt,
            // not retried in the run (as a sha256 mismatch)."
            if let named { return .refuse(.mismatch, discard: false, says: ["Content-Encoding: \(named)", "encoding: keep", "decode"]) }
        case .keep:
            // "stores the body exactly as sent …; a resume must carry the same encoding."
            let sent = named.map { $0 == "x-gzip" ? "x-gzip" : $0 }
            if status == 206 && resumed && sent != partialEncoding {
                return .refuse(.transient, discard: true, says: ["Content-Encoding: \(sent ?? "identity")", "restarting from zero"])
            }
        case .decode:
            // "offers gzip, deflate, br and zstd as libcurl supports them": another is not decoded.
            if let named, !decodable { return .refuse(.mismatch, discard: true, says: ["Content-Encoding: \(named)", "cannot decode"]) }
            // A decoding transfer never asks for a range: a range of an encoded body is no file.
            if named != nil && status == 206 { return .refuse(.transient, discard: true, says: ["restarting from zero"]) }
            // "Content-Length is checked against the bytes on the wire": it is not the file's length.
            if named != nil { return .restart(nil) }
        }
        return status == 206 ? .append : .restart(length)
    }

    static func check(_ decision: ResponseRules.OnHead, _ expected: Expected, _ label: String) {
        switch (decision, expected) {
        case (.cachedCopy, .cachedCopy), (.append, .append): break
        case (.restart(let total), .restart(let want)): #expect(total == want, "\(label): total \(String(describing: total))")
        case (.refuse(let failure), .refuse(let kind, let discard, let says)):
            #expect(failure.kind == kind && failure.discardPartial == discard, "\(label): \(failure)")
            for words in says { #expect(failure.message.contains(words), "\(label): '\(failure.message)' does not say '\(words)'") }
        default: Issue.record("\(label): \(decision), expected \(expected)")
        }
    }

    /// SPEC §7 "Responses": an invalid response is invalid whatever its encoding — an invalid
    /// Content-Length, or a 206 whose Content-Range cannot be, under every mode and every
    /// Content-Encoding: one transient failure that says nothing of the origin, never an
    /// encoding's refusal (a `mismatch` would not be retried in the run).
    @Test func anInvalidResponseIsInvalidWhateverItsEncoding() {
        let impossibleRanges = ["bytes 999-0/1000", "bytes -0-999/1000", "bytes 0-999/900", "bytes x-y/z", "bytes=0-999/1000", nil]
        var combinations = 0
        for (field, _, _) in Self.fields {
            for mode in EncodingMode.allCases {
                for resumed in [false, true] {
                    let request = ResponseRules.Request(resumeFrom: resumed ? 400 : 0, partialTotal: resumed ? 1000 : nil, encoding: mode,
                                                        offered: mode == .decode ? Self.offered : [], partialEncoding: resumed ? "gzip" : nil)
                    var cases: [(String, ResponseRules.Head)] = []
                    for range in impossibleRanges {
                        var head = ResponseRules.Head(status: 206, etag: "\"c1\"")
                        head.contentRange = range
                        cases.append(("206 with Content-Range \(range ?? "(none)")", head))
                    }
                    for status in [200, 206] {
                        var head = ResponseRules.Head(status: status, etag: "\"c1\"")
                        head.contentRange = status == 206 ? "bytes \(resumed ? 400 : 0)-999/1000" : nil
                        head.invalid = "Content-Length \"ten\" is not a decimal number"
                        cases.append(("\(status) with an invalid Content-Length", head))
                    }
                    for (what, var head) in cases {
                        combinations += 1
                        head.contentEncoding = field
                        let label = "\(what), Content-Encoding \(field ?? "(none)"), encoding: \(mode), resumed \(resumed)"
                        guard case .refuse(let failure) = ResponseRules.onHead(request, head) else {
                            Issue.record("\(label): not refused")
                            continue
                        }
                        #expect(failure.invalidResponse && failure.kind == .transient && failure.holdsOrigin == nil
                                && failure.message.hasPrefix("invalid response: "), "\(label): \(failure)")
                    }
                }
            }
        }
        #expect(combinations == Self.fields.count * EncodingMode.allCases.count * 2 * 8)
    }

    /// Content codings are compared as octets, ASCII letters without case (RFC 9110 §8.4.1:
    /// case-insensitive tokens), never as Unicode text: under `keep`, a 206 whose label is
    /// another byte string than the partial's does not continue it, even where Swift's
    /// String calls them equal ("é" lowercases "É"; "e" + U+0301 is canonically "é"). As
    /// 58e6943 did for validators. Shown by fuzz-response's `keep` property on these inputs.
    @Test func contentCodingsCompareAsOctets() {
        let cases: [(partial: String?, sent: String?, continues: Bool)] = [
            ("gzip", "GZIP", true), ("gzip", " gzip\t", true), (nil, "identity", true), ("IDENTITY", "", true), ("br", "br", true),
            ("\u{C9}", "\u{E9}", false), ("\u{E9}", "e\u{301}", false), ("x-gzip", "gzip", false), ("gzip", nil, false),
        ]
        for (partial, sent, continues) in cases {
            var head = ResponseRules.Head(status: 206, etag: "\"c1\"")
            head.contentRange = "bytes 400-999/1000"
            head.contentEncoding = sent
            let request = ResponseRules.Request(resumeFrom: 400, partialTotal: 1000, encoding: .keep, partialEncoding: partial)
            let label = "partial \(partial.map { Array($0.utf8) } ?? []), sent \(sent.map { Array($0.utf8) } ?? [])"
            #expect(ResumeRule.continuesEncoding(partial: partial, response: sent) == continues, "\(label)")
            switch ResponseRules.onHead(request, head) {
            case .append(let total, let end):
                #expect(continues && total == 1000 && end == 999, "\(label): appended")
            case .refuse(let failure):
                #expect(!continues && failure.message.contains("not the partial's"), "\(label): \(failure.message)")
            case let other:
                Issue.record("\(label): \(other)")
            }
        }
    }

    @Test func theRefusalNamesTheEncodingAndTheKey() {
        let request = ResponseRules.Request()
        var head = ResponseRules.Head(status: 200)
        head.contentEncoding = "gzip"
        guard case .refuse(let failure) = ResponseRules.onHead(request, head) else { Issue.record("not refused"); return }
        #expect(failure.message == "the server sent Content-Encoding: gzip although identity was asked; not placed (set encoding: keep to store it as sent, or decode)")
        #expect(failure.kind == .mismatch)  // one attempt, not retried in the run
        var random = SystemRandomNumberGenerator()
        #expect(RetryDecision.after(failure, failures: 1, policy: RetryPolicy(), now: 0, using: &random).inRun == false)
    }

    /// `decode`: Content-Length against the bytes on the wire, `size` against the decoded bytes.
    @Test func aDecodedBodyIsMeasuredTwice() {
        let request = ResponseRules.Request(size: 10_000, cap: 10_000, capName: "size 10000 bytes", encoding: .decode, offered: Self.offered)
        var head = ResponseRules.Head(status: 200)
        head.contentEncoding = "gzip"
        head.contentLength = 300
        func end(onDisk: UInt64, onWire: UInt64, cleanly: Bool = true) -> ResponseRules.OnEnd {
            ResponseRules.onEnd(request, head, onDisk: onDisk, onWire: onWire, cleanly: cleanly, cut: "cut", now: Date())
        }
        #expect(end(onDisk: 10_000, onWire: 300) == .finalize(total: 10_000))
        guard case .failed(let short) = end(onDisk: 10_000, onWire: 299) else { Issue.record("short wire body placed"); return }
        #expect(short.kind == .transient && short.discardPartial && short.message.contains("299 of 300"))
        guard case .failed(let size) = end(onDisk: 9_999, onWire: 300) else { Issue.record("short decoded body placed"); return }
        #expect(size.kind == .mismatch && size.message.contains("size mismatch"))
        // Without a Content-Length (chunked, or close-delimited), the decoded bytes against size alone.
        head.contentLength = nil
        #expect(end(onDisk: 10_000, onWire: 123) == .finalize(total: 10_000))
        // An identity body under decode is measured as any other.
        head.contentEncoding = nil
        head.contentLength = 10_000
        #expect(end(onDisk: 10_000, onWire: 10_000) == .finalize(total: 10_000))
        if case .failed = end(onDisk: 9_000, onWire: 9_000) {} else { Issue.record("a short identity body was placed") }
        // A Content-Length over the cap refuses an identity body at once, never a decoded one.
        head.contentLength = 20_000
        if case .refuse = ResponseRules.onHead(request, head) {} else { Issue.record("announced 20000 > size accepted") }
        head.contentEncoding = "gzip"
        #expect(ResponseRules.onHead(request, head) == .restart(total: nil))
    }

    @Test func contentCodingNames() {
        #expect(ContentCodings.names(in: "gzip") == ["gzip"])
        #expect(ContentCodings.names(in: " X-Gzip , br") == ["gzip", "br"])
        #expect(ContentCodings.names(in: "identity") == [])
        #expect(ContentCodings.names(in: "gzip,,identity, zstd") == ["gzip", "zstd"])
        // Debian 12's libcurl 7.88.1 is built with zlib, brotli and zstd.
        #expect(ContentCodings.offered == ["gzip", "deflate", "br", "zstd"])
        #expect(ContentCodings.acceptEncoding == "gzip, deflate, br, zstd")
    }

    // MARK: The transfer

    static let url = try! ResourceURL.parse("https://e.com/a.tar.gz")

    /// A decompression bomb is cut off as it is decoded: nothing past the cap is taken.
    @Test func aDecodedBodyIsHeldToTheCapAsItArrives() {
        var machine = TransferStateMachine(url: Self.url, size: nil, maxSize: 64 << 10, globalCap: 1 << 40, sha256: nil, encoding: .decode,
                                           offered: Self.offered, cachedValidators: nil, partial: nil)
        _ = machine.request()
        for line in ["HTTP/1.1 200 OK", "Content-Encoding: gzip", "Content-Length: 4000", ""] { machine.take(line) }
        #expect(machine.decodesBody)
        #expect(machine.bodyBegins() == .writeBody(restart: false, remaining: nil))
        var taken: UInt64 = 0
        while case .write = machine.bodyChunk(16_384) {
            machine.wrote(16_384)
            taken += 16_384
        }
        #expect(taken == 64 << 10)
        #expect(machine.failure?.kind == .mismatch)
        #expect(machine.failure?.message == "the decoded body is longer than max_size 64KiB; cut off and discarded")
    }

    /// A decoded body never resumes, so it is never held for a partial's record (a pause in
    /// the middle of a read would keep its decoded bytes in libcurl's memory).
    @Test func aDecodedBodyIsNotHeldForARecord() {
        for mode in EncodingMode.allCases {
            var machine = TransferStateMachine(url: Self.url, size: nil, maxSize: nil, globalCap: 1 << 40, sha256: nil, encoding: mode,
                                               offered: Self.offered, cachedValidators: nil, partial: nil)
            _ = machine.request()
            for line in ["HTTP/1.1 200 OK", "Content-Encoding: gzip", ""] { machine.take(line) }
            _ = machine.bodyBegins()
            var actions: [TransferStateMachine.Action] = []
            for _ in 0..<40 {
                let action = machine.bodyChunk(65_536)
                actions.append(action)
                guard action == .write else { break }
                machine.wrote(65_536)
            }
            switch mode {
            case .refuse: #expect(actions == [.refuse], "refused on its head")
            case .keep: #expect(actions.contains(.holdForRecord), "keep records its partial before it holds 1 MiB")
            case .decode: #expect(actions.allSatisfy { $0 == .write } && actions.count == 40, "\(actions)")
            }
        }
    }
}

extension TransferStateMachine {
    fileprivate mutating func take(_ line: String) {
        var copy = line + "\r\n"
        _ = copy.withUTF8 { headerLine(UnsafeRawBufferPointer($0)) }
    }
}
