/// Decodes a feed's resources one at a time, as the YAML parser completes each entry, so
/// their nodes never pile up; checks paths across the feed as it goes.
final class ResourceDecoder {
    /// A resource's keys, in the order docs/manifests.md documents them: the one table both
    /// ways of reading a resource go by (a new key is a case here and its lines in `decode`).
    enum Field: Int, CaseIterable {
        case url, path, sha256, size, maxSize, notBefore, expires, priority, headers, encoding, mirrors, zsync

        /// The key as a manifest writes it.
        var key: String {
            switch self {
            case .url: return "url"
            case .path: return "path"
            case .sha256: return "sha256"
            case .size: return "size"
            case .maxSize: return "max_size"
            case .notBefore: return "not_before"
            case .expires: return "expires"
            case .priority: return "priority"
            case .headers: return "headers"
            case .encoding: return "encoding"
            case .mirrors: return "mirrors"
            case .zsync: return "zsync"
            }
        }
    }

    static let keys = Field.allCases.map(\.key)

    /// A resource's values by key, as either reader found them; each taken out once (moved,
    /// not copied: a manifest has hundreds of thousands).
    struct Fields: ~Copyable {
        var nodes: [YAMLNode?]

        mutating func take(_ field: Field) -> YAMLNode? { nodes[field.rawValue].take() }
    }

    private let config: Config
    private var reader: NodeReader
    private var decoded: [Resource] = []
    /// Bare dates wait for the feed's zone, which may come after the resources in the file.
    private var pending: [(index: Int, notBefore: Timestamp?, expires: Timestamp?, expiresAt: SourceLocation?)] = []
    private var paths = PathClaims()
    /// The feed's hosts, one string each for all its URLs.
    private var hosts: StringInterner? = StringInterner()
    /// How many entries the list had, valid or not.
    private(set) var count = 0
    /// Resources (indices into `decoded`) that give their own `encoding`: the feed's does not
    /// replace theirs (`inheritEncoding`). Usually none.
    private var ownEncoding: Set<Int> = []
    /// Resources that give their own `zsync`, and where: the feed's does not replace theirs.
    private var ownZsync: [Int: SourceLocation] = [:]
    /// How many errors its entries had so far.
    var errorCount: Int { reader.errorCount }

    init(config: Config, file: String) {
        self.config = config
        self.reader = NodeReader(file: file)
    }

    /// A collector that hands each clean entry of `resources` straight from the parser's
    /// events to `decode(_:at:)` (`FeedDecoder.decodeClean`); it refuses any entry with
    /// something to report, which the caller then reads the whole way.
    ///
    /// `fileSize`, the manifest's bytes, tells how many entries to make room for once the
    /// first `sample` are read (`reserve`).
    func collector(fileSize: Int) -> FlatItemCollector {
        FlatItemCollector(keys: Self.keys, limits: FeedDecoder.scalars) { [unowned self] nodes, at, offset in
            count += 1
            if count == 1 { firstOffset = offset }
            if count == Self.sample + 1 { reserve(fileSize: fileSize, offset: offset) }
            var fields = Fields(nodes: [])
            swap(&fields.nodes, &nodes)
            decode(&fields, at: at)
            swap(&fields.nodes, &nodes)  // the collector's array again, for the next entry
        }
    }

    /// Entries read before the rest are estimated.
    static let sample = 1024
    /// The byte offset where the first entry starts.
    private var firstOffset = 0

    /// Room for the entries the file's remaining bytes hold at the rate of the first
    /// `sample` (which end at `offset`), with 2 % to spare: a feed's arrays, grown by doubling,
    /// would be up to twice as large as their contents, and held twice while copied at each
    /// growth (at a million resources, hundreds of MB). Room reserved and never used costs
    /// address space only: its pages are never touched.
    private func reserve(fileSize: Int, offset: Int) {
        let sampled = offset - firstOffset
        guard sampled > 0, fileSize > offset else { return }
        let factor = Double(fileSize - firstOffset) / Double(sampled) * 1.02
        guard factor > 1, factor < 1e7 else { return }
        decoded.reserveCapacity(Int((Double(decoded.count) * factor).rounded(.up)))
        paths.reserve(growth: factor)
    }

