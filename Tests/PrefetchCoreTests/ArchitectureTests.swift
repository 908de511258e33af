import Foundation
import Testing

/// The shape of the code, checked: the folders of `Sources/PrefetchCore` are layers, and no
/// layer uses a name declared in a layer above it (nothing points back up). From the bottom:
///
///     Values, System            values and the operating system, wrapped once
///     YAML                      reading YAML, with positions for errors
///     Signatures                minisign signatures (Ed25519, BLAKE2b-512 from libcrypto)
///     Config                    the configuration file
///     Manifest, State           feeds; state.db
///     Cache, Schedule, Conditions
///     Plan                      the pure planner
///     Transfer                  the downloader
///     Output                    what commands print
///     Run                       one pass of run (and the daemon's)
///     Commands                  argv → command → exit status
///
/// Folders of one layer do not use each other's names either (but Values and System,
/// which are one layer in two folders). The check reads declarations and identifiers as text,
/// comments and string literals left out.
@Suite struct ArchitectureTests {
    static let layers: [[String]] = [
        ["Values", "System"], ["YAML"], ["Signatures", "Delta"], ["Config"], ["Manifest", "State"], ["Cache", "Schedule", "Conditions"],
        ["Plan"], ["Transfer"], ["Output"], ["Run"], ["Commands"],
    ]
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/PrefetchCore").standardized

    static func rank(_ folder: String) -> Int? { layers.firstIndex { $0.contains(folder) } }

