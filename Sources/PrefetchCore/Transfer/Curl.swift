internal import CCurl
internal import CShims
import Glibc

/// A libcurl error with curl's words for it.
struct CurlError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { message }
}

/// The options every request of a run shares, set once per handle (handles are reused).
struct CurlSharedOptions {
    var caFile: String?
    var userAgent: String
    /// The config's `proxy` (CURLOPT_PROXY); nil leaves libcurl to read `http_proxy`,
    /// `https_proxy` and `all_proxy` from the environment, as it does by itself.
    var proxy: String? = nil
    /// The config's `no_proxy` (CURLOPT_NOPROXY), which replaces the environment's
    /// `no_proxy` for either kind of proxy; nil leaves the environment's.
    var noProxy: String? = nil
}

/// The options of one request (set again on each: a handle serves many transfers).
struct CurlRequestOptions {
    var url: String
    var headers: [String]
    var connectTimeout: Int
    var bufferSize: Int
    /// CURLOPT_ACCEPT_ENCODING: the codings to offer and decode (`encoding: decode`); nil
    /// offers none and leaves bodies as sent (the request's own `Accept-Encoding: identity`).
    var acceptEncoding: String? = nil
    /// The TLS client certificate to present when an origin asks (CURLOPT_SSLCERT,
    /// CURLOPT_SSLKEY): the config's, or a feed source's own; nil presents none.
    var clientCertificate: ClientCertificate? = nil
}

/// libcurl's data callback type (CURLOPT_WRITEFUNCTION, CURLOPT_HEADERFUNCTION).
typealias CurlDataCallback = @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int

/// Owns one `CURL *` easy handle (cleaned up in `deinit`). Every `CURLOPT_*` prefetch sets is
/// set here, and every result is checked.
final class CurlEasy {
    /// Which handle a finished transfer of `CurlMulti.completed` is.
    struct ID: Hashable {
        fileprivate let handle: UnsafeMutableRawPointer
    }

    fileprivate let handle: UnsafeMutableRawPointer
    var id: ID { ID(handle: handle) }
    /// Set once the options every request shares are in place (handles are reused).
    private var configured = false
    /// The receive buffer size set on this handle, once set. libcurl 7.88 refuses a new size
    /// once the handle has its buffer (CURLE_BAD_FUNCTION_ARGUMENT), so a handle keeps its
    /// size: the engine reuses it only for transfers that want the same.
    private(set) var bufferSize: Int?
    /// The client certificate set on this handle (nil: none), set again only when a request
    /// wants another.
    private var clientCertificate: ClientCertificate?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// libcurl's own account of a failure (CURLOPT_ERRORBUFFER), which says more than the
    /// code's words: which name a certificate lacks, which CA is unknown, which host refused.
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// What a write callback returns to stop libcurl until `unpause` (it hands the same bytes
    /// over again then).
    static let pauseWriting = Int(CURL_WRITEFUNC_PAUSE)

