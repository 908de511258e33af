import Foundation
import Glibc
import Testing
@testable import PrefetchCore

/// SPEC §6: which failures hold the whole origin. Connection-level failures (refused,
/// unreachable, DNS, a timeout or a reset before any response) and 429/502/503/504 do; a
/// certificate that fails verification, any other status, and a body cut after its
/// headers are the resource's own.
@Suite struct OriginHoldRulesTests {
    typealias Machine = TransferStateMachine

    // libcurl's result codes (curl.h), as numbers: the tests do not link CCurl.
    static let couldntResolveHost: Int32 = 6, couldntConnect: Int32 = 7, writeError: Int32 = 23, timedOut: Int32 = 28
    static let gotNothing: Int32 = 52, recvError: Int32 = 56, peerFailedVerification: Int32 = 60

    @Test(arguments: [
        (couldntConnect, ECONNREFUSED, "connection refused"), (couldntConnect, EHOSTUNREACH, "unreachable"),
        (couldntConnect, ENETUNREACH, "unreachable"), (couldntConnect, ETIMEDOUT, "connect timeout"), (couldntConnect, 0, "cannot connect"),
        (couldntResolveHost, 0, "DNS failure"), (timedOut, 0, "timed out before a response"),
        (gotNothing, 0, "connection reset before a response"), (recvError, ECONNRESET, "connection reset before a response"),
        (peerFailedVerification, 0, nil), (writeError, 0, nil), (0, 0, nil),
    ] as [(Int32, Int32, String?)])
    func libcurlsWordForTheOrigin(code: Int32, osErrno: Int32, cause: String?) {
        #expect(CurlGlobal.connectionFailure(code, osErrno: osErrno) == cause)
    }

    /// With no response at all, the cause given holds the origin; a TLS failure never does.
    @Test func noResponseHoldsTheOriginUnlessTLSFailed() {
        for tls in [false, true] {
            var m = TransferStateMachineTests.machine()
            _ = m.request()
            let end = m.ended(cleanly: false, tlsError: tls, connectionFailure: "connection refused", describe: { "refused" },
                              redirectURL: { nil }, maxRedirects: 5, now: Date(timeIntervalSince1970: 1_800_000_000))
            guard case .fail(let failure) = end else { Issue.record("\(end)"); continue }
            #expect(failure.holdsOrigin == (tls ? nil : "connection refused"))
        }
    }

    /// Each status: only the four hold the origin (with their Retry-After); a body cut
    /// after a 200's headers is the resource's failure.
    @Test(arguments: [200, 206, 304, 404, 408, 410, 416, 429, 500, 502, 503, 504, 505])
    func aStatusHoldsTheOriginOnlyWhenItSaysTheOriginIsDown(status: Int) {
        var m = TransferStateMachineTests.machine()
        _ = m.request()
        TransferStateMachineTests.respond(&m, "HTTP/1.1 \(status) X", "Retry-After: 7", "Content-Length: 10")
        if (200..<300).contains(status) { TransferStateMachineTests.receive(&m, 4) }
        let end = TransferStateMachineTests.end(&m, cleanly: false)
        let holds = [429, 502, 503, 504].contains(status)
        if case .fail(let failure) = end {
            #expect(failure.holdsOrigin == (holds ? "HTTP \(status)" : nil), "\(status)")
            if holds { #expect(failure.retryAfter == 7) }
        } else {
            #expect(!holds, "\(status): \(end)")
        }
    }
}
