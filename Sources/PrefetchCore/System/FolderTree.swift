internal import CShims
import Foundation

/// The calls on links and whole folder trees that `consistency: release` needs (SPEC §6):
/// hard links, symlinks read and made, an atomic exchange of two names, and a tree copied
/// as hard links or removed — every one by folder descriptor, never following a symlink.
public enum FolderTree {
    /// `readlinkat`: the text of the symlink `name` in `folder`; nil when it is not a symlink.
    public static func readLink(_ name: String, in folder: FileDescriptor) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(folder.raw, name, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `symlinkat`: makes `name` in `folder`, a symlink whose text is `target`.
    public static func makeSymlink(_ name: String, in folder: FileDescriptor, to target: String) -> Result<Void, Errno> {
        symlinkat(target, folder.raw, name) == 0 ? .success(()) : .failure(.current)
    }

    /// `renameat2(RENAME_EXCHANGE)`: `a` and `b` trade places at once; neither name is ever
    /// missing.
    public static func exchange(_ a: String, in aFolder: FileDescriptor, with b: String, in bFolder: FileDescriptor) -> Result<Void, Errno> {
        CShims_exchange(aFolder.raw, a, bFolder.raw, b) == 0 ? .success(()) : .failure(.current)
    }

    /// `mkdirat` with mode 0755 (an existing folder is fine), opened without following a symlink.
    public static func makeFolder(_ name: String, in parent: FileDescriptor) -> Result<FileDescriptor, Errno> {
        if mkdirat(parent.raw, name, 0o755) != 0, errno != EEXIST { return .failure(.current) }
        return FileDescriptor.open(name, relativeTo: parent, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    }

    /// Fills the empty folder `to` with hard links of every regular file below `from`,
    /// making its folders (0755) on the way; symlinks and anything else are left out (the
    /// cache never trusts them). Every folder made, and `to`, is fsynced unless `sync` is
    /// false, so the links survive a power cut. Returns the number of files linked.
    public static func linkTree(from: FileDescriptor, to: FileDescriptor, sync: Bool) -> Result<Int, Errno> {
        var linked = 0
        func walk(_ source: FileDescriptor, _ target: FileDescriptor) -> Errno? {
            for entry in FileSystem.entries(in: source) {
                switch entry.kind {
                case .directory:
                    guard case .success(let sub) = FileDescriptor.open(entry.name, relativeTo: source,
                                                                       flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { continue }
                    let made: FileDescriptor
                    switch makeFolder(entry.name, in: target) {
                    case .success(let folder): made = folder
                    case .failure(let error): return error
                    }
                    if let error = walk(sub, made) { return error }
                case .regular:
                    if linkat(source.raw, entry.name, target.raw, entry.name, 0) != 0 {
                        if errno == EEXIST { continue }  // a file already there (a resumed staging) stays
                        return .current
                    }
                    linked += 1
                case .other:
                    continue
                }
            }
            if sync, case .failure(let error) = target.sync() { return error }
            return nil
        }
        if let error = walk(from, to) { return .failure(error) }
        return .success(linked)
    }

    /// Removes `name` in `parent` and everything below it, by descriptor: a symlink is
    /// removed itself, never followed. A missing `name` is fine.
    public static func removeTree(_ name: String, in parent: FileDescriptor) -> Result<Void, Errno> {
        guard case .success(let info) = FileSystem.status(of: name, in: parent) else { return .success(()) }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            guard case .success(let folder) = FileDescriptor.open(name, relativeTo: parent, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else {
                return .failure(.current)
            }
            for entry in FileSystem.entries(in: folder) {
                if case .failure(let error) = removeTree(entry.name, in: folder) { return .failure(error) }
            }
            return FileSystem.remove(name, in: parent, folder: true)
        }
        if case .failure(let error) = FileSystem.remove(name, in: parent), error.code != ENOENT { return .failure(error) }
        return .success(())
    }
}