    init() throws(CurlError) {
        guard let created = curl_easy_init() else {
            throw CurlError(code: Int32(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_easy_init: cannot create a handle")
        }
        handle = created
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        do {
            try check(CShims_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "error buffer")
        } catch {
            curl_easy_cleanup(handle)
            errorBuffer.deallocate()
            throw error
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    /// Sets up the next request: the shared options once, then this request's. `receiver`
    /// is handed to both callbacks (unretained: it must outlive the request).
    func prepare(_ request: CurlRequestOptions, shared: CurlSharedOptions, receiver: UnsafeMutableRawPointer,
                 body: CurlDataCallback, header: CurlDataCallback) throws(CurlError) {
        if !configured {
            try set(CURLOPT_PROTOCOLS_STR, "http,https", "protocols")
            try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", "redirect protocols")
            try set(CURLOPT_FOLLOWLOCATION, 0, "follow location")  // redirects are followed by hand (headers, loops)
            // A proxy's `200 Connection established` (an https:// tunnel) is not the response.
            try set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1, "suppress CONNECT headers")
            try set(CURLOPT_NOSIGNAL, 1, "no signal")
            // No CURLOPT_LOW_SPEED_*: it counts from the request's start, head and all; the
            // engine times the head (response_timeout) and the body (stall_timeout) itself.
            try set(CURLOPT_SSL_VERIFYPEER, 1, "verify peer")
            try set(CURLOPT_SSL_VERIFYHOST, 2, "verify host")
            if let caFile = shared.caFile {
                try set(CURLOPT_CAINFO, caFile, "ca_file")
                try set(CURLOPT_PROXY_CAINFO, caFile, "ca_file for the proxy")  // an https:// proxy is verified alike
            }
            if let proxy = shared.proxy { try set(CURLOPT_PROXY, proxy, "proxy") }
            if let noProxy = shared.noProxy { try set(CURLOPT_NOPROXY, noProxy, "no_proxy") }
            try set(CURLOPT_USERAGENT, shared.userAgent, "user agent")
            try check(CShims_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, body), "write callback")
            try check(CShims_easy_setopt_write_callback(handle, CURLOPT_HEADERFUNCTION, header), "header callback")
            configured = true
        }
        try set(CURLOPT_URL, request.url, "url")
        errorBuffer[0] = 0  // the last request's message is not this one's
        try setHeaders(request.headers)
        try set(CURLOPT_CONNECTTIMEOUT, request.connectTimeout, "connect timeout")  // the TCP connect and the TLS handshake
        // Set on every request: a reused handle must not decode for a transfer that did not ask.
        try check(CShims_easy_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, request.acceptEncoding), "accept encoding")
        if bufferSize != request.bufferSize {
            try set(CURLOPT_BUFFERSIZE, request.bufferSize, "buffer size")
            bufferSize = request.bufferSize
        }
        if clientCertificate != request.clientCertificate {
            // libcurl reads the files when it makes a connection, and reuses a connection only
            // for a request with the same TLS options, the client certificate among them
            // (CVE-2022-27782, fixed in 7.83.1): a source's own certificate is not mixed up.
            try check(CShims_easy_setopt_string(handle, CURLOPT_SSLCERT, request.clientCertificate?.certificateFile), "client_cert")
            try check(CShims_easy_setopt_string(handle, CURLOPT_SSLKEY, request.clientCertificate?.keyFile), "client_key")
            clientCertificate = request.clientCertificate
        }
        try check(CShims_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, receiver), "write data")
        try check(CShims_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, receiver), "header data")
    }

    /// Why the last request failed with `code`: libcurl's detailed message when it left one,
    /// else the code's general words. A message quoting a URL (which could carry a query or a
    /// proxy's credentials) is not used.
    func describe(_ code: Int32) -> String {
        let detail = String(cString: errorBuffer).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !detail.isEmpty, !detail.contains("://"), !detail.contains("@") else { return Self.describe(code) }
        return detail
    }

    private func check(_ code: CURLcode, _ name: String) throws(CurlError) {
        guard code == CURLE_OK else {
            throw CurlError(code: Int32(code.rawValue), message: "\(name): \(String(cString: curl_easy_strerror(code)))")
        }
    }

    private func set(_ option: CURLoption, _ value: Int, _ name: String) throws(CurlError) {
        try check(CShims_easy_setopt_long(handle, option, value), name)
    }

    /// Sets a string option; libcurl copies strings (CURLOPT_* "the string is copied" since 7.17).
    private func set(_ option: CURLoption, _ value: String, _ name: String) throws(CurlError) {
        try check(CShims_easy_setopt_string(handle, option, value), name)
    }

    /// Replaces the request headers.
    private func setHeaders(_ lines: [String]) throws(CurlError) {
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        for line in lines {
            guard let appended = curl_slist_append(headerList, line) else {
                throw CurlError(code: Int32(CURLE_OUT_OF_MEMORY.rawValue), message: "headers: out of memory")
            }
            headerList = appended
        }
        try check(CShims_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), "headers")
    }

    /// Lets a transfer paused by its write callback go on. False when libcurl refused (the
    /// transfer then ends with libcurl's error, as any other).
    @discardableResult
    func unpause() -> Bool {
        curl_easy_pause(handle, CURLPAUSE_CONT) == CURLE_OK
    }

    var redirectURL: String? {
        var pointer: UnsafeMutablePointer<CChar>?
        guard CShims_easy_getinfo_string(handle, CURLINFO_REDIRECT_URL, &pointer) == CURLE_OK, let pointer else { return nil }
        return String(cString: pointer)
    }

    /// Body bytes of the current response as they came over the wire, before any decoding
    /// (CURLINFO_SIZE_DOWNLOAD_T: libcurl's count of the body, chunked framing left out).
    /// libcurl counts a read before it decodes it, except in a chunked body, where it counts
    /// the read after its decoded bytes were handed over: inside the write callback the
    /// figure may lag by one read, and it is exact once the exchange ends.
    var bytesOnWire: UInt64 {
        var value: curl_off_t = 0
        guard CShims_easy_getinfo_off(handle, CURLINFO_SIZE_DOWNLOAD_T, &value) == CURLE_OK, value > 0 else { return 0 }
        return UInt64(value)
    }

    /// Whether the request is out (CURLINFO_PRETRANSFER_TIME_T is set once libcurl is about
    /// to send it, after the connect and the TLS handshake; 0 before).
    var requestSent: Bool { microseconds(CURLINFO_PRETRANSFER_TIME_T) > 0 }

    /// Whether the last request's TCP connection was made: it has a local port
    /// (CURLINFO_LOCAL_PORT; libcurl 7.88 sets CURLINFO_CONNECT_TIME only once the TLS
    /// handshake is done too).
    var connected: Bool {
        var port = 0
        return CShims_easy_getinfo_long(handle, CURLINFO_LOCAL_PORT, &port) == CURLE_OK && port != 0
    }

    /// Whether the last request's TLS handshake finished (CURLINFO_APPCONNECT_TIME_T).
    var tlsEstablished: Bool { microseconds(CURLINFO_APPCONNECT_TIME_T) > 0 }

    private func microseconds(_ info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        guard CShims_easy_getinfo_off(handle, info, &value) == CURLE_OK else { return 0 }
        return Int64(value)
    }

    /// The system's errno of the last connection attempt (CURLINFO_OS_ERRNO), 0 when none.
    var osErrno: Int32 {
        var value = 0
        guard CShims_easy_getinfo_long(handle, CURLINFO_OS_ERRNO, &value) == CURLE_OK else { return 0 }
        return Int32(value)
    }

    static func describe(_ code: Int32) -> String {
        String(cString: curl_easy_strerror(CURLcode(rawValue: UInt32(code))))
    }
}

