/// A request header value with `${VAR}` references kept unresolved until a transfer
/// needs it, so secrets never sit in the parsed manifest, logs or state.
public struct HeaderTemplate: Sendable, Hashable {
    /// A piece of a header value.
    public enum Part: Sendable, Hashable {
        case literal(String)
        case variable(String)
    }

    /// The value's pieces, in order.
    public let parts: [Part]

    /// Names of the environment variables the value uses.
    public var variables: [String] {
        parts.compactMap { if case .variable(let name) = $0 { return name } else { return nil } }
    }

    /// Headers prefetch sets itself, for correct resume and revalidation.
    public static let reservedNames: Set<String> = [
        "range", "if-range", "if-none-match", "if-modified-since", "accept-encoding",
        "host", "content-length", "transfer-encoding", "connection",
    ]

    /// Nil when `name` is a valid HTTP field name (RFC 9110 §5.1 token) that prefetch
    /// lets a manifest set, else why not.
    public static func nameProblem(_ name: String) -> ValueError? {
        if name.isEmpty { return ValueError("a header name cannot be empty") }
        let allowed = Set("!#$%&'*+-.^_`|~".utf8)
        for (index, byte) in name.utf8.enumerated() {
            let alphanumeric = (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122)
            if !alphanumeric && !allowed.contains(byte) {
                return ValueError("'\(name)' is not a valid header name", at: index)
            }
        }
        if reservedNames.contains(name.lowercased()) {
            return ValueError("prefetch sets the '\(name)' header itself (for resume and revalidation)")
        }
        return nil
    }

    /// Parses a value: `${NAME}` (NAME = `[A-Za-z_][A-Za-z0-9_]*`) is a reference, any
    /// other `$` is literal. Line breaks, NUL and every other control character (C0, tab
    /// included, DEL and C1, as SPEC §7 says; such as a quoted escape puts there) are refused:
    /// no header injection.
    public static func parse(_ text: String) throws(ValueError) -> HeaderTemplate {
        let chars = Array(text)
        var parts: [Part] = []
        var literal = ""
        var index = 0
        while index < chars.count {
            let c = chars[index]
            if c == "\r" || c == "\n" || c == "\r\n" || c == "\0" {
                throw ValueError("a header value cannot contain line breaks or NUL", at: index)
            }
            if c.unicodeScalars.contains(where: isControl) {
                throw ValueError("a header value cannot contain control characters (RFC 9110 §5.5)", at: index)
            }
            if c == "$", index + 1 < chars.count, chars[index + 1] == "{" {
                guard let close = chars[(index + 2)...].firstIndex(of: "}") else {
                    throw ValueError("'${' is not closed with '}'", at: index)
                }
                let name = String(chars[(index + 2)..<close])
                guard let first = name.first, first == "_" || (first.isASCII && first.isLetter),
                      name.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }) else {
                    throw ValueError("'${\(name)}' is not a valid variable name (letters, digits and _)", at: index + 2)
                }
                if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
                parts.append(.variable(name))
                index = close + 1
                continue
            }
            literal.append(c)
            index += 1
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        return HeaderTemplate(parts: parts)
    }

    /// True for C0 (tab included), DEL and C1.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// The value with every reference filled from `environment`; throws the first
    /// missing variable's name.
    public func resolve(_ environment: [String: String]) throws(MissingVariable) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let text): out += text
            case .variable(let name):
                guard let value = environment[name] else { throw MissingVariable(name: name) }
                out += value
            }
        }
        return out
    }

    /// The value as shown to people: references stay `${NAME}`, never their values.
    public var display: String {
        parts.map { part in
            switch part {
            case .literal(let text): return text
            case .variable(let name): return "${\(name)}"
            }
        }.joined()
    }
}

/// A header refers to an environment variable that is not set.
public struct MissingVariable: Error, Sendable, Equatable {
    /// The variable's name.
    public let name: String
}
