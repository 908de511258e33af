/// The files and folders a feed's paths make, so that no path is claimed twice and none
/// puts a folder where another keeps its file, or a file where another needs a folder.
///
/// A radix tree of path components: an edge stands for a run of whole components, so a
/// chain of folders that only one path goes through is one edge. Memory is linear in the
/// number of paths and time in their length, however deep they go. (A map of every folder
/// by its whole path was quadratic in a path's depth: 1,000 paths 2,000 folders deep, a
/// 4 MB manifest, held 4 GB; a tree of single components still held 200 MB.)
struct PathClaims {
    /// Why a path cannot be claimed: the line of the resource it conflicts with.
    enum Conflict: Equatable {
        /// Another resource has this path.
        case duplicate(line: Int)
        /// This path is a folder of another resource's path.
        case folder(line: Int)
        /// Another resource keeps its file at `prefix`, a folder of this path.
        case fileAbove(prefix: String, line: Int)
    }

    /// An edge from `parent`, found by its first component.
    private struct Key: Hashable {
        let parent: Int32
        let first: String
    }

    /// Components `start..<end` (bytes) of claimed path `claim`, leading to `target`; the
    /// folders on the way are those of the resource on `line`, which made the edge.
    private struct Edge {
        var claim: Int32
        var start: Int32
        var end: Int32
        var target: Int32
        var line: Int32
    }

    private var claimed: [[UInt8]] = []
    private var edges: [Key: Edge] = [:]
    /// For each node (0 is the root): the line of the resource whose file it is, or 0.
    private var fileLine: [Int32] = [0]
    /// For each node: the line of the resource it is a folder of, or 0.
    private var folderLine: [Int32] = [0]

    /// Records `path` (checked: relative, no empty, `.` or `..` component) for the resource
    /// whose entry starts on `line`; nil, or the conflict, with nothing recorded.
    mutating func claim(_ path: String, line: Int) -> Conflict? {
        let bytes = Array(path.utf8)
        let slash = UInt8(ascii: "/")
        let owner = Int32(clamping: line)
        var node: Int32 = 0
        var position = 0  // where the components not yet matched start
        while true {
            let componentEnd = bytes[position...].firstIndex(of: slash) ?? bytes.count
            let key = Key(parent: node, first: String(decoding: bytes[position..<componentEnd], as: UTF8.self))
            guard let edge = edges[key] else {
                // Nothing here yet: the rest of the path is one new edge to its file.
                let leaf = addNode(file: owner, folder: 0)
                edges[key] = Edge(claim: Int32(claimed.count), start: Int32(position), end: Int32(bytes.count), target: leaf, line: owner)
                claimed.append(bytes)
                return nil
            }
            let label = claimed[Int(edge.claim)]
            let start = Int(edge.start), length = Int(edge.end - edge.start)
            var matched = 0
            while matched < length, position + matched < bytes.count, label[start + matched] == bytes[position + matched] { matched += 1 }
            let pathEnds = position + matched == bytes.count
            if matched == length, pathEnds {
                let file = fileLine[Int(edge.target)]
                return file > 0 ? .duplicate(line: Int(file)) : .folder(line: Int(folderLine[Int(edge.target)]))
            }
            if matched == length, bytes[position + matched] == slash {
                let file = fileLine[Int(edge.target)]
                if file > 0 { return .fileAbove(prefix: String(decoding: bytes[..<(position + matched)], as: UTF8.self), line: Int(file)) }
                node = edge.target
                position += matched + 1
                continue
            }
            if pathEnds, label[start + matched] == slash {
                return .folder(line: Int(edge.line))  // a folder on the way of this edge
            }
            // The two part inside a component: split the edge after the last whole
            // component they share (the first one is shared, or the edge was not found).
            var split = matched - 1
            while label[start + split] != slash { split -= 1 }
            let middle = addNode(file: 0, folder: edge.line)
            let lowerStart = start + split + 1
            let lowerEnd = label[lowerStart...].prefix(Int(edge.end) - lowerStart).firstIndex(of: slash) ?? Int(edge.end)
            edges[Key(parent: middle, first: String(decoding: label[lowerStart..<lowerEnd], as: UTF8.self))] =
                Edge(claim: edge.claim, start: Int32(lowerStart), end: edge.end, target: edge.target, line: edge.line)
            edges[key] = Edge(claim: edge.claim, start: edge.start, end: Int32(start + split), target: middle, line: edge.line)
            node = middle
            position += split + 1
        }
    }

    private mutating func addNode(file: Int32, folder: Int32) -> Int32 {
        fileLine.append(file)
        folderLine.append(folder)
        return Int32(fileLine.count - 1)
    }
}
