import Foundation

/// A zsync control file (SPEC §9, "Deltas"), as Debian's `zsyncmake` 0.6.2 writes it, read
/// strictly: a header of `Key: value` lines of at most 64 KiB, a blank line, then exactly
/// `ceil(Length / Blocksize)` block entries and nothing after. Each entry is the last
/// `rsumBytes` bytes of the block's big-endian rolling sum (a‖b) and the first
/// `checksumBytes` bytes of its MD4, the last block zero-padded for both. Pure: bytes in, a
/// control file or the reason it is unusable out.
struct ZsyncControl: Sendable, Equatable {
    /// The `zsync` header: the version of the writer.
    let version: String
    let blockSize: Int
    /// The whole file's length.
    let length: UInt64
    /// The whole file's SHA-1, 40 lowercase hex digits.
    let sha1: String
    /// `Hash-Lengths`: consecutive blocks that must match (1 or 2), bytes of rolling sum and
    /// of MD4 kept per block.
    let sequenceMatches: Int
    let rsumBytes: Int
    let checksumBytes: Int
    /// The block entries one after another, `entryBytes` each.
    let entries: [UInt8]

    var blockCount: Int { Int((length + UInt64(blockSize) - 1) / UInt64(blockSize)) }
    var entryBytes: Int { rsumBytes + checksumBytes }

    /// Why a control file cannot be used (SPEC §9: the delta is not used, the resource is
    /// fetched whole): a short fixed phrase, and where in the file.
    struct Unusable: Error, Equatable, CustomStringConvertible {
        let detail: String
        var description: String { detail }
    }

    /// The most a header may hold, and a block entry at most (4 + 16 bytes).
    static let headerLimit = 64 * 1024

    /// The exact length a control file's first bytes declare — its header, then 
    /// `ceil(Length / Blocksize)` entries of `rsum_bytes + checksum_bytes` — once its blank
    /// line has come; the header limit when more than that came without one (the file is
    /// over the limits: read no further); nil until then, or when the header cannot tell
    /// (the full reader then says what is wrong).
    static func declaredLength(_ prefix: [UInt8]) -> Int? {
        let limit = min(prefix.count, headerLimit + 1)
        var end: Int?
        for index in 0..<max(0, limit - 1) where prefix[index] == 0x0A && prefix[index + 1] == 0x0A {
            end = index + 2
            break
        }
        guard let end else { return prefix.count > headerLimit ? headerLimit : nil }
        var values: [String: String] = [:]
        for line in prefix[0..<(end - 2)].split(separator: 0x0A) {
            guard let colon = line.firstIndex(of: 0x3A), let name = String(bytes: line[line.startIndex..<colon], encoding: .utf8),
                  let value = String(bytes: line[(colon + 1)...], encoding: .utf8) else { continue }
            values[name] = value.trimmingCharacters(in: .whitespaces)
        }
        let lengths = (values["Hash-Lengths"] ?? "1,4,16").split(separator: ",").compactMap { Int($0) }
        guard let length = values["Length"].flatMap(UInt64.init), let size = values["Blocksize"].flatMap(UInt64.init), size > 0,
              lengths.count == 3, (1...4).contains(lengths[1]), (3...16).contains(lengths[2]) else { return nil }
        let blocks = (length + size - 1) / size
        let (total, overflow) = blocks.multipliedReportingOverflow(by: UInt64(lengths[1] + lengths[2]))
        guard !overflow, total <= UInt64(Int.max - end) else { return nil }
        return end + Int(total)
    }

    /// What a control file may cost before it is fetched (SPEC §9, the budget and the plan):
    /// 64 KiB and 20 bytes a 2 KiB block of `size`, or 64 KiB without a size.
    static func bound(size: UInt64?) -> UInt64 {
        UInt64(headerLimit) + (size.map { 20 * (($0 + 2047) / 2048) } ?? 0)
    }
    static let entryLimit = 20
    /// The zsync format this reader implements; a control file that needs a newer one is refused.
    static let formatVersion = [0, 6, 2]