    /// The text without comments and string literals.
    /// (The lines stay where they were: a comment or string over several lines leaves its
    /// line breaks.)
    static func code(_ text: String) -> String {
        var out = "", chars = Array(text), i = 0
        func breaks(_ range: Range<Int>) -> String {
            String(repeating: "\n", count: chars[max(0, min(range.lowerBound, chars.count))..<min(range.upperBound, chars.count)].count { $0 == "\n" })
        }
        while i < chars.count {
            if chars[i] == "/", i + 1 < chars.count, chars[i + 1] == "/" {
                while i < chars.count, chars[i] != "\n" { i += 1 }
            } else if chars[i] == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                let start = i
                i += 2
                while i + 1 < chars.count, !(chars[i] == "*" && chars[i + 1] == "/") { i += 1 }
                i += 2
                out += breaks(start..<i)
            } else if chars[i] == "\"" {
                let start = i
                let triple = i + 2 < chars.count && chars[i + 1] == "\"" && chars[i + 2] == "\""
                i += triple ? 3 : 1
                while i < chars.count {
                    if chars[i] == "\\" { i += 2; continue }
                    if triple, i + 2 < chars.count, chars[i] == "\"", chars[i + 1] == "\"", chars[i + 2] == "\"" { i += 3; break }
                    if !triple, chars[i] == "\"" || chars[i] == "\n" { i += 1; break }
                    i += 1
                }
                out += "\"\"" + breaks(start..<i)
            } else {
                out.append(chars[i])
                i += 1
            }
        }
        return out
    }

    static func identifiers(_ code: String) -> Set<String> {
        var names = Set<String>(), current = ""
        for c in code {
            if c.isLetter || c.isNumber || c == "_" { current.append(c) } else {
                if let first = current.first, !first.isNumber { names.insert(current) }
                current = ""
            }
        }
        return names
    }

    struct File { let folder: String; let name: String; let code: String; var lineCount = 0 }

    /// Every source file, with the top folder it is in (its layer); a file in a folder below
    /// (`Values/Compact/`) belongs to its top folder's layer, its name the path below it.
    static func files() throws -> [File] {
        var out: [File] = []
        for folder in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let url = sources.appendingPathComponent(folder)
            guard (try? url.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true else { continue }
            let names = FileManager.default.enumerator(atPath: url.path)?.compactMap { $0 as? String } ?? []
            for name in names.sorted() where name.hasSuffix(".swift") {
                let text = try String(contentsOf: url.appendingPathComponent(name), encoding: .utf8)
                out.append(File(folder: folder, name: name, code: code(text), lineCount: text.split(separator: "\n", omittingEmptySubsequences: false).count - 1))
            }
        }
        return out
    }

    /// Bytes are handled through pointers in one place (`Values/Compact/`: the byte comparison,
    /// the hash table, the presence words) and in the owners of C libraries and system calls:
    /// the domain and output layers read as plain Swift, with no unsafe pointer, `withUTF8`
    /// or `memcmp` (the SQLite owner, `State/SQLite.swift`, aside).
    @Test func theDomainLayersHoldNoPointers() throws {
        let plain: Set<String> = ["Manifest", "Plan", "State", "Output", "Run", "Commands"]
        let forbidden = try Regex("Unsafe[A-Za-z]*Pointer|withUnsafe|withUTF8|memcmp|utf8Start")
        var found: [String] = []
        for file in try Self.files() where plain.contains(file.folder) && !(file.folder == "State" && file.name == "SQLite.swift") {
            for line in file.code.split(separator: "\n") where line.contains(forbidden) { found.append("\(file.folder)/\(file.name): \(line)") }
        }
        #expect(found.isEmpty, Comment(rawValue: found.joined(separator: "\n")))
    }

    /// A source file stays under 450 lines and a function under 100 (issue 36): a newcomer
    /// reads one job at a time. Functions are found by their `func` or `init` and measured
    /// from it to the brace that closes their body, comments and strings left out.
    @Test func filesAndFunctionsStayShort() throws {
        var found: [String] = []
        for file in try Self.files() {
            let lines = file.code.split(separator: "\n", omittingEmptySubsequences: false)
            if file.lineCount >= 450 { found.append("\(file.folder)/\(file.name): \(file.lineCount) lines") }
            let declaration = try Regex("\\b(func [A-Za-z_][A-Za-z0-9_]*|init[?!]?)\\s*[(<]")
            for (start, line) in lines.enumerated() where line.contains(declaration) {
                var depth = 0, opened = false
                scan: for (offset, text) in lines[start...].enumerated() {
                    for character in text {
                        if character == "{" { depth += 1; opened = true } else if character == "}" { depth -= 1 }
                        if opened && depth == 0 {
                            if offset + 1 >= 100 { found.append("\(file.folder)/\(file.name):\(start + 1): a function of \(offset + 1) lines") }
                            break scan
                        }
                    }
                    if !opened && offset > 5 { break }  // a declaration without a body (a protocol's)
                }
            }
        }
        #expect(found.isEmpty, Comment(rawValue: found.joined(separator: "\n")))
    }

    /// Each storage idiom has one home (`Values/Compact/`): no box class, hash table of
    /// bytes (`Hasher()` fed by hand) or `memcmp` of their own elsewhere.
    @Test func storageIdiomsLiveInCompact() throws {
        let idioms = try Regex("final class [A-Za-z]*Box\\b|Hasher\\(\\)|memcmp")
        var found: [String] = []
        for file in try Self.files() where !(file.folder == "Values" && file.name.hasPrefix("Compact/")) {
            for line in file.code.split(separator: "\n") where line.contains(idioms) { found.append("\(file.folder)/\(file.name): \(line)") }
        }
        #expect(found.isEmpty, Comment(rawValue: found.joined(separator: "\n")))
    }

    /// No process-global mutable state: no stored `static var`, no `shared` instance, nothing
    /// `nonisolated(unsafe)` (libcurl's and OpenSSL's own global set-up aside, which lives
    /// behind `CurlGlobal.initialized`, a `static let`).
    @Test func thereIsNoGlobalMutableState() throws {
        var found: [String] = []
        for file in try Self.files() {
            for line in file.code.split(separator: "\n") {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.contains("static var "), !text.contains("{") { found.append("\(file.folder)/\(file.name): \(text)") }
                if text.contains("static let shared") || text.contains("nonisolated(unsafe)") { found.append("\(file.folder)/\(file.name): \(text)") }
            }
        }
        #expect(found.isEmpty, Comment(rawValue: found.joined(separator: "\n")))
    }

    /// The operating system is called from System/ only: each call wrapped once there, with a
    /// typed errno and EINTR retried (libcurl's, libyaml's, SQLite's and libcrypto's calls go
    /// through their own owner types).
    @Test func systemCallsAreWrappedInSystem() throws {
        let calls = ["mkdir", "mkdirat", "renameat", "rename", "unlinkat", "unlink", "rmdir", "lstat", "fstatat", "stat", "fstat",
                     "statvfs", "fsync", "ftruncate", "lseek", "pwrite", "read", "write", "opendir", "readdir", "fdopendir",
                     "closedir", "flock", "openat", "close", "dup", "CShims_start_writeback", "CShims_filesystem_type"]
        var found: [String] = []
        let declarations = try Regex("(func|case) [A-Za-z0-9_]+\\(")
        for file in try Self.files() where file.folder != "System" {
            let code = file.code.replacing(declarations, with: "func _(")  // declaring a `read()` or a `case write(…)` is no call
            for call in calls {
                // A free function call: the name, then "(", not after "." (a method of ours) or a letter.
                let pattern = try Regex("(^|[^.A-Za-z0-9_])" + call + "\\(")
                if code.contains(pattern) { found.append("\(file.folder)/\(file.name) calls \(call)(") }
            }
        }
        #expect(found.isEmpty, Comment(rawValue: found.joined(separator: "\n")))
    }

    /// libcurl is called from its owner types only: every option set and every result
    /// checked in one file (Transfer/Curl.swift).
    @Test func libcurlIsCalledFromCurlSwiftOnly() throws {
        var found: [String] = []
        let call = try Regex("(curl_[a-z_]+\\(|CURLOPT_|CURLMOPT_|CShims_(easy|multi)_)")
        for file in try Self.files() where !(file.folder == "Transfer" && file.name == "Curl.swift") {
            if file.code.contains(call) { found.append("\(file.folder)/\(file.name)") }
        }
        #expect(found.isEmpty, Comment(rawValue: found.joined(separator: "\n")))
    }

    @Test func everyFolderIsALayer() throws {
        for file in try Self.files() { #expect(Self.rank(file.folder) != nil, "\(file.folder)/ is in no layer") }
    }

    @Test func nothingPointsBackUp() throws {
        let files = try Self.files()
        // Top-level declarations, by the folder that declares them.
        var declaredIn: [String: String] = [:]
        let declaration = try Regex(#"(?m)^(?:public |internal |private |fileprivate )?(?:final )?(?:struct|enum|class|protocol|actor|typealias) ([A-Z][A-Za-z0-9_]*)"#)
        for file in files {
            for match in file.code.matches(of: declaration) {
                if let name = match.output[1].substring { declaredIn[String(name)] = file.folder }
            }
        }
        #expect(declaredIn.count > 80, "declarations found: \(declaredIn.count)")
        var violations: [String] = []
        for file in files {
            guard let rank = Self.rank(file.folder) else { continue }
            for name in Self.identifiers(file.code).sorted() {
                guard let home = declaredIn[name], home != file.folder, let homeRank = Self.rank(home) else { continue }
                let sameBase = rank == 0 && homeRank == 0
                if homeRank > rank || (homeRank == rank && !sameBase) {
                    violations.append("\(file.folder)/\(file.name) uses \(name) of \(home)/")
                }
            }
        }
        #expect(violations.isEmpty, Comment(rawValue: "names used from a layer above (or beside):\n" + violations.joined(separator: "\n")))
    }
}
