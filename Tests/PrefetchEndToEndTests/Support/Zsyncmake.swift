import Foundation
import TestSupport

/// Debian's `zsyncmake` (0.6.2) and `zsync` (scripts/test installs the `zsync` package):
/// control files as publishers make them, and what the real client builds from a seed.
enum Zsyncmake {
    static let tool = "/usr/bin/zsyncmake"
    static let client = "/usr/bin/zsync"

    /// The control file `zsyncmake` writes for `data` (named `name`, its URL relative: `-u name`).
    static func control(_ data: [UInt8], name: String = "f.bin", blockSize: Int? = nil) throws -> [UInt8] {
        let folder = try TemporaryFolder()
        let file = try folder.write(name, Data(data))
        let out = folder.file(name + ".zsync")
        try run(tool, (blockSize.map { ["-b", "\($0)"] } ?? []) + ["-u", name, "-o", out, file], in: folder.url)
        return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    /// Runs a tool in `folder`; throws when it fails. Returns its standard error (`output`:
    /// and its standard output, together).
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], in folder: URL, output: Bool = false) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = output ? errors : FileHandle.nullDevice
        try process.run()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ToolFailed(tool: tool, status: process.terminationStatus, said: said) }
        return said
    }

    struct ToolFailed: Error, CustomStringConvertible {
        let tool: String, status: Int32, said: String
        var description: String { "\(tool) exited \(status): \(said)" }
    }

    /// A new version of `old` as a publisher makes one: `edits` scattered runs of `editLength`
    /// bytes changed, and `insertion` bytes inserted in the middle (seeded: the same seed, the same file).
    static func edited(_ old: [UInt8], seed: UInt64, edits: Int, editLength: Int, insertion: Int) -> [UInt8] {
        var generator = SplitMix(seed)
        var new = old
        for _ in 0..<edits where new.count > editLength {
            let at = Int(generator.next() % UInt64(new.count - editLength))
            for offset in at..<(at + editLength) { new[offset] = UInt8(truncatingIfNeeded: generator.next()) }
        }
        let middle = new.count / 2
        new.insert(contentsOf: (0..<insertion).map { _ in UInt8(truncatingIfNeeded: generator.next()) }, at: middle)
        return new
    }

    struct SplitMix {
        var state: UInt64
        init(_ seed: UInt64) { state = seed }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }
}