    /// Decodes one entry of `resources`, as the tree builder made it.
    func decode(_ item: YAMLNode) {
        count += 1
        guard let entries = reader.mapping(item, allowed: Self.keys, what: "a resource") else { return }
        var fields = Fields(nodes: [YAMLNode?](repeating: nil, count: Field.allCases.count))
        for entry in entries.pairs {
            guard let index = Self.keys.firstIndex(of: entry.name) else { continue }  // `mapping` reported it
            fields.nodes[index] = entry.pair.value
        }
        decode(&fields, at: item.location)
    }

    /// Decodes one entry of `resources` from its values by key; its mapping starts `at`.
    private func decode(_ fields: inout Fields, at entry: SourceLocation) {
        let urlEntry = fields.take(.url), pathEntry = fields.take(.path), shaEntry = fields.take(.sha256), sizeEntry = fields.take(.size)
        let maxSizeEntry = fields.take(.maxSize), notBeforeEntry = fields.take(.notBefore), expiresEntry = fields.take(.expires)
        let priorityEntry = fields.take(.priority), headersEntry = fields.take(.headers), encodingEntry = fields.take(.encoding)
        let mirrorsEntry = fields.take(.mirrors), zsyncEntry = fields.take(.zsync)
        guard let urlNode = urlEntry else {
            reader.error("a resource needs a 'url'", at: entry)
            return
        }
        let url = reader.value(urlNode, what: "url", limit: InputLimits.url) { (text) throws(ValueError) -> ResourceURL in
            try ResourceURL.parse(text, hosts: &hosts)
        }

        var path: String?
        var pathNode = urlNode
        if let node = pathEntry {
            pathNode = node
            path = reader.value(node, what: "path", limit: InputLimits.path) { (text) throws(ValueError) -> String in
                if let problem = RelativePath.problem(text) { throw problem }
                return text
            }
        } else if let url {
            path = defaultPath(url, at: urlNode.location)
        }

        var sha256: Digest256?
        if let node = shaEntry {
            sha256 = reader.value(node, what: "sha256") { (text) throws(ValueError) -> Digest256 in
                // 64 hex digits in lowercase, as they usually come: read as they are.
                if let digest = Digest256(hex: text) { return digest }
                guard let digest = Digest256(hex: text.lowercased()) else {
                    throw ValueError("sha256 must be 64 hexadecimal digits, found \(text.count) characters")
                }
                return digest
            }
        }
        let size = sizeEntry.flatMap { reader.value($0, what: "size", ByteSize.parse) }
        let maxSize = maxSizeEntry.flatMap { reader.value($0, what: "max_size", ByteSize.parse) }
        if let size, let node = sizeEntry {
            if let maxSize, size > maxSize {
                reader.error("size \(size.bytes) is larger than max_size \(maxSize.bytes)", at: node.location)
            } else if size > config.maxSize {
                reader.error("size \(size.bytes) is larger than the global max_size \(config.maxSize) (config)", at: node.location)
            }
        }
        if let maxSize, let node = maxSizeEntry {
            if maxSize.bytes == 0 { reader.error("max_size must be more than 0", at: node.location) }
            if maxSize > config.maxSize {
                reader.warning("max_size \(maxSize) is above the global max_size \(config.maxSize); the global cap applies", at: node.location)
            }
        }
        let notBefore = notBeforeEntry.flatMap { reader.value($0, what: "not_before", Timestamp.parse) }
        let expires = expiresEntry.flatMap { reader.value($0, what: "expires", Timestamp.parse) }
        var priority = Priority.normal
        if let node = priorityEntry,
           let value = reader.choice(node, what: "priority", Priority.allCases.map { ($0.rawValue, $0) }) {
            priority = value
        }
        let headers = headersEntry.map { reader.headers($0) } ?? []
        let encoding = encodingEntry.flatMap { reader.encoding($0) }
        let mirrors = mirrorsEntry.flatMap { self.mirrors($0, url: url) }
        let zsync = zsyncEntry.flatMap { reader.zsync($0, hosts: &hosts, urlAllowed: true) }

        guard let url, let path, claim(path, at: pathNode.location, entry: entry) else { return }
        // Instants are set now; only a bare date (which waits for the feed's zone) or an entry
        // to warn about waits in `pending` (a third of a generated feed has times: an entry
        // each held them all to the end).
        func instant(_ time: Timestamp?) -> Instant?? {
            guard let time else { return .some(nil) }
            if case .instant(let value) = time { return value }
            return nil  // a bare date
        }
        var instants: (notBefore: Instant?, expires: Instant?) = (nil, nil)
        if notBefore != nil || expires != nil {
            if let n = instant(notBefore), let e = instant(expires), n.flatMap({ n in e.map { $0 <= n } }) != true {
                instants = (n, e)
            } else {
                pending.append((decoded.count, notBefore, expires, expiresEntry?.location))
            }
        }
        if encoding != nil { ownEncoding.insert(decoded.count) }
        if zsync != nil, let node = zsyncEntry { ownZsync[decoded.count] = node.location }
        var resource = Resource(url: url, path: path, digest: sha256, size: size?.bytes, maxSize: maxSize?.bytes,
                                notBefore: instants.notBefore, expires: instants.expires, priority: priority, headers: headers,
                                location: entry, encoding: encoding ?? .refuse, mirrors: mirrors)
        if let zsync { resource.zsync = zsync }
        decoded.append(resource)
    }

