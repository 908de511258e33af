import Foundation

/// A feed source's copy in force (SPEC §8): the manifest last applied, with its signature,
/// its validators and when it was fetched.
public struct SourceCopy: Sendable, Equatable {
    /// The manifest's bytes exactly as fetched (what the signature covers).
    public var manifest: [UInt8]
    /// The detached minisign signature, for a signed source.
    public var signature: [UInt8]?
    /// What revalidates it (If-None-Match, If-Modified-Since).
    public var validators: Validators
    /// When it was fetched and applied (`in_force_since`).
    public var fetchedAt: Instant
    /// The key id that signed it (16 hex digits), nil for an unsigned source.
    public var keyID: String?
    /// The trusted comment's `timestamp:` (no rollback to an older one), when it has one.
    public var timestamp: Int64?
}

/// What reading a source's copy in force found.
public enum SourceCopyRead: Sendable, Equatable {
    case none
    case copy(SourceCopy)
    /// A copy that this version cannot read (another format, damaged): counts as never
    /// applied, with this reason.
    case unreadable(String)

    var copy: SourceCopy? { if case .copy(let copy) = self { copy } else { nil } }
}

/// `CACHE/.prefetch/sources/<hash>.copy`: one file per source, named by the SHA-256 of its
/// label (a label is a URL, any bytes), so that the manifest, its signature and its
/// validators are replaced together by one rename. Layout: the line
/// `prefetch source copy 1`, one line of JSON (validators, times, key id, the signature in
/// base64, the manifest's length and SHA-256), then the manifest's bytes.
public enum SourceCopies {
    public static let folder = "sources"
    static let magic = "prefetch source copy "
    static let format = 1

    /// The copy's file name inside `.prefetch/sources/`.
    public static func fileName(label: String) -> String {
        var text = label
        return String(text.withUTF8 { SHA256.hexDigest(UnsafeRawBufferPointer($0)) }.prefix(32)) + ".copy"
    }

    /// The copy's path, for reading and for messages.
    public static func path(inCache cache: String, label: String) -> String {
        (cache.hasSuffix("/") ? cache : cache + "/") + CacheLayout.meta + "/" + folder + "/" + fileName(label: label)
    }

