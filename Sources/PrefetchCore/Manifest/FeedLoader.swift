/// Feeds read from files and folders, with every diagnostic and the sources to quote.
public struct LoadedFeeds: Sendable {
    /// The feeds that decoded without errors, in file-name order.
    public var feeds: [Feed] = []
    /// Every error and warning, per file in the order read.
    public var diagnostics: [Diagnostic] = []
    /// File contents, for quoting lines in diagnostics.
    public var sources: [String: SourceText] = [:]
    /// How many manifest files were read.
    public var fileCount = 0

    /// True when any error was found (the command must exit 2 and do nothing).
    public var hasErrors: Bool { diagnostics.contains { $0.severity == .error } }
}

/// Finds and decodes feed manifests.
public enum FeedLoader {
    /// True for the file names read from a feeds folder: `*.yaml` or `*.yml`, not hidden.
    public static func isManifestName(_ name: String) -> Bool {
        !name.hasPrefix(".") && (name.hasSuffix(".yaml") || name.hasSuffix(".yml"))
    }

    /// Loads every manifest named in `paths`: files as given, folders by their
    /// `*.yaml`/`*.yml` files. A missing path is an error; an empty folder a warning.
    public static func load(_ paths: [String], config: Config) -> LoadedFeeds {
        var result = LoadedFeeds()
        var files: [String] = []
        for path in paths {
            switch FileSystem.kind(of: path) {
            case .directory?:
                switch FileSystem.listDirectory(path) {
                case .success(let names):
                    let manifests = names.filter(isManifestName).map { (path.hasSuffix("/") ? path : path + "/") + $0 }
                        .filter { FileSystem.kind(of: $0) == .regular }
                    if manifests.isEmpty {
                        result.diagnostics.append(Diagnostic(.warning, file: path, at: nil, "no feed manifests (*.yaml, *.yml) in this folder"))
                    }
                    files += manifests
                case .failure(let error):
                    result.diagnostics.append(Diagnostic(.error, file: path, at: nil, "cannot read the feeds folder: \(error)"))
                }
            case .regular?, .other?:
                files.append(path)
            case nil:
                result.diagnostics.append(Diagnostic(.error, file: path, at: nil, "no such file or folder"))
            }
        }
        let decoder = FeedDecoder(config: config)
        var names: [String: String] = [:]
        for file in files {
            result.fileCount += 1
            // A regular file is first read in chunks, never whole; one with anything to say
            // about it (or that is not regular) is read whole and decoded through the tree
            // (`FeedDecoder.decode`), which quotes the lines it speaks of.
            if let opened = FileSystem.openRegularFile(file) {
                let clean = decoder.decodeClean(opened, file: file)
                // A name already taken is said below, with its line quoted.
                if let feed = clean, names[feed.name] == nil {
                    names[feed.name] = file
                    result.feeds.append(feed)
                    continue
                }
            }
            let bytes: [UInt8]
            switch FileSystem.readFile(file, limit: Int(config.maxManifestSize.bytes)) {
            case .success(.bytes(let data)): bytes = data
            case .success(.tooLarge(let size, let exact)):
                // Refused before it is parsed (SPEC §7): this error only, nothing quoted.
                result.diagnostics.append(Diagnostic(.error, file: file, at: nil, FeedDecoder.tooLarge(size: size, exact: exact, config: config)))
                continue
            case .failure(let error):
                result.diagnostics.append(Diagnostic(.error, file: file, at: nil, "cannot read the manifest: \(error)"))
                continue
            }
            let (feed, diagnostics) = decoder.decode(bytes, file: file)
            result.diagnostics += diagnostics
            // Kept only to quote the lines diagnostics name (a feed-name clash names one too).
            result.sources[file] = SourceText(bytes: bytes)
            guard let feed else { continue }
            if let other = names[feed.name] {
                result.diagnostics.append(Diagnostic(.error, file: file, at: feed.nameLocation,
                                                     "feed name '\(feed.name)' is already used by \(other)"))
                continue
            }
            names[feed.name] = file
            result.feeds.append(feed)
        }
        return result
    }
}
