import Foundation
import Testing
@testable import PrefetchCore

/// SPEC §7 "Responses" in the transfer's state machine, event by event: when the exchange
/// stops (at the line that makes the head too large, at the end of an invalid head), what a
/// head that never ended means (no response: the connection's failure, or libcurl's refusal
/// of the head as invalid), and whether the origin answered (SPEC §6: an invalid response
/// neither holds nor clears a hold).
@Suite struct ResponseLimitsTests {
    typealias Machine = TransferStateMachine
    typealias T = TransferStateMachineTests

    static func end(_ m: inout Machine, cleanly: Bool, connectionFailure: String? = nil, malformed: String? = nil) -> Machine.Action {
        m.ended(cleanly: cleanly, tlsError: false, connectionFailure: connectionFailure, malformed: malformed, describe: { "reset" },
                redirectURL: { nil }, maxRedirects: 5, now: Date(timeIntervalSince1970: 1_800_000_000))
    }

    /// An invalid Content-Length stops the exchange as the head ends, whatever the status:
    /// no body begins, and the failure is transient, invalid, and holds nothing — a 503 too.
    @Test(arguments: [200, 206, 302, 304, 404, 503])
    func anInvalidLengthStopsTheExchangeAtTheHeadsEnd(status: Int) {
        var m = T.machine()
        _ = m.request()
        let taken = [m.headerLine("HTTP/1.1 \(status) X\r\n"), m.headerLine("Content-Length: 3\r\n"), m.headerLine("Content-Length: 5\r\n")]
        let goesOn = m.headerLine("\r\n")
        #expect(taken == [true, true, true] && !goesOn, "the blank line did not stop the exchange")
        #expect(m.phase == .failed && !m.awaitsBody)
        let failure = Self.end(&m, cleanly: false).failure
        #expect(failure?.invalidResponse == true && failure?.kind == .transient && failure?.holdsOrigin == nil, "\(String(describing: failure))")
        #expect(failure?.message == "invalid response: two different Content-Length values (3 and 5)")
        #expect(!m.originAnswered)
    }

    /// The line that takes the head past 256 KiB stops it at once (before libcurl's 300 KiB).
    @Test func aHeadOver256KiBStopsAtOnce() {
        var m = T.machine()
        _ = m.request()
        let status = m.headerLine("HTTP/1.1 200 OK\r\n")
        #expect(status)
        var lines = 0
        while m.headerLine("X-Padding: " + String(repeating: "p", count: 1000) + "\r\n") { lines += 1 }
        #expect(lines >= 250 && lines <= 262, "\(lines) lines of 1 KiB were taken")
        #expect(Self.end(&m, cleanly: false).failure?.message == "invalid response: the response head is over 256 KiB")
        #expect(!m.originAnswered)
    }

