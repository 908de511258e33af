/// Easy handles of finished transfers, reused by the next ones on the same shard (libcurl
/// keeps the connection cache in the multi handle; reuse saves setting up a handle per file).
struct HandlePool {
    /// At most this many idle handles are kept (the shard's concurrency).
    let capacity: Int
    private var idle: [CurlEasy] = []

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// An idle handle whose receive buffer has this size (libcurl 7.88 refuses a new
    /// CURLOPT_BUFFERSIZE on a used handle), else a new one.
    mutating func take(bufferSize: Int) throws(CurlError) -> CurlEasy {
        guard let index = idle.lastIndex(where: { $0.bufferSize == bufferSize }) else { return try CurlEasy() }
        return idle.remove(at: index)
    }

    /// Keeps a handle for the next transfer. Only a handle whose request libcurl finished
    /// cleanly may come back (an HTTP error status is clean): one a failure left (a
    /// lookup, a connection, TLS, a cut body, an abort), or one removed in mid-transfer or
    /// while paused, may keep state of that request, and a new handle costs little.
    mutating func give(_ easy: CurlEasy) {
        guard idle.count < capacity else { return }
        idle.append(easy)
    }
}
