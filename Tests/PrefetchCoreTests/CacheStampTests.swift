import Foundation
import Glibc
import Testing
import TestSupport
@testable import PrefetchCore

/// `CacheStamp` (what lets the daemon at rest skip listing the cache, issue 20): every change
/// a person can make to the cache's files between two passes breaks the stamp, and nothing
/// but state.db's own files in `.prefetch` leaves it whole. Real folders on the real
/// filesystem; each case on a cache of its own, stamped once the tree is old enough not to
/// be "racy" (a change in the same timestamp tick as the stamp would go unseen).
@Suite struct CacheStampTests {
    /// Every change to the tree that a listing or `gc` would see, and whether it must break the stamp.
    static let changes: [(name: String, breaks: Bool, change: @Sendable (String) throws -> Void)] = [
        ("nothing", false, { _ in }),
        ("state.db's journal and a new state file in .prefetch", false, { root in
            try Data("j".utf8).write(to: URL(fileURLWithPath: root + "/.prefetch/state.db-journal"))
            try FileManager.default.removeItem(atPath: root + "/.prefetch/state.db-journal")
        }),
        ("a file's content rewritten in place (a listing cannot see it either)", false, { root in
            try Data("other".utf8).write(to: URL(fileURLWithPath: root + "/f/sub/a.bin"), options: [])
        }),
        ("a file deleted in a subfolder", true, { root in try FileManager.default.removeItem(atPath: root + "/f/sub/a.bin") }),
        ("a file deleted at the feed's top", true, { root in try FileManager.default.removeItem(atPath: root + "/f/top.bin") }),
        ("a file planted in a subfolder", true, { root in try Data("p".utf8).write(to: URL(fileURLWithPath: root + "/f/sub/deep/planted")) }),
        ("a folder planted with a file in it", true, { root in
            try FileManager.default.createDirectory(atPath: root + "/f/sub/new", withIntermediateDirectories: false)
            try Data("p".utf8).write(to: URL(fileURLWithPath: root + "/f/sub/new/x"))
        }),
        ("a file renamed", true, { root in try FileManager.default.moveItem(atPath: root + "/f/sub/a.bin", toPath: root + "/f/sub/b.bin") }),
        ("a subfolder swapped for a symlink", true, { root in
            try FileManager.default.moveItem(atPath: root + "/f/sub/deep", toPath: root + "/elsewhere")
            try FileManager.default.createSymbolicLink(atPath: root + "/f/sub/deep", withDestinationPath: root + "/elsewhere")
        }),
        ("a subfolder removed with its files", true, { root in try FileManager.default.removeItem(atPath: root + "/f/sub/deep") }),
        ("a feed's folder removed", true, { root in try FileManager.default.removeItem(atPath: root + "/f") }),
        ("a new feed folder", true, { root in try FileManager.default.createDirectory(atPath: root + "/g", withIntermediateDirectories: false) }),
        ("a folder made unreadable (its ctime)", true, { root in chmod(root + "/f/sub", 0o300) }),
        ("a partial planted", true, { root in try Data("p".utf8).write(to: URL(fileURLWithPath: root + "/.prefetch/partial/x.part")) }),
        ("a generation's file removed", true, { root in try FileManager.default.removeItem(atPath: root + "/.prefetch/generations/r/1/g.bin") }),
    ]

    @Test func everyChangeAListingWouldSeeBreaksTheStamp() throws {
        var caches: [(TemporaryFolder, CacheFolder)] = []
        for _ in Self.changes {
            let folder = try TemporaryFolder()
            let root = folder.path + "/cache"
            let cache = try CacheFolder.open(root).get()
            for sub in ["f/sub/deep", ".prefetch/generations/r/1"] {
                try FileManager.default.createDirectory(atPath: root + "/" + sub, withIntermediateDirectories: true)
            }
            for file in ["f/top.bin", "f/sub/a.bin", "f/sub/deep/c.bin", ".prefetch/generations/r/1/g.bin", ".prefetch/state.db"] {
                try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/" + file))
            }
            caches.append((folder, cache))
        }
        // Past the racy window of every folder just made (its seconds, and one tick more).
        Thread.sleep(forTimeInterval: Double(CacheStamp.racyWindow) + 1.1)
        for ((name, breaks, change), (folder, cache)) in zip(Self.changes, caches) {
            let stamp = CacheStamp.take(cache)
            #expect(!stamp.racy && stamp.holds(in: cache), "\(name): a fresh stamp does not hold")
            try change(folder.path + "/cache")
            #expect(stamp.holds(in: cache) == !breaks, "\(name): the stamp \(breaks ? "held" : "broke")")
            chmod(folder.path + "/cache/f/sub", 0o755)  // so the folder can be removed
        }
    }

    /// A folder changed within the racy window of the stamp never holds: a second change in the
    /// same timestamp tick would leave its mtime as stamped.
    @Test func aFolderChangedJustBeforeTheStampNeverHolds() throws {
        let folder = try TemporaryFolder()
        let cache = try CacheFolder.open(folder.path + "/cache").get()
        try FileManager.default.createDirectory(atPath: folder.path + "/cache/f", withIntermediateDirectories: true)
        let stamp = CacheStamp.take(cache)
        #expect(stamp.racy && !stamp.holds(in: cache))
        // Stamped as if long after: the same folders hold.
        let later = CacheStamp.take(cache, realNow: Clock.realNow().advanced(bySeconds: 60))
        #expect(!later.racy && later.holds(in: cache))
    }

    /// The partials' 7 days are a time: the stamp says when the oldest partial turns abandoned.
    @Test func thePartialsAgeIsTheOldestPartialsMtimePlusSevenDays() throws {
        let folder = try TemporaryFolder()
        let cache = try CacheFolder.open(folder.path + "/cache").get()
        #expect(CacheStamp.take(cache).partialsAgeAt == nil)
        for (name, age) in [("a.part", Int64(3_600)), ("b.part", 86_400), ("c.other", 30 * 86_400)] {
            let path = folder.path + "/cache/.prefetch/partial/" + name
            try Data("p".utf8).write(to: URL(fileURLWithPath: path))
            let then = Clock.realNow().seconds - age
            var times = [timespec(tv_sec: Int(then), tv_nsec: 0), timespec(tv_sec: Int(then), tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        }
        let stamp = CacheStamp.take(cache)
        let oldest = Clock.realNow().seconds - 86_400
        #expect(stamp.partialsAgeAt.map { abs($0.seconds - (oldest + GarbageCollector.abandonedAfter)) <= 2 } == true,
                "\(String(describing: stamp.partialsAgeAt))")
    }
}