    /// A redirect to a Location over 8 KiB is not followed: the chain ends with an invalid
    /// response (one transient failure); one of 8 KiB is followed.
    @Test func aLocationOver8KiBEndsTheChain() {
        for size in [8192 - 16, 8192 - 15] {  // "https://e.com/b?" is 16 bytes: a Location of 8,192 and of 8,193
            var m = T.machine()
            _ = m.request()
            let target = "https://e.com/b?" + String(repeating: "q", count: size)
            T.respond(&m, "HTTP/1.1 302 Found", "Location: \(target)")
            let end = m.ended(cleanly: true, tlsError: false, describe: { "ok" }, redirectURL: { target }, maxRedirects: 5,
                              now: Date(timeIntervalSince1970: 1_800_000_000))
            if target.utf8.count <= 8192 {
                guard case .follow(let next) = end else { Issue.record("\(target.utf8.count): \(end)"); continue }
                #expect(next.url == target)
            } else {
                #expect(end.failure?.invalidResponse == true && end.failure?.kind == .transient
                        && end.failure?.message.contains("Location is over 8 KiB") == true, "\(end)")
            }
        }
    }

    /// A head that never ended: libcurl's connection failure holds the origin (SPEC §6: no
    /// response came); libcurl's refusal of the head itself is an invalid response (no hold).
    @Test func aHeadThatNeverEndedIsNoResponse() {
        var held = T.machine()
        _ = held.request()
        let lines = [held.headerLine("HTTP/1.1 200 OK\r\n"), held.headerLine("Content-Length: 10\r\n")]
        #expect(lines == [true, true])
        let reset = Self.end(&held, cleanly: false, connectionFailure: "connection reset before a response").failure
        #expect(reset?.holdsOrigin == "connection reset before a response" && reset?.invalidResponse == false, "\(String(describing: reset))")
        #expect(!held.originAnswered)

        var refused = T.machine()
        _ = refused.request()
        let line = refused.headerLine("HTTP/1.1 200 OK\r\n")
        #expect(line)
        let invalid = Self.end(&refused, cleanly: false, connectionFailure: "connection reset before a response",
                               malformed: "libcurl refused the head (Invalid Content-Length: value)").failure
        #expect(invalid?.invalidResponse == true && invalid?.holdsOrigin == nil && invalid?.kind == .transient)
        #expect(invalid?.message == "invalid response: libcurl refused the head (Invalid Content-Length: value)")
        #expect(!refused.originAnswered)
    }

    /// A whole, valid head is an answer (it clears a hold), whatever followed; a 503's does
    /// not (it holds). Lines after the head (a chunked body's trailers) change nothing.
    @Test func aWholeValidHeadIsAnAnswerAndTrailersAreNotTheHead() {
        var m = T.machine()
        _ = m.request()
        T.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 10")
        #expect(m.headComplete && m.originAnswered)
        T.receive(&m, 4)
        let trailer = m.headerLine("Content-Length: 99999999999999999999\r\n")
        #expect(trailer && m.head.contentLength == 10 && m.head.invalid == nil)
        #expect(Self.end(&m, cleanly: false).failure?.invalidResponse == false)
        #expect(m.originAnswered, "a body cut after a whole head is an answer")

        var busy = T.machine()
        _ = busy.request()
        T.respond(&busy, "HTTP/1.1 503 Busy", "Retry-After: 7")
        #expect(Self.end(&busy, cleanly: true).failure?.holdsOrigin == "HTTP 503")
        #expect(!busy.originAnswered)
    }

    /// A proxy's answer to CONNECT, should libcurl pass it on (prefetch asks it not to,
    /// CURLOPT_SUPPRESS_CONNECT_HEADERS), is not the response: the origin's head that follows
    /// is read whole. (Once a whole head made later lines count as trailers, an https://
    /// resource through squid lost its ETag: SquidTests.anHTTPSResourceIsTunnelledNotCached.)
    @Test func aTunnelsAnswerIsNotTheResponse() {
        var m = T.machine()
        _ = m.request()
        T.respond(&m, "HTTP/1.1 200 Connection established")
        T.respond(&m, "HTTP/1.1 404 Not Found", "ETag: \"e\"", "Content-Length: 9")
        #expect(m.headComplete && m.head.status == 404 && m.head.etag == "\"e\"" && m.head.contentLength == 9)
        #expect(Self.end(&m, cleanly: true).failure?.message == "HTTP 404")
    }

    /// An interim head (100 Continue) does not complete the head; the final one does.
    @Test func anInterimHeadIsNotTheResponse() {
        var m = T.machine()
        _ = m.request()
        T.respond(&m, "HTTP/1.1 100 Continue")
        #expect(!m.headComplete)
        T.respond(&m, "HTTP/1.1 200 OK", "Content-Length: 3")
        #expect(m.headComplete && m.head.status == 200 && m.head.contentLength == 3)
    }

    /// A 206 is appended only up to its Content-Range's end: a chunk past it is refused
    /// before it lands (the partial is dropped), as the end would judge it.
    @Test func nothingPastARangesEndIsAppended() {
        var m = T.machine(partial: T.partial(500, total: 1000))
        #expect(m.resume(trusted: 500) == .resume(from: 500))
        _ = m.request()
        T.respond(&m, "HTTP/1.1 206 Partial Content", "Content-Range: bytes 500-599/1000", "ETag: \"v1\"")
        let seen = T.receive(&m, 150)
        #expect(seen.last == .refuse && m.offset <= 600, "\(seen), offset \(m.offset)")
        let failure = Self.end(&m, cleanly: false).failure
        #expect(failure?.discardPartial == true && failure?.kind == .transient && failure?.message.contains("more than the bytes to 600") == true,
                "\(String(describing: failure))")
    }

    /// libcurl's results that mean the response itself was refused.
    @Test(arguments: [(1, "not an HTTP response"), (8, "libcurl refused the head"), (27, "a header line over libcurl's 100 KiB"),
                      (7, nil), (18, nil), (28, nil), (56, nil), (0, nil)] as [(Int32, String?)])
    func libcurlsRefusalsOfAResponse(code: Int32, words: String?) {
        #expect(CurlGlobal.malformedResponse(code) == words)
    }

    /// The failures the engine's clocks end a transfer with.
    @Test func theClocksFailures() {
        let head = TransferFailure.headTimeout(TimeSpan(seconds: 120))
        #expect(head.message == "no complete response head within 2m (response_timeout)" && head.holdsOrigin == "response timeout")
        #expect(head.kind == .transient && !head.invalidResponse && !head.discardPartial)
        let stall = TransferFailure.stalled(TimeSpan(seconds: 60), status: 200)
        #expect(stall.message == "stalled: under 1 KiB/s for 1m (stall_timeout)" && stall.holdsOrigin == nil && !stall.discardPartial)
    }
}
