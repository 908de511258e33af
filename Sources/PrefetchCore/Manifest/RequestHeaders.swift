/// Why a resource's headers cannot be sent: a `${VAR}` that is unset, or whose value breaks a
/// limit once filled in (SPEC §7). The message names headers and variables, never a value.
public struct HeaderExpansionError: Error, Sendable, Equatable {
    /// What is wrong, for the resource's failure.
    public let message: String
}

extension Resource {
    /// The resource's header lines (`Name: value`) for a request, with every `${VAR}` filled
    /// in from `environment` and checked as the manifest's own text was: each value at most
    /// 8 KiB, all headers at most 64 KiB, and no control character (no header injection
    /// through the environment). Checked at request time, when the values exist.
    public func headerLines(environment: [String: String]) throws(HeaderExpansionError) -> [String] {
        try headers.lines(environment: environment)
    }
}

extension [HeaderField] {
    /// The header lines with every `${VAR}` filled in and checked (`Resource.headerLines`).
    func lines(environment: [String: String]) throws(HeaderExpansionError) -> [String] {
        var lines: [String] = []
        var total = 0
        for header in self {
            var value = ""
            for part in header.value.parts {
                switch part {
                case .literal(let text): value += text
                case .variable(let name):
                    guard let filled = environment[name] else {
                        throw HeaderExpansionError(message: "header \(header.name) needs the environment variable \(name), which is not set")
                    }
                    if filled.unicodeScalars.contains(where: HeaderTemplate.isControl) {
                        throw HeaderExpansionError(message: "header \(header.name): the value of ${\(name)} holds a line break or another "
                                                   + "control character, which a header cannot carry")
                    }
                    value += filled
                }
            }
            let variables = header.value.variables.map { "${\($0)}" }.joined(separator: ", ")
            if let problem = InputLimits.headerValue.problem(value.utf8.count) {
                throw HeaderExpansionError(message: "header \(header.name) with \(variables) filled in: \(problem)")
            }
            total += header.name.utf8.count + value.utf8.count
            if total > InputLimits.headers.bytes {
                throw HeaderExpansionError(message: InputLimits.headersProblem(total, at: "header \(header.name) filled in"))
            }
            lines.append("\(header.name): \(value)")
        }
        return lines
    }
}
