/// Builds one JSON object as a line, fields in the order they are added.
struct JSONObject {
    private var text: String
    private var first = true

    init() {
        text = "{"
        text.reserveCapacity(320)  // a resource line is about 300 bytes
    }

    private mutating func key(_ name: String) {
        text += first ? "" : ","
        first = false
        // Field names are this file's own constants: plain ASCII, nothing to escape.
        text += "\""
        text += name
        text += "\":"
    }

    mutating func add(_ name: String, _ value: String?) {
        key(name)
        guard let value else { return text += "null" }
        // Most values need no escaping: appended in place, no quoted copy made.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            text += "\""
            text += value
            text += "\""
        } else {
            text += JSONObject.quote(value)
        }
    }

    mutating func add(_ name: String, _ value: Int64?) {
        key(name)
        text += value.map { "\($0)" } ?? "null"
    }

    mutating func add(_ name: String, _ value: UInt64?) {
        key(name)
        text += value.map { "\($0)" } ?? "null"
    }

    mutating func add(_ name: String, _ value: Bool?) {
        key(name)
        text += value.map { $0 ? "true" : "false" } ?? "null"
    }

    mutating func add(_ name: String, _ value: Double?) {
        key(name)
        text += value.map { $0.isFinite ? DecimalText.oneDecimal($0) : "null" } ?? "null"
    }

    mutating func add(_ name: String, strings: [String]) {
        key(name)
        text += "[" + strings.map(JSONObject.quote).joined(separator: ",") + "]"
    }

    mutating func add(_ name: String, object: JSONObject) {
        key(name)
        text += object.line
    }

    mutating func add(_ name: String, objects: [JSONObject]) {
        key(name)
        text += "[" + objects.map(\.line).joined(separator: ",") + "]"
    }

    /// The object, without a newline.
    var line: String { text + "}" }

    static func quote(_ string: String) -> String {
        // Most values need no escaping: copy them whole.
        if string.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            return "\"" + string + "\""
        }
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

import Foundation

/// Numbers with one decimal (halves rounded away from zero), without Foundation's
/// `String(format:)` (slow: it goes through NSString on Linux).
enum DecimalText {
    static func oneDecimal(_ value: Double) -> String {
        guard value.isFinite else { return "\(value)" }
        let tenths = (abs(value) * 10).rounded()
        guard tenths < 9e17 else { return "\(value)" }
        let whole = Int64(tenths) / 10, fraction = Int64(tenths) % 10
        return (value < 0 && tenths > 0 ? "-" : "") + "\(whole).\(fraction)"
    }
}