    /// The bytes of `copy` as the file holds them.
    static func encode(_ copy: SourceCopy, url: String) -> [UInt8] {
        var meta: [String: Any] = ["url": url, "fetched": copy.fetchedAt.nanoseconds, "manifest_bytes": copy.manifest.count,
                                   "manifest_sha256": copy.manifest.withUnsafeBytes { SHA256.hexDigest($0) }]
        meta["etag"] = copy.validators.etag
        meta["last_modified"] = copy.validators.lastModified
        meta["key_id"] = copy.keyID
        meta["timestamp"] = copy.timestamp
        meta["signature"] = copy.signature.map { Data($0).base64EncodedString() }
        // One line: JSONSerialization escapes every line break inside strings.
        let line = (try? JSONSerialization.data(withJSONObject: meta, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return Array((magic + "\(format)\n" + line + "\n").utf8) + copy.manifest
    }

    /// Reads a copy's bytes back; what is wrong with them, if anything.
    static func decode(_ bytes: [UInt8]) -> SourceCopyRead {
        guard let firstEnd = bytes.firstIndex(of: 0x0A) else { return .unreadable("the copy in force is damaged") }
        let first = String(decoding: bytes[..<firstEnd], as: UTF8.self)
        guard first.hasPrefix(magic), let version = Int(first.dropFirst(magic.count)) else {
            return .unreadable("the copy in force is damaged")
        }
        guard version == format else {
            return .unreadable("the copy in force was written by another version of prefetch (format \(version); this one reads \(format))")
        }
        let rest = bytes[(firstEnd + 1)...]
        guard let metaEnd = rest.firstIndex(of: 0x0A),
              let object = try? JSONSerialization.jsonObject(with: Data(rest[..<metaEnd])) as? [String: Any],
              let fetched = (object["fetched"] as? NSNumber)?.int64Value,
              let length = (object["manifest_bytes"] as? NSNumber)?.intValue,
              let digest = object["manifest_sha256"] as? String else {
            return .unreadable("the copy in force is damaged")
        }
        let manifest = Array(rest[(metaEnd + 1)...])
        guard manifest.count == length, manifest.withUnsafeBytes({ SHA256.hexDigest($0) }) == digest else { return .unreadable("the copy in force is damaged") }
        var signature: [UInt8]?
        if let text = object["signature"] as? String {
            guard let data = Data(base64Encoded: text) else { return .unreadable("the copy in force is damaged") }
            signature = [UInt8](data)
        }
        return .copy(SourceCopy(manifest: manifest, signature: signature,
                                validators: Validators(etag: object["etag"] as? String, lastModified: object["last_modified"] as? String),
                                fetchedAt: Instant(nanoseconds: fetched), keyID: object["key_id"] as? String,
                                timestamp: (object["timestamp"] as? NSNumber)?.int64Value))
    }

    /// The copy in force of the source labelled `label` in the cache at `cache` (reading
    /// only; a missing cache or file is `none`).
    public static func read(cache: String, label: String, maxManifestSize: ByteSize) -> SourceCopyRead {
        let path = path(inCache: cache, label: label)
        switch FileSystem.readFile(path, limit: Int(maxManifestSize.bytes) + 1 << 20) {
        case .success(.bytes(let bytes)): return decode(bytes)
        case .success(.tooLarge): return .unreadable("the copy in force is larger than max_manifest_size allows")
        case .failure(let error) where error.code == ENOENT: return .none
        case .failure(let error): return .unreadable("cannot read the copy in force: \(error)")
        }
    }
}

extension CacheFolder {
    /// Replaces the source's copy in force atomically and durably: a hidden temporary file
    /// in `.prefetch/sources/`, fsync, rename, then the folder's fsync (as the reader index:
    /// the old copy or the new one, whole, after a crash too).
    func writeSourceCopy(_ copy: SourceCopy, label: String, url: String) -> Result<Void, CacheError> {
        let name = SourceCopies.fileName(label: label)
        let where_ = SourceCopies.path(inCache: path, label: label)
        guard let meta else { return .failure(.cannotWrite(where_, "no .prefetch folder")) }
        let folder: FileDescriptor
        switch SafePath.openFolders([Substring(SourceCopies.folder)], below: meta, create: true) {
        case .success(let opened): folder = opened
        case .failure(let error): return .failure(.unsafePath(error.description))
        }
        let temporary = "." + name + ".tmp"
        let file: FileDescriptor
        switch FileDescriptor.open(temporary, relativeTo: folder, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW) {
        case .success(let opened): file = opened
        case .failure(let error): return .failure(.cannotWrite(where_, error.description))
        }
        let bytes = SourceCopies.encode(copy, url: url)
        let written = bytes.withUnsafeBytes { file.write($0) }.flatMap { syncIsFree ? .success(()) : file.sync() }
        if case .failure(let error) = written {
            _ = FileSystem.remove(temporary, in: folder)  // the copy in force stays
            return .failure(.cannotWrite(where_, error.description))
        }
        if case .failure(let error) = FileSystem.rename(temporary, in: folder, to: name, in: folder) {
            _ = FileSystem.remove(temporary, in: folder)
            return .failure(.cannotWrite(where_, error.description))
        }
        if !syncIsFree, case .failure(let error) = folder.sync() { return .failure(.cannotWrite(where_, "fsync of its folder: \(error)")) }
        return .success(())
    }

    /// Removes the copies of sources the config no longer lists (their feeds are then removed
    /// feeds, kept for §6's grace by their folders, not by these files).
    func removeSourceCopies(except labels: [String]) {
        guard let meta, case .success(let folder) = SafePath.openFolders([Substring(SourceCopies.folder)], below: meta, create: false) else { return }
        let kept = Set(labels.map(SourceCopies.fileName(label:)))
        for name in FileSystem.regularFiles(in: folder) where name.hasSuffix(".copy") && !kept.contains(name) {
            _ = FileSystem.remove(name, in: folder)
        }
    }
}
