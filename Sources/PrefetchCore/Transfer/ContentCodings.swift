/// The content codings `encoding: decode` offers (SPEC §7 "Encoded bodies"): gzip, deflate,
/// br and zstd, as far as the libcurl prefetch runs with was built with them
/// (`CurlGlobal.features`: libz for gzip and deflate, brotli, zstd). Debian 12's libcurl
/// 7.88.1 has all four. The list is sent as `Accept-Encoding` (CURLOPT_ACCEPT_ENCODING),
/// which is also what makes libcurl decode a response.
enum ContentCodings {
    /// The codings offered, in the order sent.
    static let offered: [String] = {
        let features = CurlGlobal.features
        var codings: [String] = []
        if features.libz { codings += ["gzip", "deflate"] }
        if features.brotli { codings.append("br") }
        if features.zstd { codings.append("zstd") }
        return codings
    }()

    /// The `Accept-Encoding` value of a `decode` request.
    static var acceptEncoding: String { offered.joined(separator: ", ") }

    /// The codings a Content-Encoding field applies, in order (RFC 9110 §8.4: a list),
    /// lowercased; `x-gzip` is gzip (RFC 9110 §18.6), `identity` applies none.
    static func names(in field: String) -> [String] {
        field.split(separator: ",").compactMap { token in
            let name = String(token).trimmingSpaces().lowercased()
            if name.isEmpty || name == "identity" { return nil }
            return name == "x-gzip" ? "gzip" : name
        }
    }
}