/// Owns a `CURLM *` multi handle: many transfers on one thread, with connection reuse.
/// Every `CURLMcode` is checked.
final class CurlMulti {
    private let handle: UnsafeMutableRawPointer

    init(totalConnections: Int, perHost: Int) throws(CurlError) {
        guard let created = curl_multi_init() else {
            throw CurlError(code: Int32(CURLM_OUT_OF_MEMORY.rawValue), message: "curl_multi_init: cannot create a handle")
        }
        handle = created
        do {
            try check(CShims_multi_setopt_long(handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, totalConnections), "total connections")
            try check(CShims_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, perHost), "connections per host")
            try check(CShims_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX)), "multiplexing")
        } catch {
            curl_multi_cleanup(handle)
            throw error
        }
    }

    deinit {
        curl_multi_cleanup(handle)
    }

    private func check(_ code: CURLMcode, _ name: String) throws(CurlError) {
        guard code == CURLM_OK else {
            throw CurlError(code: Int32(code.rawValue), message: "\(name): \(String(cString: curl_multi_strerror(code)))")
        }
    }

    func add(_ easy: CurlEasy) throws(CurlError) {
        try check(curl_multi_add_handle(handle, easy.handle), "curl_multi_add_handle")
    }

    /// Takes `easy` out; false when libcurl refused (the handle is then not reused).
    func remove(_ easy: CurlEasy) -> Bool {
        curl_multi_remove_handle(handle, easy.handle) == CURLM_OK
    }

    /// Drives transfers; returns how many are still running.
    func perform() throws(CurlError) -> Int {
        var running: Int32 = 0
        try check(curl_multi_perform(handle, &running), "curl_multi_perform")
        return Int(running)
    }

    /// Waits for activity for at most `milliseconds`.
    func poll(milliseconds: Int) throws(CurlError) {
        var ready: Int32 = 0
        try check(curl_multi_poll(handle, nil, 0, Int32(milliseconds), &ready), "curl_multi_poll")
    }

    /// Something other threads may call to end a `poll` early (curl_multi_wakeup is
    /// thread-safe); valid while this multi handle lives.
    var waker: Waker { Waker(handle: handle) }

    struct Waker: @unchecked Sendable {
        fileprivate let handle: UnsafeMutableRawPointer
        func wake() { _ = curl_multi_wakeup(handle) }  // fails only for a bad handle: the poll then ends by its timeout
    }

    /// Completed transfers: the easy handle and its result code.
    func completed() -> [(CurlEasy.ID, Int32)] {
        var done: [(CurlEasy.ID, Int32)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                done.append((CurlEasy.ID(handle: easy), Int32(message.pointee.data.result.rawValue)))
            }
        }
        return done
    }
}

