import Foundation
import Testing
import TestSupport
@testable import PrefetchCore

/// SPEC §8's `client_cert` and `client_key` in the configuration: paths relative to the
/// config's folder, checked to be readable files, a key readable by others a warning, the
/// key's content never read nor shown.
@Suite struct ClientCertificateConfigTests {
    static func decode(_ yaml: String, in folder: TemporaryFolder) -> (Config, [String]) {
        let (config, diagnostics) = ConfigLoader.decode(Array(yaml.utf8), file: folder.file("config.yaml"))
        return (config, diagnostics.map { $0.headline.replacingOccurrences(of: folder.path + "/", with: "") })
    }

    @Test func bothFilesRelativeToTheConfig() throws {
        let folder = try TemporaryFolder()
        try folder.write("tls/kiosk.pem", "certificate")
        let key = try folder.write("tls/kiosk.key", "-----BEGIN PRIVATE KEY-----\nsecret\n")
        chmod(key, 0o600)
        let (config, diagnostics) = Self.decode("client_cert: tls/kiosk.pem\nclient_key: \(folder.path)/tls/kiosk.key\n", in: folder)
        #expect(diagnostics.isEmpty)
        #expect(config.clientCertificate == ClientCertificate(certificateFile: folder.file("tls/kiosk.pem"), keyFile: key))
        #expect(Config().clientCertificate == nil)
    }

    /// One PEM file with the certificate and its key (as `curl --cert` takes it).
    @Test func theCertificateFileMayHoldTheKey() throws {
        let folder = try TemporaryFolder()
        chmod(try folder.write("kiosk.pem", "both"), 0o640)
        let (config, diagnostics) = Self.decode("client_cert: kiosk.pem\n", in: folder)
        #expect(diagnostics.isEmpty)
        #expect(config.clientCertificate == ClientCertificate(certificateFile: folder.file("kiosk.pem"), keyFile: nil))
    }

    @Test func unreadableFilesAreErrorsNamingThem() throws {
        let folder = try TemporaryFolder()
        try folder.write("kiosk.pem", "certificate")
        try FileManager.default.createDirectory(atPath: folder.file("keys"), withIntermediateDirectories: true)
        #expect(Self.decode("client_cert: kiosk.pem\nclient_key: missing.key\n", in: folder).1
                == ["config.yaml:2:13: error: client_key 'missing.key' cannot be read: No such file or directory"])
        #expect(Self.decode("client_cert: nowhere.pem\n", in: folder).1
                == ["config.yaml:1:14: error: client_cert 'nowhere.pem' cannot be read: No such file or directory"])
        #expect(Self.decode("client_cert: kiosk.pem\nclient_key: keys\n", in: folder).1
                == ["config.yaml:2:13: error: client_key 'keys' cannot be read: Is a directory"])
        #expect(Self.decode("client_cert: ''\n", in: folder).1 == ["config.yaml:1:14: error: client_cert must name a PEM file"])
        #expect(Self.decode("client_key: kiosk.pem\n", in: folder).1
                == ["config.yaml:1:13: error: client_key needs client_cert (the certificate the key belongs to)"])
        #expect(Self.decode("client_cert: [a]\n", in: folder).1.count == 1)
        #expect(Self.decode("client_cert: kiosk.pem\nclient_key: missing.key\n", in: folder).0.clientCertificate == nil)
    }

    /// A key file with the `o+r` bit is a warning, not an error: the config still loads. A
    /// certificate file without a `client_key` holds the key, so it is warned for instead.
    @Test func aKeyOthersCanReadIsAWarning() throws {
        let folder = try TemporaryFolder()
        chmod(try folder.write("kiosk.pem", "certificate"), 0o644)
        let key = try folder.write("kiosk.key", "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n")
        chmod(key, 0o644)
        let (config, diagnostics) = ConfigLoader.decode(Array("client_cert: kiosk.pem\nclient_key: kiosk.key\n".utf8), file: folder.file("config.yaml"))
        #expect(diagnostics.map(\.severity) == [.warning])
        #expect(diagnostics.first?.headline == "\(folder.path)/config.yaml:2:13: warning: client_key '\(key)' is readable by every user (mode 644): "
                + "`chmod o-r` it, so that only prefetch's user and group can read the key")
        #expect(config.clientCertificate?.keyFile == key)
        #expect(!diagnostics.contains { $0.headline.contains("MIGHAgEA") || $0.headline.contains("PRIVATE") })
        chmod(key, 0o640)
        #expect(ConfigLoader.decode(Array("client_cert: kiosk.pem\nclient_key: kiosk.key\n".utf8), file: folder.file("config.yaml")).1.isEmpty)
        // Without client_key, the certificate's file holds the key.
        #expect(Self.decode("client_cert: kiosk.pem\n", in: folder).1
                == ["config.yaml:1:14: warning: client_cert 'kiosk.pem', which holds the private key too, is readable by every user (mode 644): "
                    + "`chmod o-r` it, so that only prefetch's user and group can read the key"])
    }

    /// A manifest cannot name key files: the keys are unknown to a feed and to a resource.
    @Test func aManifestCannotNameKeyFiles() {
        for yaml in ["client_cert: /etc/ssl/k.pem\nresources:\n  - url: https://e.com/a\n",
                     "resources:\n  - url: https://e.com/a\n    client_key: /etc/ssl/k.key\n"] {
            let (feed, diagnostics) = FeedDecoder(config: Config()).decode(Array(yaml.utf8), file: "t.yaml")
            #expect(feed == nil)
            #expect(diagnostics.contains { $0.severity == .error && $0.message.hasPrefix("unknown key 'client_") }, "\(diagnostics.map(\.headline))")
        }
    }
}
