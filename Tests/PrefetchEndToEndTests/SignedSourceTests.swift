import Foundation
import Glibc
import Testing
import TestSupport
import PrefetchCore

/// SPEC §8's signed feed sources: manifests over plain http from the test origin, signed
/// with Debian's real `minisign` (`-G -W`, `-S`; `-l` for the legacy `Ed` algorithm),
/// verified by prefetch before anything is applied. Key rotation through `public_keys`, no
/// rollback to an older trusted-comment timestamp, a missing or bad signature keeping the
/// copy in force, the source's headers with `${VAR}`.
@Suite struct SignedSourceTests {
    static let minisign = "/usr/bin/minisign"
    static let hasMinisign = FileManager.default.isExecutableFile(atPath: minisign)

    /// A key pair made by `minisign -G -W` (no password) in `folder`.
    struct Key {
        let secret: String
        let publicKey: String
        let keyID: String

        init(_ name: String, in folder: URL) throws {
            secret = folder.appendingPathComponent(name + ".key").path
            let pub = folder.appendingPathComponent(name + ".pub").path
            #expect(try FaultTests.tool(SignedSourceTests.minisign, ["-G", "-W", "-p", pub, "-s", secret], in: folder) == 0)
            let lines = try String(contentsOfFile: pub, encoding: .utf8).split(separator: "\n")
            publicKey = String(lines[1])
            // minisign 0.11 prints the id without its leading zeros (one key in 16 has one):
            // prefetch always shows 16 digits.
            let printed = String(lines[0].split(separator: " ").last ?? "")
            keyID = String(repeating: "0", count: max(0, 16 - printed.count)) + printed
        }
    }

    final class Setup {
        let harness: FaultHarness
        let keys: URL

        init() throws {
            harness = try FaultHarness()
            keys = harness.dir.url.appendingPathComponent("keys")
            try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        }

        func config(_ sources: String) throws {
            try harness.dir.write("config.yaml", "feed_sources:\n" + sources.replacingOccurrences(of: "ORIGIN", with: harness.origin.url("")))
        }

        /// Serves `text` at `path` and its signature by `key` at `path.minisig` (`comment`:
        /// minisign's -t, which replaces the default trusted comment; `legacy`: -l, the `Ed`
        /// algorithm over the file itself).
        func publish(_ path: String, _ text: String, key: Key, comment: String? = nil, legacy: Bool = false, etag: String? = nil) throws {
            let file = harness.dir.url.appendingPathComponent("publish" + path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: file)
            var arguments = ["-S", "-s", key.secret, "-m", file.path]
            if let comment { arguments += ["-t", comment] }
            if legacy { arguments.append("-l") }
            #expect(try FaultTests.tool(SignedSourceTests.minisign, arguments, in: keys) == 0)
            let signature = try Data(contentsOf: URL(fileURLWithPath: file.path + ".minisig"))
            harness.origin.serve(path, OriginResource(text: text, etag: etag))
            harness.origin.serve(path + ".minisig", OriginResource([UInt8](signature)))
        }

        func manifest(_ files: [String]) -> String {
            "resources:\n" + files.map { "  - url: \(harness.origin.url("/" + $0))\n" }.joined()
        }

        func run(_ arguments: [String] = ["run"], offset: String? = nil, environment: [String: String] = [:]) throws -> RunResult {
            var environment = environment
            if let offset { environment["PREFETCH_CLOCK_OFFSET"] = offset }
            return try harness.run(arguments, environment: environment, config: "config.yaml")
        }

        func source(offset: String? = nil) throws -> [String: Any] {
            try #require(try run(["status", "--json"], offset: offset).events.first { $0["type"] as? String == "source" })
        }
    }