/// libcurl's process-wide set-up, once.
enum CurlGlobal {
    static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    /// The content decoders libcurl was built with (`curl_version_info`'s features), for
    /// `encoding: decode` (`ContentCodings`).
    static let features: (libz: Bool, brotli: Bool, zstd: Bool) = {
        // `features` is in every version of the struct: the first is enough.
        guard let info = curl_version_info(CURLVERSION_FIRST) else { return (false, false, false) }
        let bits = Int64(info.pointee.features)
        return (bits & Int64(CURL_VERSION_LIBZ) != 0, bits & Int64(CURL_VERSION_BROTLI) != 0, bits & Int64(CURL_VERSION_ZSTD) != 0)
    }()

    /// libcurl result codes prefetch treats specially.
    static let ok: Int32 = 0
    static let writeError = Int32(CURLE_WRITE_ERROR.rawValue)
    static let abortedByCallback = Int32(CURLE_ABORTED_BY_CALLBACK.rawValue)
    static let operationTimedOut = Int32(CURLE_OPERATION_TIMEDOUT.rawValue)
    static let rangeError = Int32(CURLE_RANGE_ERROR.rawValue)
    /// TLS failures: not retried within a run (SPEC §5).
    static let tlsErrors: Set<Int32> = [
        Int32(CURLE_PEER_FAILED_VERIFICATION.rawValue), Int32(CURLE_SSL_CONNECT_ERROR.rawValue),
        Int32(CURLE_SSL_CACERT_BADFILE.rawValue), Int32(CURLE_SSL_CERTPROBLEM.rawValue),
        Int32(CURLE_SSL_CIPHER.rawValue), Int32(CURLE_SSL_ISSUER_ERROR.rawValue),
    ]
    static let unsupportedProtocol = Int32(CURLE_UNSUPPORTED_PROTOCOL.rawValue)

    /// A libcurl result that says the response itself was refused as malformed (SPEC §7: an
    /// invalid response), in words, or nil. Only http and https are asked for, so an
    /// unsupported protocol is an answer that is not HTTP (libcurl allows no HTTP/0.9).
    static func malformedResponse(_ code: Int32) -> String? {
        switch CURLcode(rawValue: UInt32(code)) {
        case CURLE_UNSUPPORTED_PROTOCOL: return "not an HTTP response"
        case CURLE_WEIRD_SERVER_REPLY: return "libcurl refused the head"
        case CURLE_OUT_OF_MEMORY: return "a header line over libcurl's 100 KiB"
        default: return nil
        }
    }

    /// A libcurl result that says the origin itself is unreachable (SPEC §6): no response
    /// came, and the connection could not be made or was lost before one. Its cause in
    /// words, or nil (a certificate that fails verification is the resource's error).
    static func connectionFailure(_ code: Int32, osErrno: Int32) -> String? {
        switch CURLcode(rawValue: UInt32(code)) {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return "DNS failure"
        case CURLE_COULDNT_CONNECT:
            switch osErrno {
            case ECONNREFUSED: return "connection refused"
            case ENETUNREACH, EHOSTUNREACH: return "unreachable"
            case ETIMEDOUT: return "connect timeout"
            default: return "cannot connect"
            }
        case CURLE_OPERATION_TIMEDOUT: return "timed out before a response"
        case CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR: return "connection reset before a response"
        default: return nil
        }
    }
}
