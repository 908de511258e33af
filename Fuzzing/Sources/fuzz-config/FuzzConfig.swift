import FuzzCheck
import PrefetchCore

/// The configuration loader on a file's bytes (`/etc/prefetch/config.yaml`). Every
/// diagnostic lies inside the input and renders; whatever is read keeps SPEC §5's bounds,
/// and relative paths are anchored at the configuration's folder.
func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    let file = "/fuzz/etc/config.yaml"
    let (config, diagnostics) = ConfigLoader.decode(input, file: file)
    checkDiagnostics(diagnostics, file: file, bytes: input)
    require(config.file == file, "config read from \(String(describing: config.file))")
    require(config.feeds.hasPrefix("/"), "feeds folder \(config.feeds.debugDescription) is not absolute")
    require(config.cache.hasPrefix("/"), "cache folder \(config.cache.debugDescription) is not absolute")
    if let metrics = config.metricsFile { require(metrics.hasPrefix("/") && !metrics.hasSuffix("/"), "metrics_file \(metrics.debugDescription)") }
    require(config.maxSize.bytes > 0, "max_size 0")
    require((1...1024).contains(config.concurrency) && (1...1024).contains(config.perHost), "concurrency \(config.concurrency), per_host \(config.perHost)")
    require((0...100).contains(config.maxRedirects), "max_redirects \(config.maxRedirects)")
    require((1...100_000).contains(config.starvedAfter), "starved_after \(config.starvedAfter)")
    for span in [config.connectTimeout, config.stallTimeout, config.verifyEvery, config.removedFeedGrace] {
        require(span.seconds > 0, "a timeout of \(span)")
    }
    if let id = config.machineID { require(!id.trimmingCharacters(in: " \t").isEmpty, "machine_id \(id.debugDescription)") }
    return 0
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var view = Substring(self)
        while let first = view.first, set.contains(first) { view = view.dropFirst() }
        while let last = view.last, set.contains(last) { view = view.dropLast() }
        return view
    }
}