    /// A resource's `mirrors` (SPEC §8): a list of URLs, each checked as `url` is. One that
    /// names the same file as `url` or an earlier mirror (scheme, host, port and path: what
    /// state.db keys a URL's validators by) is a warning and dropped; an empty list is none.
    private func mirrors(_ node: YAMLNode, url: ResourceURL?) -> [ResourceURL]? {
        guard let items = reader.list(node, what: "mirrors") else { return nil }
        var listed: [ResourceURL] = []
        var seen: Set<String> = url.map { [$0.origin + $0.path] } ?? []
        for item in items {
            let mirror = reader.value(item, what: "a mirror", limit: InputLimits.url) { (text) throws(ValueError) -> ResourceURL in
                try ResourceURL.parse(text, hosts: &hosts)
            }
            guard let mirror else { continue }
            guard seen.insert(mirror.origin + mirror.path).inserted else {
                reader.warning("this mirror names a URL the resource already lists (\(mirror.redacted)); it is tried once", at: item.location)
                continue
            }
            listed.append(mirror)
        }
        return listed.isEmpty ? nil : listed
    }

    /// SPEC §7: the feed's `encoding` for every resource that does not give its own.
    func inheritEncoding(_ encoding: EncodingMode, into resources: inout [Resource]) {
        guard encoding != .refuse else { return }  // every resource starts as refuse
        for index in resources.indices where !ownEncoding.contains(index) { resources[index].encoding = encoding }
    }

    /// SPEC §9: the feed's `zsync` (`auto` or `none`, given at `location`) for every resource
    /// that does not give its own; then a warning for each resource whose delta its effective
    /// `encoding` rules out (`keep`, `decode`: the bytes on the wire are not the file's).
    func inheritZsync(_ zsync: ZsyncSetting?, at location: SourceLocation?, into resources: inout [Resource], reader: inout NodeReader) {
        if let zsync, zsync != .none {
            for index in resources.indices where ownZsync[index] == nil { resources[index].zsync = zsync }
        }
        for index in resources.indices where resources[index].zsync != .none && resources[index].encoding != .refuse {
            let at = ownZsync[index] ?? location ?? resources[index].location
            reader.warning("zsync with encoding \(resources[index].encoding.rawValue): the bytes on the wire are not the file's, so no delta is tried",
                           at: at)
        }
    }

