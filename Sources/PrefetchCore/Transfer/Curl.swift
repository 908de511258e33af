internal import CCurl
internal import CShims

/// A libcurl error with curl's words for it.
struct CurlError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { message }
}

/// Owns one `CURL *` easy handle (cleaned up in `deinit`); typed setters over the C shim.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    /// Set once the options every request shares are in place (handles are reused).
    var configured = false
    /// The receive buffer size set on this handle, once set. libcurl 7.88 refuses a new size
    /// once the handle has its buffer (CURLE_BAD_FUNCTION_ARGUMENT), so a handle keeps its
    /// size: the engine reuses it only for transfers that want the same.
    private(set) var bufferSize: Int?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var strings: [ContiguousArray<CChar>] = []
    /// libcurl's own account of a failure (CURLOPT_ERRORBUFFER), which says more than the
    /// code's words: which name a certificate lacks, which CA is unknown, which host refused.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    init() {
        handle = curl_easy_init()
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        _ = CShims_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    deinit {
        curl_easy_cleanup(handle)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }

    func setBufferSize(_ size: Int) throws(CurlError) {
        guard bufferSize != size else { return }
        try set(CURLOPT_BUFFERSIZE, size, "buffer size")
        bufferSize = size
    }

    /// Forgets the last failure's message (before each request: handles are reused).
    func clearError() {
        errorBuffer[0] = 0
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

    func set(_ option: CURLoption, _ value: Int, _ name: String = "option") throws(CurlError) {
        try check(CShims_easy_setopt_long(handle, option, value), name)
    }

    func set(_ option: CURLoption, offset value: Int64, _ name: String = "option") throws(CurlError) {
        try check(CShims_easy_setopt_off(handle, option, curl_off_t(value)), name)
    }

    /// Sets a string option; libcurl copies strings (CURLOPT_* "the string is copied" since 7.17).
    func set(_ option: CURLoption, _ value: String, _ name: String = "option") throws(CurlError) {
        try check(CShims_easy_setopt_string(handle, option, value), name)
    }

    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws(CurlError) {
        try check(CShims_easy_setopt_pointer(handle, option, pointer), "pointer option")
    }

    func set(_ option: CURLoption, callback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int) throws(CurlError) {
        try check(CShims_easy_setopt_write_callback(handle, option, callback), "callback")
    }

    /// Replaces the request headers.
    func setHeaders(_ lines: [String]) throws(CurlError) {
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        for line in lines { headerList = curl_slist_append(headerList, line) }
        try check(CShims_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList), "headers")
    }

    /// Lets a transfer paused by its write callback (CURL_WRITEFUNC_PAUSE) go on.
    func unpause() {
        _ = curl_easy_pause(handle, CURLPAUSE_CONT)
    }

    var redirectURL: String? {
        var pointer: UnsafeMutablePointer<CChar>?
        guard CShims_easy_getinfo_string(handle, CURLINFO_REDIRECT_URL, &pointer) == CURLE_OK, let pointer else { return nil }
        return String(cString: pointer)
    }

    static func describe(_ code: Int32) -> String {
        String(cString: curl_easy_strerror(CURLcode(rawValue: UInt32(code))))
    }
}

/// Owns a `CURLM *` multi handle: many transfers on one thread, with connection reuse.
final class CurlMulti {
    let handle: UnsafeMutableRawPointer

    init(totalConnections: Int, perHost: Int) {
        handle = curl_multi_init()
        _ = CShims_multi_setopt_long(handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, totalConnections)
        _ = CShims_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, perHost)
        _ = CShims_multi_setopt_long(handle, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
    }

    deinit {
        curl_multi_cleanup(handle)
    }

    func add(_ easy: CurlEasy) {
        curl_multi_add_handle(handle, easy.handle)
    }

    func remove(_ easy: CurlEasy) {
        curl_multi_remove_handle(handle, easy.handle)
    }

    /// Drives transfers; returns how many are still running.
    func perform() -> Int {
        var running: Int32 = 0
        curl_multi_perform(handle, &running)
        return Int(running)
    }

    /// Waits for activity for at most `milliseconds`.
    func poll(milliseconds: Int) {
        var ready: Int32 = 0
        curl_multi_poll(handle, nil, 0, Int32(milliseconds), &ready)
    }

    /// Something other threads may call to end a `poll` early (curl_multi_wakeup is
    /// thread-safe); valid while this multi handle lives.
    var waker: Waker { Waker(handle: handle) }

    struct Waker: @unchecked Sendable {
        fileprivate let handle: UnsafeMutableRawPointer
        func wake() { curl_multi_wakeup(handle) }
    }

    /// Completed transfers: the easy handle and its result code.
    func completed() -> [(UnsafeMutableRawPointer, Int32)] {
        var done: [(UnsafeMutableRawPointer, Int32)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                done.append((easy, Int32(message.pointee.data.result.rawValue)))
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
}
