import FuzzCheck
import PrefetchCore

/// The manifest loader as `prefetch validate` runs it on a file's bytes: YAML parse, feed
/// decoding, diagnostics rendering. Every diagnostic lies inside the input and renders;
/// a feed comes back exactly when no error was reported, and what it holds keeps the
/// manifest's rules (a safe path, a valid name, bounds on every number, values that print
/// back to what they are).
func fuzzManifest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    let file = "feeds/fuzz.yaml"
    let (feed, diagnostics) = FeedDecoder(config: Config()).decode(input, file: file)
    checkDiagnostics(diagnostics, file: file, bytes: input)
    let errors = diagnostics.filter { $0.severity == .error }
    require((feed == nil) == !errors.isEmpty, "feed \(feed == nil ? "missing" : "returned") with \(errors.count) errors: \(errors.first?.headline ?? "")")
    guard let feed else { return 0 }
    require(FeedName.problem(feed.name) == nil, "feed named \(feed.name.debugDescription)")
    require(feed.file == file, "feed from \(feed.file)")
    if let schedule = feed.schedule {
        require((try? CronExpression.parse(schedule.source)) == schedule, "schedule \(schedule.source.debugDescription) does not parse to itself")
    }
    require(feed.jitter.seconds >= 0 && feed.refresh.seconds >= 0, "negative jitter \(feed.jitter) or refresh \(feed.refresh)")
    require((1...1000).contains(feed.retry.attempts), "retry attempts \(feed.retry.attempts)")
    require(feed.retry.backoff.seconds > 0 && feed.retry.backoff <= feed.retry.maxBackoff,
            "retry backoff \(feed.retry.backoff) to \(feed.retry.maxBackoff)")
    require((1...1024).contains(feed.limits.concurrency), "concurrency \(feed.limits.concurrency)")
    require((0...100).contains(feed.conditions.minBattery), "min_battery \(feed.conditions.minBattery)")
    if let days = feed.days { require(!days.isEmpty, "days given as an empty set") }
    var paths = Set<String>()
    for resource in feed.resources {
        require(RelativePath.problem(resource.path) == nil, "resource path \(resource.path.debugDescription) accepted")
        require(paths.insert(resource.path).inserted, "two resources at \(resource.path.debugDescription)")
        require(resource.url.scheme == "http" || resource.url.scheme == "https", "resource URL \(resource.url.text)")
        if let sha = resource.sha256 {
            require(sha.utf8.count == 64 && sha.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) },
                    "sha256 \(sha.debugDescription) accepted")
        }
        if let size = resource.size, let max = resource.maxSize { require(size <= max, "size \(size) over max_size \(max)") }
        if let start = resource.notBefore, let end = resource.expires, end <= start {  // SPEC §5: a warning, not an error
            require(diagnostics.contains { $0.severity == .warning && $0.message.contains("expires") }, "expires \(end) not after not_before \(start) without a warning")
        }
        require(resource.location.line >= 1 && resource.location.column >= 1, "resource at \(resource.location)")
    }
    return 0
}