    /// The resources, with bare dates resolved in the feed's zone; merges diagnostics into `into`.
    func finish(clock: ZoneClock, reader into: inout NodeReader) -> [Resource] {
        for entry in pending {
            let notBefore = entry.notBefore?.resolved(in: clock)
            let expires = entry.expires?.resolved(in: clock)
            decoded[entry.index].notBefore = notBefore
            decoded[entry.index].expires = expires
            if let notBefore, let expires, expires <= notBefore, let location = entry.expiresAt {
                // A warning (SPEC §5): one odd entry of a generated manifest must not stop the feed.
                reader.warning("expires is not after not_before: this resource is never fetched (it plans expired)", at: location)
            }
        }
        into.absorb(reader)
        return decoded
    }

    /// Only the diagnostics so far, merged into `into`: for a file not read to its end.
    func report(into: inout NodeReader) {
        into.absorb(reader)
    }

    /// The URL path's last segment, percent-decoded, when it makes a safe file name.
    private func defaultPath(_ url: ResourceURL, at location: SourceLocation) -> String? {
        do {
            guard let segment = try url.lastSegment(), !segment.isEmpty else {
                reader.error("the URL ends in '/', so the resource needs a 'path'", at: location)
                return nil
            }
            if let problem = InputLimits.pathComponent.problem(segment.utf8.count) {
                // SPEC §7: reported at the url, which the default path comes from.
                reader.error("the file name from the URL's last segment is too long: \(problem); give the resource a 'path'", at: location)
                return nil
            }
            if segment.utf8.contains(UInt8(ascii: "/")) {  // bytes: "/\u{301}" is no Character "/"
                reader.error("the URL's last segment '\(segment)' holds an encoded '/'; add a 'path'", at: location)
                return nil
            }
            if let problem = RelativePath.problem(segment) {
                reader.error("the URL's last segment '\(segment)' is not a safe file name (\(problem.message)); add a 'path'", at: location)
                return nil
            }
            return segment
        } catch {
            reader.error(error.message + "; add a 'path'", at: location)
            return nil
        }
    }

    /// Records `path` for this feed; false (with an error) when another resource has it,
    /// or uses it as a folder, or has a file where it needs a folder.
    private func claim(_ path: String, at location: SourceLocation, entry: SourceLocation) -> Bool {
        switch paths.claim(path, line: entry.line) {
        case nil:
            return true
        case .duplicate(let line)?:
            reader.error("path '\(path)' is already used by the resource at line \(line)", at: location)
        case .folder(let line)?:
            reader.error("path '\(path)' is also a folder of the resource at line \(line)", at: location)
        case .fileAbove(let prefix, let line)?:
            reader.error("path '\(path)' would put a folder where the resource at line \(line) keeps its file '\(prefix)'", at: location)
        }
        return false
    }
}

extension NodeReader {
    /// An `encoding` value (SPEC §7): `refuse`, `keep` or `decode`; a content coding's name
    /// (`gzip`) gets a hint saying what the key means.
    mutating func encoding(_ node: YAMLNode) -> EncodingMode? {
        if let text = node.scalar, !node.isNull, EncodingMode(rawValue: text) == nil, let hint = EncodingMode.hint(for: text) {
            error(ValueError("encoding must be refuse, keep or decode, found '\(text)' (\(hint))"), in: node)
            return nil
        }
        return choice(node, what: "encoding", EncodingMode.choices)
    }

    /// A `zsync` value (SPEC §9): `auto`, `none` or an http(s) URL of the control file
    /// (`urlAllowed`: a resource's; a feed's may not name one file's control file).
    mutating func zsync(_ node: YAMLNode, hosts: inout StringInterner?, urlAllowed: Bool) -> ZsyncSetting? {
        value(node, what: "zsync", limit: InputLimits.url) { (text) throws(ValueError) -> ZsyncSetting in
            switch text {
            case "auto": return .auto
            case "none": return ZsyncSetting.none
            default:
                guard text.contains("://") else { throw ValueError("zsync must be auto, none or the control file's URL, found '\(text)'") }
                guard urlAllowed else {
                    throw ValueError("zsync at feed level must be auto or none: a control file's URL belongs to one resource")
                }
                return .url(try ResourceURL.parse(text, hosts: &hosts))
            }
        }
    }
}
