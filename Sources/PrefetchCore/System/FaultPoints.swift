import Foundation

/// Faults a test asks for at the steps of finishing a file and committing state
/// (`PREFETCH_FAULT`), so crash tests can stop or fail prefetch exactly there.
///
/// Compiled only into debug builds (the ones `swift test` runs, flag
/// `PREFETCH_FAULT_POINTS` in Package.swift); a release build has no points, ignores the
/// variable and pays nothing. Syntax: `point:action`, `point:action@N` or
/// `point:action@N+`, comma-separated: the action happens every time the point is reached,
/// only the Nth time (a transient fault), or the Nth time and every time after:
///
/// - points: `body-write` (a body chunk written to the partial), `partial-record` (the
///   commit that records a new partial before it may pass 1 MiB), `partial-fsync` (a
///   running or stopping transfer's partial made durable to record its offset), `truncate` (a
///   partial emptied for a body that starts again from byte 0), `file-fsync` (the
///   complete file's fsync), `rename` (the file moved into place), `folder-fsync` (the
///   folders that received files, before the state commit), `commit` (state.db's commit),
///   `source-link` (a local source linked or copied into the partial folder, before its
///   check and rename: SPEC §9), `delta-write` (a block or a range's bytes written into a
///   delta partial: SPEC §9);
/// - actions: `exit` (`_exit(86)`, nothing flushed), `kill` (SIGKILL to itself), `enospc`
///   and `eio` (the step fails with that errno, as the system call would).
public final class FaultPoints: @unchecked Sendable {
    public enum Point: String, CaseIterable, Sendable {
        case bodyWrite = "body-write"
        case partialRecord = "partial-record"
        case partialFsync = "partial-fsync"
        case truncate
        case fileFsync = "file-fsync"
        case rename
        case folderFsync = "folder-fsync"
        case commit
        case sourceLink = "source-link"
        case deltaWrite = "delta-write"
    }

    enum Action: Equatable {
        case exit, kill
        case fail(Int32)
    }

    /// No faults (release builds, and runs without `PREFETCH_FAULT`).
    public static let none = FaultPoints(rules: [:])

    #if PREFETCH_FAULT_POINTS
    private let rules: [Point: Rule]
    private var hits: [Point: Int] = [:]
    private let lock = NSLock()
    #endif

    struct Rule {
        let action: Action
        /// The hits it acts on: the `from`th, and every later one unless `once`.
        let from: Int
        let once: Bool
    }

    private init(rules: [Point: Rule]) {
        #if PREFETCH_FAULT_POINTS
        self.rules = rules
        #endif
    }

    /// Parses `PREFETCH_FAULT`; unset (or a release build) gives `.none`.
    public static func parse(environment: [String: String]) throws(ValueError) -> FaultPoints {
        #if PREFETCH_FAULT_POINTS
        guard let text = environment["PREFETCH_FAULT"], !text.isEmpty else { return .none }
        var rules: [Point: Rule] = [:]
        for item in text.split(separator: ",") {
            let parts = item.split(separator: ":", maxSplits: 1)
            let actionAndCount = parts.count == 2 ? parts[1].split(separator: "@", maxSplits: 1) : []
            let count = actionAndCount.count == 2 ? String(actionAndCount[1]) : nil
            let later = count?.hasSuffix("+") ?? true
            guard parts.count == 2, let point = Point(rawValue: String(parts[0])), let first = actionAndCount.first,
                  let from = count.map({ Int(later ? String($0.dropLast()) : $0) }) ?? 1, from >= 1 else {
                throw ValueError("PREFETCH_FAULT: expected point:action[@N[+]] (points: \(Point.allCases.map(\.rawValue).joined(separator: ", "))), got '\(item)'")
            }
            let action: Action
            switch first {
            case "exit": action = .exit
            case "kill": action = .kill
            case "enospc": action = .fail(ENOSPC)
            case "eio": action = .fail(EIO)
            default: throw ValueError("PREFETCH_FAULT: actions are exit, kill, enospc and eio, got '\(first)'")
            }
            rules[point] = Rule(action: action, from: from, once: !later)
        }
        return FaultPoints(rules: rules)
        #else
        return .none
        #endif
    }

    /// The step `point` is about to happen: exits or kills the process when asked to, and
    /// returns the errno the step must fail with, if any (nil: go on).
    @inline(__always)
    public func reach(_ point: Point) -> Errno? {
        #if PREFETCH_FAULT_POINTS
        guard let rule = rules[point] else { return nil }
        let count = lock.withLock { () -> Int in
            hits[point, default: 0] += 1
            return hits[point]!
        }
        guard rule.once ? count == rule.from : count >= rule.from else { return nil }
        switch rule.action {
        case .exit: _exit(86)
        case .kill:
            kill(getpid(), SIGKILL)
            pause()
            return nil
        case .fail(let code): return Errno(code)
        }
        #else
        return nil
        #endif
    }
}