    /// Reads `bytes`. `maxSize`: the resource's `max_size` (a larger `Length` is refused);
    /// `size`: the entry's `size`, which `Length` must be when given.
    init(parsing bytes: [UInt8], maxSize: UInt64, size: UInt64? = nil) throws(Unusable) {
        guard bytes.starts(with: Array("zsync: ".utf8)) else { throw Unusable(detail: "not a control file (it does not begin 'zsync: ')") }
        var headers: [(name: String, value: String, line: Int)] = []
        var position = 0, line = 1
        while true {
            guard let end = bytes[position...].firstIndex(of: UInt8(ascii: "\n")), end < Self.headerLimit else {
                throw Unusable(detail: position == 0 && bytes.count < 7 ? "not a control file (too short)"
                    : bytes.count > Self.headerLimit ? "a header over \(Self.headerLimit / 1024) KiB" : "the header does not end")
            }
            let text = bytes[position..<end]
            position = end + 1
            if text.isEmpty { break }
            guard let colon = text.firstIndex(of: UInt8(ascii: ":")), text.index(after: colon) < text.endIndex,
                  text[text.index(after: colon)] == UInt8(ascii: " ") else {
                throw Unusable(detail: "line \(line): not 'Key: value'")
            }
            guard let name = String(validating: text[..<colon], as: UTF8.self),
                  let value = String(validating: text[(colon + 2)...], as: UTF8.self) else {
                throw Unusable(detail: "line \(line): not UTF-8")
            }
            if line == 1, name != "zsync" { throw Unusable(detail: "not a control file (its first line is not 'zsync: VERSION')") }
            headers.append((name, value, line))
            line += 1
        }
        func one(_ name: String) throws(Unusable) -> (value: String, line: Int)? {
            let found = headers.filter { $0.name == name }
            if found.count > 1 { throw Unusable(detail: "line \(found[1].line): '\(name)' given twice") }
            return found.first.map { ($0.value, $0.line) }
        }
        func required(_ name: String) throws(Unusable) -> (value: String, line: Int) {
            guard let found = try one(name) else { throw Unusable(detail: "no '\(name)' header") }
            return found
        }
        let safe = Set(try one("Safe")?.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } ?? [])
        for header in headers {
            switch header.name {
            case "zsync", "Blocksize", "Length", "SHA-1", "Hash-Lengths", "URL", "Filename", "MTime", "Safe", "Min-Version": continue
            case "Z-URL", "Z-Map2", "Recompress":
                throw Unusable(detail: "line \(header.line): '\(header.name)': a control file of a compressed file's insides (publish one made with zsyncmake -Z)")
            default:
                guard safe.contains(header.name) else { throw Unusable(detail: "line \(header.line): unknown header '\(header.name)'") }
            }
        }
        version = try required("zsync").value
        if let minimum = try one("Min-Version") {
            guard let needed = Self.versionNumbers(minimum.value) else { throw Unusable(detail: "line \(minimum.line): 'Min-Version' is not a version") }
            if needed.lexicographicallyPrecedes(Self.formatVersion) == false, needed != Self.formatVersion {
                throw Unusable(detail: "line \(minimum.line): it needs zsync \(minimum.value), newer than 0.6.2")
            }
        }
        let blocks = try required("Blocksize")
        guard let blockSize = Self.number(blocks.value), blockSize >= 256, blockSize <= 1 << 20, blockSize & (blockSize - 1) == 0 else {
            throw Unusable(detail: "line \(blocks.line): 'Blocksize' is not a power of two from 256 B to 1 MiB: '\(blocks.value)'")
        }
        let lengthHeader = try required("Length")
        guard let length = Self.number(lengthHeader.value), length > 0 else {
            throw Unusable(detail: "line \(lengthHeader.line): 'Length' is not a number above 0: '\(lengthHeader.value)'")
        }
        guard length <= maxSize else { throw Unusable(detail: "line \(lengthHeader.line): 'Length' \(length) is over max_size (\(maxSize))") }
        if let size, length != size { throw Unusable(detail: "line \(lengthHeader.line): 'Length' \(length) is not the entry's size \(size)") }
        let sha = try required("SHA-1")
        guard sha.value.utf8.count == 40, sha.value.utf8.allSatisfy(Self.isHex) else {
            throw Unusable(detail: "line \(sha.line): 'SHA-1' is not 40 hex digits")
        }
        var lengths = (1, 4, 16)
        if let given = try one("Hash-Lengths") {
            let parts = given.value.split(separator: ",", omittingEmptySubsequences: false).map { Self.number(String($0)) }
            guard parts.count == 3, let seq = parts[0], let rsum = parts[1], let checksum = parts[2],
                  (1...2).contains(seq), (1...4).contains(rsum), (3...16).contains(checksum) else {
                throw Unusable(detail: "line \(given.line): 'Hash-Lengths' is not seq_matches,rsum_bytes,checksum_bytes within 1-2, 1-4, 3-16: '\(given.value)'")
            }
            lengths = (Int(seq), Int(rsum), Int(checksum))
        }
        self.blockSize = Int(blockSize)
        self.length = length
        self.sha1 = sha.value.lowercased()
        (sequenceMatches, rsumBytes, checksumBytes) = lengths
        let count = (length + blockSize - 1) / blockSize
        let expected = count * UInt64(lengths.1 + lengths.2)
        guard UInt64(bytes.count) <= UInt64(Self.headerLimit) + UInt64(Self.entryLimit) * count else {
            throw Unusable(detail: "\(bytes.count) bytes: over 64 KiB + 20 bytes for each of its \(count) blocks")
        }
        guard UInt64(bytes.count - position) == expected else {
            throw Unusable(detail: "\(bytes.count - position) bytes of block entries, not the \(expected) of \(count) blocks")
        }
        entries = Array(bytes[position...])
    }

    /// The rolling sum of block `index` as its entry keeps it: a‖b's last `rsumBytes` bytes.
    func rsum(_ index: Int) -> UInt32 {
        var value: UInt32 = 0
        let start = index * entryBytes
        for byte in entries[start..<(start + rsumBytes)] { value = value << 8 | UInt32(byte) }
        return value
    }

    /// The first `checksumBytes` bytes of block `index`'s MD4.
    func checksum(_ index: Int) -> ArraySlice<UInt8> {
        let start = index * entryBytes + rsumBytes
        return entries[start..<(start + checksumBytes)]
    }

    /// A rolling sum's part an entry keeps (`rsum(_:)` compares equal to it).
    func kept(_ sum: RollingChecksum) -> UInt32 {
        let whole = UInt32(sum.a) << 16 | UInt32(sum.b)
        return rsumBytes == 4 ? whole : whole & ((1 << (8 * UInt32(rsumBytes))) - 1)
    }

    private static func number(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return UInt64(text)
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    private static func versionNumbers(_ text: String) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { Int($0) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil && $0! >= 0 }) else { return nil }
        return parts.map { $0! }
    }
}
