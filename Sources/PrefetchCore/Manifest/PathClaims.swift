/// The files and folders a feed's paths make, so that no path is claimed twice and none
/// puts a folder where another keeps its file, or a file where another needs a folder.
///
/// A radix tree of path components: an edge stands for a run of whole components, so a
/// chain of folders that only one path goes through is one edge. Memory is linear in the
/// number of paths and time in their length, however deep they go (a map of every folder by
/// its whole path would be quadratic in a path's depth). Compact, for a million paths: the
/// paths' bytes in one arena, edges as ranges of it, found through a `PositionTable` (no
/// string, array or dictionary entry kept per path).
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

    /// Components `start..<end` (bytes of `arena`) leading from node `parent` to `target`;
    /// its first component ends at `start + firstLength`. The folders on the way are those
    /// of the resource on `line`, which made the edge.
    private struct Edge {
        var start: Int
        var end: Int
        var firstLength: Int32
        var parent: Int32
        var target: Int32
        var line: Int32
    }

    /// Every claimed path's bytes, one after another: edges are ranges of it (no array, no
    /// string per path).
    private var arena: [UInt8] = []
    private var edges: [Edge] = []
    /// Where each edge is in `edges`, by its parent and first component.
    private var table = PositionTable()
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
            var componentEnd = position
            while componentEnd < bytes.count, bytes[componentEnd] != slash { componentEnd += 1 }
            let component = bytes[position..<componentEnd]
            let hash = Self.hash(parent: node, component)
            guard let found = edge(from: node, first: component, hash: hash) else {
                // Nothing here yet: the rest of the path is one new edge to its file.
                let leaf = addNode(file: owner, folder: 0)
                let start = arena.count
                arena.append(contentsOf: bytes)
                add(Edge(start: start + position, end: arena.count, firstLength: Int32(componentEnd - position),
                         parent: node, target: leaf, line: owner), hash: hash)
                return nil
            }
            let edge = edges[found]
            let start = edge.start, length = edge.end - edge.start
            var matched = 0
            while matched < length, position + matched < bytes.count, arena[start + matched] == bytes[position + matched] { matched += 1 }
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
            if pathEnds, arena[start + matched] == slash {
                return .folder(line: Int(edge.line))  // a folder on the way of this edge
            }
            // The two part inside a component: split the edge after the last whole
            // component they share (the first one is shared, or the edge was not found).
            var split = matched - 1
            while arena[start + split] != slash { split -= 1 }
            let middle = addNode(file: 0, folder: edge.line)
            let lowerStart = start + split + 1
            var lowerFirstEnd = lowerStart
            while lowerFirstEnd < edge.end, arena[lowerFirstEnd] != slash { lowerFirstEnd += 1 }
            // The upper part keeps its place in the table (same parent, same first component).
            edges[found].end = start + split
            edges[found].target = middle
            add(Edge(start: lowerStart, end: edge.end, firstLength: Int32(lowerFirstEnd - lowerStart), parent: middle,
                     target: edge.target, line: edge.line),
                hash: Self.hash(parent: middle, arena[lowerStart..<lowerFirstEnd]))
            node = middle
            position += split + 1
        }
    }

    /// The edge from `parent` whose first component is `first` (its hash `hash`), if any.
    private func edge(from parent: Int32, first: ArraySlice<UInt8>, hash: Int) -> Int? {
        table.position(hash: hash) { index in
            let edge = edges[index]
            return edge.parent == parent && Int(edge.firstLength) == first.count
                && SameBytes.equal(first, arena[edge.start..<(edge.start + first.count)])
        }
    }

    private mutating func add(_ edge: Edge, hash: Int) {
        edges.append(edge)
        table.append(hash: hash)
    }

    /// Room for `factor` times the paths claimed so far, made at once: when the number
    /// of paths a feed will claim can be told early (`ResourceDecoder`), the arrays are
    /// not doubled (and copied) again and again on the way, nor left up to half empty.
    mutating func reserve(growth factor: Double) {
        guard factor > 1, factor < 1e7 else { return }
        func grown(_ count: Int) -> Int { Int((Double(count) * factor).rounded(.up)) }
        arena.reserveCapacity(grown(arena.count))
        edges.reserveCapacity(grown(edges.count))
        fileLine.reserveCapacity(grown(fileLine.count))
        folderLine.reserveCapacity(grown(folderLine.count))
        table.reserveCapacity(grown(edges.count))
    }

    /// The parent and the component's bytes, hashed with a seed fresh in every process
    /// (`SameBytes.hash`): a manifest cannot be written to make its paths collide and the
    /// table's work grow with their square.
    private static func hash(parent: Int32, _ bytes: ArraySlice<UInt8>) -> Int {
        SameBytes.hash(bytes, seed: Int(parent))
    }

    private mutating func addNode(file: Int32, folder: Int32) -> Int32 {
        fileLine.append(file)
        folderLine.append(folder)
        return Int32(fileLine.count - 1)
    }
}
