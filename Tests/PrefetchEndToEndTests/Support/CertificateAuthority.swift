import Foundation
import Glibc
import TestSupport

/// A certificate authority made with the real `openssl` in a temporary folder, and the
/// certificates it signed: one for a TLS origin on 127.0.0.1 (and `localhost`), and client
/// certificates for mTLS (SPEC §8's `client_cert`, `client_key`). EC P-256 keys, valid for
/// two days, PEM files.
final class CertificateAuthority {
    static let openssl = "/usr/bin/openssl"
    let folder: TemporaryFolder
    let name: String
    /// The CA's certificate: an origin's `ca_file`, nginx's `ssl_client_certificate`.
    var certificate: String { folder.file("\(name)-ca.pem") }

    init(name: String = "test") throws {
        folder = try TemporaryFolder()
        chmod(folder.path, 0o755)  // nginx's master reads its files
        self.name = name
        try run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                 "-keyout", "\(name)-ca.key", "-out", "\(name)-ca.pem", "-subj", "/CN=prefetch \(name) CA"])
    }

    /// A certificate for an origin at 127.0.0.1 and localhost: (certificate, key) paths.
    func server() throws -> (certificate: String, key: String) {
        try issue("server", subject: "/CN=127.0.0.1", extensions: "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    }

    /// A client certificate named `name`: (certificate, key) paths, the key mode 0600.
    func client(_ name: String) throws -> (certificate: String, key: String) {
        let issued = try issue(name, subject: "/CN=\(name)", extensions: "extendedKeyUsage=clientAuth\n")
        chmod(issued.key, 0o600)
        return issued
    }

    private func issue(_ stem: String, subject: String, extensions: String) throws -> (certificate: String, key: String) {
        try folder.write("\(stem).ext", extensions)
        try run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(stem).key",
                 "-out", "\(stem).csr", "-subj", subject])
        try run(["x509", "-req", "-in", "\(stem).csr", "-CA", "\(name)-ca.pem", "-CAkey", "\(name)-ca.key", "-CAcreateserial",
                 "-days", "2", "-out", "\(stem).pem", "-extfile", "\(stem).ext"])
        chmod(folder.file("\(stem).key"), 0o644)  // nginx's master reads a server's key; clients tighten theirs
        return (folder.file("\(stem).pem"), folder.file("\(stem).key"))
    }

    private func run(_ arguments: [String]) throws {
        let status = try FaultTests.tool(Self.openssl, arguments, in: folder.url)
        guard status == 0 else { throw NginxError(message: "openssl \(arguments.joined(separator: " ")) exited \(status)") }
    }
}
