import Foundation
import Glibc
import Testing
import TestSupport

/// SPEC §8, client certificates: `client_cert` and `client_key` present a certificate to an
/// origin that asks for one, here a real nginx with `ssl_verify_client on` and a CA made with
/// `openssl`. Without it, or with one another CA signed, the resource fails with a clear
/// error; with it, it is placed. Key material is never printed.
@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: CertificateAuthority.openssl)
                && FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx")))
struct ClientCertificateTests {
    static let body = RunCommandTests.random(50_000, seed: 2101)
    static let feed = "retry: { attempts: 1 }\nresources:\n  - url: ORIGIN/a.bin\n"

    /// Nothing of a key file's base64 body, nor its armour, in what prefetch printed.
    static func leaksNoKey(_ result: RunResult, keys: [String]) -> Bool {
        let printed = result.stdout + result.stderr
        guard !printed.contains("PRIVATE KEY") else { return false }
        for key in keys {
            let lines = ((try? String(contentsOfFile: key, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("-----") }
            for line in lines where line.count >= 16 && printed.contains(line.prefix(16)) { return false }
        }
        return true
    }

    @Test func anOriginThatAsksForACertificateGetsTheConfigured() throws {
        let ca = try CertificateAuthority(), stranger = try CertificateAuthority(name: "other")
        let client = try ca.client("kiosk-1"), foreign = try stranger.client("kiosk-x")
        let setup = try NginxHarness(files: ["a.bin": Self.body], tls: try ca.server(), clientCA: ca.certificate)
        try setup.feed(Self.feed)
        // Each case a new release (2 h on: a feed without a schedule releases every refresh, 1h).
        func run(_ config: String, hours: Int) throws -> RunResult {
            try setup.dir.write("config-\(hours).yaml", "ca_file: \(ca.certificate)\n" + config)
            return try setup.run(environment: ["PREFETCH_CLOCK_OFFSET": "+\(hours)h"], config: "config-\(hours).yaml")
        }

        // No certificate: nginx answers 400 ("No required SSL certificate was sent"): the line
        // says `failed  t/a.bin  HTTP 400`.
        let without = try run("", hours: 0)
        #expect(without.status == 1, "\(without.diagnostics)")
        #expect(setup.cached("t/a.bin") == nil)
        #expect(without.stderr.contains("failed  t/a.bin  HTTP 400"), "\(without.diagnostics)")

        // Another CA's certificate: refused alike.
        let wrong = try run("client_cert: \(foreign.certificate)\nclient_key: \(foreign.key)\n", hours: 2)
        #expect(wrong.status == 1, "\(wrong.diagnostics)")
        #expect(setup.cached("t/a.bin") == nil)

        // The right one: placed, and no warning for a 0600 key.
        let with = try run("client_cert: \(client.certificate)\nclient_key: \(client.key)\n", hours: 4)
        #expect(with.status == 0, "\(with.diagnostics)")
        #expect(setup.cached("t/a.bin") == Self.body)
        #expect(!with.stderr.contains("warning"), "\(with.diagnostics)")
        let requests = setup.origin.log().filter { $0.contains(" /a.bin ") }
        #expect(requests.map { $0.prefix(3) } == ["400", "400", "200"], "\(requests)")
        for result in [without, wrong, with] { #expect(Self.leaksNoKey(result, keys: [client.key, foreign.key])) }
    }

    /// One PEM file holding certificate and key, as `curl --cert` takes it; a key that does
    /// not belong to the certificate fails the resource with libcurl's words, no key shown.
    @Test func oneFileForBothAndAKeyThatDoesNotMatch() throws {
        let ca = try CertificateAuthority()
        let client = try ca.client("kiosk-1"), other = try ca.client("kiosk-2")
        let setup = try NginxHarness(files: ["a.bin": Self.body], tls: try ca.server(), clientCA: ca.certificate)
        try setup.feed(Self.feed)
        let both = setup.dir.file("kiosk.pem")
        try Data(try Data(contentsOf: URL(fileURLWithPath: client.certificate)) + Data(contentsOf: URL(fileURLWithPath: client.key)))
            .write(to: URL(fileURLWithPath: both))
        chmod(both, 0o600)

        try setup.dir.write("mismatch.yaml", "ca_file: \(ca.certificate)\nclient_cert: \(client.certificate)\nclient_key: \(other.key)\n")
        let mismatch = try setup.run(config: "mismatch.yaml")
        #expect(mismatch.status == 1, "\(mismatch.diagnostics)")
        #expect(setup.cached("t/a.bin") == nil)
        #expect(mismatch.stderr.contains("failed  t/a.bin  TLS: unable to set private key file: '\(other.key)' type PEM"), "\(mismatch.diagnostics)")
        #expect(Self.leaksNoKey(mismatch, keys: [client.key, other.key]), "\(mismatch.diagnostics)")

        try setup.dir.write("both.yaml", "ca_file: \(ca.certificate)\nclient_cert: kiosk.pem\n")
        let placed = try setup.run(environment: ["PREFETCH_CLOCK_OFFSET": "+2h"], config: "both.yaml")
        #expect(placed.status == 0, "\(placed.diagnostics)")
        #expect(setup.cached("t/a.bin") == Self.body)
        #expect(Self.leaksNoKey(placed, keys: [client.key]))
    }

    /// A key file others can read: a warning, and the run goes on. A key file that cannot be
    /// read: a config error naming it, exit 2, nothing created.
    @Test func aReadableKeyWarnsAnUnreadableOneStopsEverything() throws {
        let ca = try CertificateAuthority()
        let client = try ca.client("kiosk-1")
        let setup = try NginxHarness(files: ["a.bin": Self.body], tls: try ca.server(), clientCA: ca.certificate)
        try setup.feed(Self.feed)

        try setup.dir.write("missing.yaml", "ca_file: \(ca.certificate)\nclient_cert: \(client.certificate)\nclient_key: keys/kiosk.key\n")
        let missing = try setup.run(config: "missing.yaml")
        #expect(missing.status == 2, "\(missing.diagnostics)")
        #expect(missing.stderr.contains("missing.yaml:3:13: error: client_key 'keys/kiosk.key' cannot be read: No such file or directory"),
                "\(missing.diagnostics)")
        #expect(!FileManager.default.fileExists(atPath: setup.cache.path))
        for command in [["validate"], ["plan"]] {
            #expect(try setup.run(command, config: "missing.yaml").status == 2)
        }

        chmod(client.key, 0o644)
        try setup.dir.write("open.yaml", "ca_file: \(ca.certificate)\nclient_cert: \(client.certificate)\nclient_key: \(client.key)\n")
        let open = try setup.run(config: "open.yaml")
        #expect(open.status == 0, "\(open.diagnostics)")
        #expect(open.stderr.contains("open.yaml:3:13: warning: client_key '\(client.key)' is readable by every user (mode 644)"), "\(open.diagnostics)")
        #expect(setup.cached("t/a.bin") == Self.body)
        #expect(Self.leaksNoKey(open, keys: [client.key]))
    }
}
