import Foundation

/// Debian's real `minisign` (scripts/test installs it), for tests that sign: a key pair made
/// with `minisign -G -W` (no password) in its own temporary folder, and signatures made
/// with `minisign -S`, exactly as an operator's CI job would make them.
public final class MinisignKey: @unchecked Sendable {
    public static let executable = "/usr/bin/minisign"
    public static var installed: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    /// The key's folder: `minisign.pub`, `minisign.key`.
    public let folder: TemporaryFolder
    /// The public key string (the second line of `minisign.pub`), as a config names it.
    public let publicKey: String
    /// The key id of `minisign.pub`'s comment, as 16 uppercase hex digits: minisign 0.11
    /// prints it without its leading zeros (`%llX`), padded here to the width prefetch shows.
    public let keyID: String

    /// A new key pair.
    public init() throws {
        folder = try TemporaryFolder()
        try Self.minisign(["-G", "-W", "-p", "minisign.pub", "-s", "minisign.key"], in: folder.url)
        let lines = try String(contentsOf: folder.url.appendingPathComponent("minisign.pub"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
        guard lines.count == 2, let id = lines[0].split(separator: " ").last else {
            throw MinisignError(message: "minisign -G wrote an unexpected minisign.pub: \(lines)")
        }
        publicKey = lines[1]
        keyID = String(repeating: "0", count: max(0, 16 - id.count)) + id
    }

    /// The `.minisig` bytes for `message`: prehashed (`ED`, minisign's default) unless
    /// `legacy` (`-l`: `Ed`, over the bytes themselves); `trustedComment` is `-t`'s (nil:
    /// minisign's own, `timestamp:N<TAB>file:NAME<TAB>hashed`).
    public func sign(_ message: [UInt8], trustedComment: String? = nil, legacy: Bool = false) throws -> [UInt8] {
        let work = try TemporaryFolder()
        let file = work.url.appendingPathComponent("file")
        try Data(message).write(to: file)
        var arguments = ["-S", "-s", folder.url.appendingPathComponent("minisign.key").path, "-m", file.path]
        if legacy { arguments.append("-l") }
        if let trustedComment { arguments += ["-t", trustedComment] }
        try Self.minisign(arguments, in: work.url)
        return [UInt8](try Data(contentsOf: work.url.appendingPathComponent("file.minisig")))
    }

    /// Whether the real `minisign -V` accepts `signature` of `message` by this key (an
    /// independent reference for the verifier).
    public func minisignVerifies(_ message: [UInt8], signature: [UInt8]) throws -> Bool {
        let work = try TemporaryFolder()
        try Data(message).write(to: work.url.appendingPathComponent("file"))
        try Data(signature).write(to: work.url.appendingPathComponent("file.minisig"))
        return try Self.minisign(["-V", "-q", "-P", publicKey, "-m", "file"], in: work.url, check: false) == 0
    }

    @discardableResult
    static func minisign(_ arguments: [String], in folder: URL, check: Bool = true) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if check && process.terminationStatus != 0 {
            throw MinisignError(message: "minisign \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(String(decoding: said, as: UTF8.self))")
        }
        return process.terminationStatus
    }
}

public struct MinisignError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
