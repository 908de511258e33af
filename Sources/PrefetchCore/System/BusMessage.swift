internal import CShims

/// A value of a D-Bus property as the probes read it: the basic types they need and
/// arrays of object paths; anything else is skipped whole and kept as `other`.
enum BusValue: Sendable, Equatable {
    case bool(Bool)
    case uint32(UInt32)
    case string(String)
    case objectPath(String)
    case objectPaths([String])
    case other(signature: String)

    var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    var uint32: UInt32? { if case .uint32(let value) = self { value } else { nil } }
    var string: String? {
        switch self {
        case .string(let value), .objectPath(let value): value
        default: nil
        }
    }
    var objectPaths: [String]? { if case .objectPaths(let value) = self { value } else { nil } }
}

/// One message sd-bus handed over, read in place: valid only during the call that got it
/// (`BusConnection` unrefs it afterwards). Reading moves its read position, as sd-bus does.
struct BusMessage {
    enum Kind: UInt8 {
        case methodCall = 1, methodReturn = 2, methodError = 3, signal = 4
    }

    fileprivate let api: CShims_sdbus
    fileprivate let message: OpaquePointer

    init(api: CShims_sdbus, message: OpaquePointer) {
        self.api = api
        self.message = message
    }

    var kind: Kind? {
        var type: UInt8 = 0
        guard api.message_get_type(message, &type) >= 0 else { return nil }
        return Kind(rawValue: type)
    }

    /// The cookie of the call a reply or an error answers.
    var replyCookie: UInt64? {
        var cookie: UInt64 = 0
        return api.message_get_reply_cookie(message, &cookie) >= 0 ? cookie : nil
    }

    /// An error reply's name and text.
    var error: (name: String, message: String)? {
        guard let error = api.message_get_error(message), let name = error.pointee.name else { return nil }
        return (String(cString: name), error.pointee.message.map { String(cString: $0) } ?? "")
    }

    var path: String? { api.message_get_path(message).map { String(cString: $0) } }
    var interface: String? { api.message_get_interface(message).map { String(cString: $0) } }
    var member: String? { api.message_get_member(message).map { String(cString: $0) } }

    private static func code(_ character: Character) -> CChar { CChar(bitPattern: character.asciiValue!) }

    /// The next string or object path.
    func readString() throws(BusFailure) -> String {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let peeked = api.message_peek_type(message, &type, &contents)
        guard peeked > 0 else { throw BusFailure("malformed D-Bus message: a string was expected") }
        var value: UnsafePointer<CChar>?
        let read = api.message_read_basic(message, type, &value)
        guard read > 0, type == Self.code("s") || type == Self.code("o"), let value else {
            throw BusFailure("malformed D-Bus message: a string was expected")
        }
        return String(cString: value)
    }

    /// A property dictionary (`a{sv}`, as `GetAll` and `PropertiesChanged` carry it).
    func readProperties() throws(BusFailure) -> [String: BusValue] {
        guard api.message_enter_container(message, Self.code("a"), "{sv}") > 0 else {
            throw BusFailure("malformed D-Bus message: a{sv} was expected")
        }
        var properties: [String: BusValue] = [:]
        while true {
            let entered = api.message_enter_container(message, Self.code("e"), "sv")
            if entered == 0 { break }
            guard entered > 0 else { throw BusFailure.errno("sd_bus_message_enter_container", entered) }
            let name = try readString()
            properties[name] = try readVariant()
            guard api.message_exit_container(message) >= 0 else { throw BusFailure("malformed D-Bus message") }
        }
        guard api.message_exit_container(message) >= 0 else { throw BusFailure("malformed D-Bus message") }
        return properties
    }

    /// A variant's value (`v`); one of a type the probes do not read is skipped whole.
    func readVariant() throws(BusFailure) -> BusValue {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        guard api.message_peek_type(message, &type, &contents) > 0, type == Self.code("v"), let contents else {
            throw BusFailure("malformed D-Bus message: a variant was expected")
        }
        let signature = String(cString: contents)
        func basic<T: BitwiseCopyable>(_ code: Character, _ initial: T) throws(BusFailure) -> T {
            var value = initial
            let read = withUnsafeMutableBytes(of: &value) { api.message_read_basic(message, Self.code(code), $0.baseAddress) }
            guard read > 0 else { throw BusFailure("malformed D-Bus message") }
            return value
        }
        switch signature {
        case "b", "u", "s", "o":
            guard api.message_enter_container(message, Self.code("v"), contents) > 0 else { throw BusFailure("malformed D-Bus message") }
            let value: BusValue
            switch signature {
            case "b": value = .bool(try basic("b", Int32(0)) != 0)  // sd-bus reads a boolean as an int
            case "u": value = .uint32(try basic("u", UInt32(0)))
            default:
                let text = try readString()
                value = signature == "s" ? .string(text) : .objectPath(text)
            }
            guard api.message_exit_container(message) >= 0 else { throw BusFailure("malformed D-Bus message") }
            return value
        case "ao":
            guard api.message_enter_container(message, Self.code("v"), contents) > 0,
                  api.message_enter_container(message, Self.code("a"), "o") > 0 else { throw BusFailure("malformed D-Bus message") }
            var paths: [String] = []
            while true {
                var value: UnsafePointer<CChar>?
                let read = api.message_read_basic(message, Self.code("o"), &value)
                if read == 0 { break }
                guard read > 0, let value else { throw BusFailure("malformed D-Bus message") }
                paths.append(String(cString: value))
            }
            guard api.message_exit_container(message) >= 0, api.message_exit_container(message) >= 0 else {
                throw BusFailure("malformed D-Bus message")
            }
            return .objectPaths(paths)
        default:
            guard api.message_skip(message, "v") >= 0 else { throw BusFailure("malformed D-Bus message") }
            return .other(signature: signature)
        }
    }
}
