extension NodeReader {
    /// A `headers` mapping (a resource's, a feed source's): names checked, values as
    /// `${VAR}` templates, 64 KiB in all.
    mutating func headers(_ node: YAMLNode) -> [HeaderField] {
        guard case .mapping(let pairs) = node.content else {
            error("headers must be a mapping of header names to values, found \(node.kindDescription)", at: node.location)
            return []
        }
        var headers: [HeaderField] = []
        var seen: [String: SourceLocation] = [:]
        var total = 0
        for pair in pairs {
            guard let name = value(pair.key, what: "a header name", limit: InputLimits.key, { (text) throws(ValueError) -> String in
                if let problem = HeaderTemplate.nameProblem(text) { throw problem }
                return text
            }) else { continue }
            if let first = seen[name.lowercased()] {
                error("header '\(name)' is given twice (first at line \(first.line))", at: pair.key.location)
                continue
            }
            seen[name.lowercased()] = pair.key.location
            guard checkLength(pair.value, InputLimits.headerValue) else { continue }
            // Names and values as written count toward the resource's 64 KiB; checked before
            // the value's own syntax (a limit error replaces it), once, where it is passed.
            total += name.utf8.count + (pair.value.scalar?.utf8.count ?? 0)
            if total > InputLimits.headers.bytes {
                error(InputLimits.headersProblem(total, at: "header '\(name)'"), at: pair.key.location)
                return headers
            }
            if let value = value(pair.value, what: "header '\(name)'", limit: InputLimits.headerValue, HeaderTemplate.parse) {
                headers.append(HeaderField(name: name, value: value))
            }
        }
        return headers
    }
}