    /// A signed source over plain http, signed by the real minisign (its default, prehashed
    /// `ED`, and the legacy `Ed` with -l): applied, its key id shown; its headers, `${VAR}`
    /// filled in, go to the manifest and the signature alike; a 304 keeps the copy.
    @Test(.enabled(if: hasMinisign), arguments: [false, true]) func aSignedSourceIsVerifiedAndApplied(legacy: Bool) throws {
        let s = try Setup()
        let key = try Key("cms", in: s.keys)
        let body = RunCommandTests.random(1200, seed: 901)
        s.harness.origin.serve("/a.bin", OriginResource(body, etag: "\"a\""))
        try s.publish("/kiosks/lobby.yaml", s.manifest(["a.bin"]), key: key, legacy: legacy, etag: "\"m1\"")
        try s.config("  - url: ORIGIN/kiosks/lobby.yaml\n    public_key: \(key.publicKey)\n    headers: { Authorization: \"Bearer ${CMS_TOKEN}\" }\n")
        let result = try s.run(environment: ["CMS_TOKEN": "t0ken"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(s.harness.cached("lobby/a.bin") == body)
        #expect(!result.stderr.contains("t0ken") && !result.stdout.contains("t0ken"))
        for path in ["/kiosks/lobby.yaml", "/kiosks/lobby.yaml.minisig"] {
            #expect(s.harness.origin.requests(to: path).first?.header("authorization") == "Bearer t0ken", "\(path)")
        }
        #expect(s.harness.origin.requests(to: "/a.bin").first?.header("authorization") == nil)
        let line = try s.source()
        #expect(line["state"] as? String == "ok")
        #expect(line["key_id"] as? String == key.keyID)
        let text = try s.run(["status"]).stdout
        #expect(text.contains("signed by key \(key.keyID)"), "\(text)")

        // Revalidated after refresh: the manifest answers 304, the copy stays, no signature is fetched.
        let again = try s.run(offset: "+16m", environment: ["CMS_TOKEN": "t0ken"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(s.harness.origin.requests(to: "/kiosks/lobby.yaml").last?.header("if-none-match") == "\"m1\"")
        #expect(s.harness.origin.requests(to: "/kiosks/lobby.yaml.minisig").count == 1)

        // An unset variable fails the check by its name, never its value.
        let unset = try s.run(offset: "+40m")
        #expect(unset.status == 1)
        #expect(unset.stderr.contains("header Authorization needs the environment variable CMS_TOKEN, which is not set"), "\(unset.stderr)")
    }

    /// Applied only when the signature verifies: a manifest changed after signing, a
    /// missing signature, a signature by a key not listed, and an older signed version (its
    /// trusted comment's timestamp before the copy in force's) are each refused with the
    /// copy in force kept, said as `LABEL: error: …`, and the run exits 1.
    @Test(.enabled(if: hasMinisign)) func everySignatureFailureKeepsTheCopyInForce() throws {
        let s = try Setup()
        let key = try Key("cms", in: s.keys), other = try Key("other", in: s.keys)
        let a = RunCommandTests.random(900, seed: 902), b = RunCommandTests.random(900, seed: 903)
        s.harness.origin.serve("/a.bin", OriginResource(a))
        s.harness.origin.serve("/b.bin", OriginResource(b))
        try s.config("  - url: ORIGIN/lobby.yaml\n    name: lobby\n    public_key: \(key.publicKey)\n    refresh: 1m\n")
        try s.publish("/lobby.yaml", s.manifest(["a.bin"]), key: key, comment: "timestamp:2000000000 file:lobby.yaml")
        #expect(try s.run().status == 0)

        var step = 0
        func refused(_ said: String, _ reason: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
            step += 1
            let offset = "+\(step)h"
            let result = try s.run(offset: offset)
            #expect(result.status == 1, sourceLocation: sourceLocation)
            #expect(result.stderr.contains("lobby: error: " + said), "\(result.stderr)", sourceLocation: sourceLocation)
            #expect(s.harness.cached("lobby/a.bin") == a && s.harness.cached("lobby/b.bin") == nil, sourceLocation: sourceLocation)
            let line = try s.source(offset: offset)
            #expect(line["state"] as? String == "stale", sourceLocation: sourceLocation)
            #expect((line["error"] as? String)?.hasPrefix(reason) == true, "\(line)", sourceLocation: sourceLocation)
            #expect(line["key_id"] as? String == key.keyID, sourceLocation: sourceLocation)
        }
        // Changed after signing.
        try s.publish("/lobby.yaml", s.manifest(["b.bin"]), key: key, comment: "timestamp:2000000100 file:lobby.yaml")
        s.harness.origin.serve("/lobby.yaml", OriginResource(text: s.manifest(["b.bin"]) + "# changed\n"))
        try refused("bad signature: ", "bad signature")
        // Missing signature.
        s.harness.origin.serve("/lobby.yaml", OriginResource(text: s.manifest(["b.bin"])))
        s.harness.origin.remove("/lobby.yaml.minisig")
        try refused("cannot fetch the signature \(s.harness.origin.url("/lobby.yaml.minisig")): HTTP 404", "missing signature")
        // Signed by a key the source does not list.
        try s.publish("/lobby.yaml", s.manifest(["b.bin"]), key: other, comment: "timestamp:2000000200 file:lobby.yaml")
        try refused("bad signature: ", "bad signature")
        // An older signed version (minisign's default timestamp is now, before 2000000000).
        try s.publish("/lobby.yaml", s.manifest(["b.bin"]), key: key)
        try refused("rollback refused", "rollback refused")
        // A newer one is applied.
        try s.publish("/lobby.yaml", s.manifest(["b.bin"]), key: key, comment: "timestamp:2000000300 file:lobby.yaml")
        let fixed = try s.run(offset: "+10h")
        #expect(fixed.status == 0, "\(fixed.stderr)")
        #expect(s.harness.cached("lobby/b.bin") == b)
    }

    /// Key rotation: with `public_keys: [OLD, NEW]` a manifest signed by either is applied,
    /// and `status` names the key that signed the copy in force.
    @Test(.enabled(if: hasMinisign)) func keyRotationAcceptsAnyListedKey() throws {
        let s = try Setup()
        let old = try Key("old", in: s.keys), new = try Key("new", in: s.keys)
        s.harness.origin.serve("/a.bin", OriginResource([1, 2, 3]))
        s.harness.origin.serve("/b.bin", OriginResource([4, 5, 6]))
        try s.config("  - url: ORIGIN/lobby.yaml\n    public_keys: [\(old.publicKey), \(new.publicKey)]\n")
        try s.publish("/lobby.yaml", s.manifest(["a.bin"]), key: old, comment: "timestamp:1900000000")
        #expect(try s.run().status == 0)
        #expect(try s.source()["key_id"] as? String == old.keyID)
        try s.publish("/lobby.yaml", s.manifest(["b.bin"]), key: new, comment: "timestamp:1900000100")
        #expect(try s.run(offset: "+16m").status == 0)
        #expect(try s.source(offset: "+16m")["key_id"] as? String == new.keyID)
        #expect(s.harness.cached("lobby/b.bin") == [4, 5, 6])
    }
}
