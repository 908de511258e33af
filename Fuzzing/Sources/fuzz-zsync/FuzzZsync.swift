import FuzzCheck
@testable import PrefetchCore

/// The delta's readers of what a server sends (Delta/, SPEC §9). The first byte picks what
/// the rest is: even, a zsync control file; odd, a `multipart/byteranges` body with the
/// boundary `B`, read in two pieces split where the second byte says. Nothing traps; a
/// control file is accepted only when it begins `zsync: `, its block size is a power of two
/// from 256 B to 1 MiB, its SHA-1 is 40 hex digits, and its entries are exactly its blocks'
/// (checked here from its own `Length`, `Blocksize` and `Hash-Lengths` lines, read again);
/// a body reads the same in two pieces as in one, every data event lies inside the part
/// announced before it, and a part's data is as long as its range.
func fuzzZsync(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = bytes(data, size)
    guard let selector = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    if selector & 1 == 0 {
        // The early bound (read no further than the header declares) never crashes, and never
        // stops a file the reader accepts: for one, it declares exactly the file's length.
        let declared = ZsyncControl.declaredLength(rest)
        guard let control = try? ZsyncControl(parsing: rest, maxSize: 1 << 40) else { return 0 }
        require(declared == rest.count, "an accepted control file of \(rest.count) bytes declared \(declared.map(String.init) ?? "nothing")")
        require(rest.starts(with: Array("zsync: ".utf8)), "accepted without 'zsync: '")
        require(control.blockSize >= 256 && control.blockSize <= 1 << 20 && control.blockSize & (control.blockSize - 1) == 0, "block size \(control.blockSize)")
        require(control.sha1.utf8.count == 40, "SHA-1 \(control.sha1)")
        // The reference: the header's own lines (up to the first blank line: the block entries
        // after it are binary, and may hold "\nLength: …" themselves, a found input), split plainly.
        let text = String(decoding: rest.prefix(65_536), as: UTF8.self)
        let lines = text.components(separatedBy: "\n\n")[0].components(separatedBy: "\n")
        func value(_ name: String) -> String? { lines.first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) } }
        let length = UInt64(value("Length") ?? "") ?? 0, block = UInt64(value("Blocksize") ?? "") ?? 1
        let widths = (value("Hash-Lengths") ?? "1,4,16").split(separator: ",").compactMap { Int($0) }
        require(widths.count == 3 && length == control.length && block == UInt64(control.blockSize), "header \(text.prefix(200).debugDescription)")
        let blocks = (length + block - 1) / block
        require(UInt64(control.entries.count) == blocks * UInt64(widths[1] + widths[2]), "\(control.entries.count) entry bytes for \(blocks) blocks")
        return 0
    }
    guard let split = rest.first else { return 0 }
    let body = Array(rest.dropFirst())
    let cut = body.isEmpty ? 0 : Int(split) % (body.count + 1)
    func read(_ pieces: [ArraySlice<UInt8>]) -> Result<[ByteRangesReader.Event], ByteRangesReader.Malformed> {
        var reader = ByteRangesReader(boundary: "B")
        var events: [ByteRangesReader.Event] = []
        do {
            for piece in pieces { events += try reader.read(piece) }
            return .success(events)
        } catch {
            return .failure(error)
        }
    }
    let whole = read([body[...]]), twice = read([body[..<cut], body[cut...]])
    switch (whole, twice) {
    case (.success(let one), .success(let two)):
        // Data events may be cut where the pieces are: compare the bytes by offset.
        require(flatten(one) == flatten(two), "the body read in two pieces differs")
        var current: (first: UInt64, last: UInt64)?
        var got: UInt64 = 0
        for event in one {
            switch event {
            case .part(let first, let last, let complete):
                if let current { require(got == current.last - current.first + 1, "a part of \(got) bytes") }
                require(first <= last && last < complete, "part \(first)-\(last)/\(complete)")
                current = (first, last)
                got = 0
            case .data(let offset, let bytes):
                guard let current else { require(false, "data before a part"); return 0 }
                require(offset == current.first + got && offset + UInt64(bytes.count) - 1 <= current.last, "data at \(offset) outside its part")
                got += UInt64(bytes.count)
            case .end:
                if let current { require(got == current.last - current.first + 1, "the last part of \(got) bytes") }
            }
        }
    case (.failure, .failure):
        break
    default:
        require(false, "the body read in one piece and in two gives different answers")
    }
    return 0
}

private enum Flat: Equatable { case part(UInt64, UInt64, UInt64), byte(UInt64, UInt8), end }

private func flatten(_ events: [ByteRangesReader.Event]) -> [Flat] {
    events.flatMap { event -> [Flat] in
        switch event {
        case .part(let a, let b, let c): return [.part(a, b, c)]
        case .data(let offset, let bytes): return bytes.enumerated().map { .byte(offset + UInt64($0.offset), $0.element) }
        case .end: return [.end]
        }
    }
}
