import Foundation
import Glibc
import PrefetchCore
import Testing
import TestSupport

/// `scripts/install --root DIR`, run for real into a scratch root (with this build's binary):
/// what it puts where, the system user in DIR/etc/passwd, that a second run changes nothing
/// an admin made, and `--uninstall`. (The package, installed on this machine with dpkg, is
/// `scripts/check-package`'s.)
@Suite(.enabled(if: geteuid() == 0, "scripts/install runs as root (useradd, chown)"))
struct InstallScriptTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
    static let script = repository.appendingPathComponent("scripts/install")
    static let units = ["prefetch-daemon.service", "prefetch-run.service", "prefetch-run.timer"]

    /// A scratch root with the account files of a fresh system.
    static func scratchRoot() throws -> TemporaryFolder {
        let root = try TemporaryFolder()
        try root.write("etc/passwd", "root:x:0:0:root:/root:/bin/bash\n")
        try root.write("etc/group", "root:x:0:\n")
        try root.write("etc/shadow", "root:*:19000:0:99999:7:::\n")
        try root.write("etc/gshadow", "root:*::\n")
        return root
    }

    static func install(_ root: TemporaryFolder, _ extra: [String] = []) throws -> RunResult {
        try BinaryRunner.run(["--root", root.path, "--binary", BinaryRunner.executable.path] + extra,
                             environment: ["PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                             executable: script, timeout: 120)
    }

    static func text(_ root: TemporaryFolder, _ path: String) throws -> String {
        try String(contentsOfFile: root.file(path), encoding: .utf8)
    }

    static func gunzip(_ path: String) throws -> String {
        try BinaryRunner.run(["-dc", path], executable: URL(fileURLWithPath: "/bin/gzip")).stdout
    }

    static func owner(_ path: String) -> (uid: uid_t, gid: gid_t, mode: mode_t) {
        var info = stat()
        guard stat(path, &info) == 0 else { return (uid_t.max, gid_t.max, 0) }
        return (info.st_uid, info.st_gid, info.st_mode & 0o7777)
    }

    @Test func installsEverythingInPlace() throws {
        let root = try Self.scratchRoot()
        let result = try Self.install(root)
        #expect(result.status == 0, "\(result.diagnostics)")
        #expect(result.stderr.contains("nothing is enabled"))

        let binary = root.file("usr/local/bin/prefetch")
        #expect(Self.owner(binary).mode == 0o755)
        let version = try BinaryRunner.run(["--version"], executable: URL(fileURLWithPath: binary))
        #expect(version.stdout == "prefetch \(ProgramVersion.text)\n")

        // The units of etc/, each Exec line's prefetch at /usr/local/bin, nothing else changed.
        for unit in Self.units {
            let source = try String(contentsOf: Self.repository.appendingPathComponent("etc/\(unit)"), encoding: .utf8)
            let installed = try Self.text(root, "etc/systemd/system/\(unit)")
            let sourceLines = source.components(separatedBy: "\n"), installedLines = installed.components(separatedBy: "\n")
            #expect(sourceLines.count == installedLines.count)
            for (before, after) in zip(sourceLines, installedLines) where before != after {
                let program = before.split(separator: " ", maxSplits: 1), moved = after.split(separator: " ", maxSplits: 1)
                #expect(before.hasPrefix("Exec") && program[0].hasSuffix("/prefetch") && moved[0].hasSuffix("=/usr/local/bin/prefetch")
                        && program.dropFirst().elementsEqual(moved.dropFirst()), "\(unit): '\(before)' became '\(after)'")
            }
            for line in installedLines where line.hasPrefix("ExecStart=") {
                #expect(line.hasPrefix("ExecStart=/usr/local/bin/prefetch "), "\(unit): \(line)")
            }
            #expect(Self.owner(root.file("etc/systemd/system/\(unit)")).mode == 0o644)
        }

        let example = try String(contentsOf: Self.repository.appendingPathComponent("etc/config.example.yaml"), encoding: .utf8)
        #expect(try Self.text(root, "etc/prefetch/config.yaml") == example)
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: root.file("etc/prefetch/feeds"), isDirectory: &isFolder) && isFolder.boolValue)

        let man = try BinaryRunner.run(["help", "--man"]).stdout
        #expect(try Self.gunzip(root.file("usr/local/share/man/man1/prefetch.1.gz")) == man)
        let completion = try BinaryRunner.run(["help", "--bash-completion"]).stdout
        #expect(try Self.text(root, "usr/local/share/bash-completion/completions/prefetch") == completion)

        // A system user and group of its own, without a login, its home the cache, which it owns.
        let passwd = try Self.text(root, "etc/passwd").split(separator: "\n").filter { $0.hasPrefix("prefetch:") }
        try #require(passwd.count == 1, "\(passwd)")
        let fields = passwd[0].split(separator: ":", omittingEmptySubsequences: false)
        let uid = try #require(uid_t(fields[2])), gid = try #require(gid_t(fields[3]))
        #expect(uid > 0 && uid < 1000, "not a system uid: \(uid)")
        #expect(fields[5] == "/var/cache/prefetch" && fields[6] == "/usr/sbin/nologin")
        #expect(try Self.text(root, "etc/group").contains("prefetch:x:\(gid):"))
        #expect(try Self.text(root, "etc/shadow").contains("prefetch:"))
        let cache = Self.owner(root.file("var/cache/prefetch"))
        #expect(cache.uid == uid && cache.gid == gid && cache.mode == 0o755)
    }

    /// The ACL of `path` as `getfacl -cpn` prints it, one entry a line.
    static func acl(_ path: String) throws -> [String] {
        let result = try BinaryRunner.run(["-cpn", path], executable: URL(fileURLWithPath: "/usr/bin/getfacl"))
        return result.stdout.split(separator: "\n").map(String.init)
    }

    /// SPEC §6: Debian's node_exporter textfile folder (root:root 0755) writable for the
    /// prefetch group through an ACL entry (naming its gid in the root's own group file), the
    /// folder's owner and base entries unchanged; never through a symlink put in its place
    /// (its parent is the prometheus user's); `--uninstall` leaves the folder as it was.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setfacl"), "needs setfacl and getfacl (acl)"))
    func nodeExportersFolderGetsAnACLEntry() throws {
        let root = try Self.scratchRoot()
        let folder = root.file("var/lib/prometheus/node-exporter")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, 0o755)
        let base = ["user::rwx", "group::r-x", "other::r-x"]
        #expect(try Self.acl(folder) == base)
        #expect(try Self.install(root).status == 0)
        let gid = try #require(try Self.text(root, "etc/group").split(separator: "\n").first { $0.hasPrefix("prefetch:") }?
            .split(separator: ":")[2])
        #expect(try Self.acl(folder) == ["user::rwx", "group::r-x", "group:\(gid):rwx", "mask::rwx", "other::r-x"])
        #expect(Self.owner(folder).uid == 0 && Self.owner(folder).gid == 0)
        #expect(try Self.install(root, ["--uninstall"]).status == 0)
        #expect(try Self.acl(folder) == base && Self.owner(folder).mode == 0o755, "the folder is not as it was")

        // A symlink in the folder's place: its target gets nothing.
        let other = try Self.scratchRoot()
        let target = other.file("elsewhere")
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        chmod(target, 0o755)
        try FileManager.default.createDirectory(atPath: other.file("var/lib/prometheus"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: other.file("var/lib/prometheus/node-exporter"), withDestinationPath: target)
        #expect(try Self.install(other).status == 0)
        #expect(try Self.acl(target) == base, "followed a symlink")
    }

    @Test func aSecondRunKeepsWhatTheAdminMade() throws {
        let root = try Self.scratchRoot()
        #expect(try Self.install(root).status == 0)
        let config = "feeds: /srv/feeds\n"
        try root.write("etc/prefetch/config.yaml", config)
        try root.write("etc/prefetch/feeds/lobby.yaml", "resources: []\n")
        try root.write("var/cache/prefetch/lobby/a.txt", "cached")
        let passwd = try Self.text(root, "etc/passwd")

        let again = try Self.install(root)
        #expect(again.status == 0, "\(again.diagnostics)")
        #expect(again.stderr.contains("kept \(root.path)/etc/prefetch/config.yaml"))
        #expect(try Self.text(root, "etc/prefetch/config.yaml") == config)
        #expect(try Self.text(root, "etc/prefetch/feeds/lobby.yaml") == "resources: []\n")
        #expect(try Self.text(root, "var/cache/prefetch/lobby/a.txt") == "cached")
        #expect(try Self.text(root, "etc/passwd") == passwd)
    }

    @Test func uninstallRemovesTheProgramAndKeepsTheData() throws {
        let root = try Self.scratchRoot()
        #expect(try Self.install(root).status == 0)
        // As `systemctl enable prefetch-run.timer` links it.
        try FileManager.default.createDirectory(atPath: root.file("etc/systemd/system/timers.target.wants"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.file("etc/systemd/system/timers.target.wants/prefetch-run.timer"),
                                                   withDestinationPath: "/etc/systemd/system/prefetch-run.timer")
        try root.write("etc/prefetch/feeds/lobby.yaml", "resources: []\n")

        let result = try Self.install(root, ["--uninstall"])
        #expect(result.status == 0, "\(result.diagnostics)")
        let gone = ["usr/local/bin/prefetch", "usr/local/share/man/man1/prefetch.1.gz", "usr/local/lib/tmpfiles.d/prefetch.conf",
                    "usr/local/share/bash-completion/completions/prefetch",
                    "etc/systemd/system/timers.target.wants/prefetch-run.timer"] + Self.units.map { "etc/systemd/system/\($0)" }
        for path in gone {
            #expect((try? FileManager.default.attributesOfItem(atPath: root.file(path))) == nil, "\(path) is still there")
        }
        for path in ["etc/prefetch/config.yaml", "etc/prefetch/feeds/lobby.yaml", "var/cache/prefetch"] {
            #expect(FileManager.default.fileExists(atPath: root.file(path)), "\(path) was removed")
        }
        #expect(try Self.text(root, "etc/passwd").contains("\nprefetch:"))
        #expect(try Self.install(root, ["--uninstall"]).status == 0, "a second --uninstall fails")
    }
}
