import Glibc

/// A TLS client certificate (mTLS, SPEC §8), presented to every origin that asks for one:
/// the config's `client_cert` and `client_key`, or a feed source's own. PEM files, read by
/// libcurl at each new connection (CURLOPT_SSLCERT, CURLOPT_SSLKEY); prefetch itself never
/// reads the key, so no part of it can reach a message.
public struct ClientCertificate: Sendable, Equatable {
    /// The certificate (PEM), with its chain after it if the origin needs one.
    public var certificateFile: String
    /// The private key (PEM, unencrypted); nil when it follows the certificate in its file.
    public var keyFile: String?

    public init(certificateFile: String, keyFile: String?) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }

    /// The file that holds the private key.
    var fileWithKey: String { keyFile ?? certificateFile }
}

extension NodeReader {
    /// `client_cert` and `client_key` of a mapping (the configuration, or one entry of
    /// `feed_sources`): paths made absolute by `absolute`, each a regular file this process
    /// can read (else an error naming it); a key (or a certificate file that holds the key)
    /// that other users can read is a warning. `client_key` needs `client_cert`. Nil when
    /// neither key is there or one was in error.
    mutating func clientCertificate(_ entries: Entries, absolute: (String) -> String) -> ClientCertificate? {
        var certificate: String?, key: String?
        if let node = entries["client_cert"]?.value, let text = reader(node, "client_cert", absolute) { certificate = text }
        if let node = entries["client_key"]?.value, let text = reader(node, "client_key", absolute) {
            key = text
            if entries["client_cert"] == nil {
                error("client_key needs client_cert (the certificate the key belongs to)", at: node.location)
                return nil
            }
        }
        guard let certificate, entries["client_key"] == nil || key != nil else { return nil }
        // Warned for the file that holds the key: it is as secret as a password.
        let (name, node) = key != nil ? ("client_key", entries["client_key"]!.value) : ("client_cert", entries["client_cert"]!.value)
        let path = key ?? certificate
        if case .success(let mode) = FileSystem.modeOfReadable(path), mode & S_IROTH != 0 {
            let what = key == nil ? ", which holds the private key too," : ""
            warning("\(name) '\(path)'\(what) is readable by every user (mode \(String(mode & 0o777, radix: 8))): "
                    + "`chmod o-r` it, so that only prefetch's user and group can read the key", at: node.location)
        }
        return ClientCertificate(certificateFile: certificate, keyFile: key)
    }

    /// One of the two paths, checked: a regular file that can be opened for reading.
    private mutating func reader(_ node: YAMLNode, _ name: String, _ absolute: (String) -> String) -> String? {
        guard let text = string(node, what: name) else { return nil }
        guard !text.isEmpty else {
            error("\(name) must name a PEM file", at: node.location)
            return nil
        }
        let path = absolute(text)
        switch FileSystem.modeOfReadable(path) {
        case .success(let mode) where mode & S_IFMT == S_IFREG:
            return path
        case .success:
            error("\(name) '\(path)' is not a regular file", at: node.location)
        case .failure(let problem):
            error("\(name) '\(path)' cannot be read: \(problem)", at: node.location)
        }
        return nil
    }
}
