import Foundation

/// Where the D-Bus system bus listens: `DBUS_SYSTEM_BUS_ADDRESS` when set and not empty
/// (tests point it at a private bus), else D-Bus's default
/// `unix:path=/run/dbus/system_bus_socket`. Nothing is loaded or connected for a socket
/// that does not exist: a machine without D-Bus never loads libsystemd (SPEC §4, §7).
public struct SystemBusAddress: Sendable, Equatable {
    /// The address as sd-bus takes it (D-Bus's address syntax, `;` between alternatives).
    public let address: String

    public static let defaultAddress = "unix:path=/run/dbus/system_bus_socket"

    public init(_ address: String) {
        self.address = address
    }

    /// The address the environment names, or the default.
    public init(environment: [String: String]) {
        if let named = environment["DBUS_SYSTEM_BUS_ADDRESS"], !named.isEmpty {
            self.init(named)
        } else {
            self.init(Self.defaultAddress)
        }
    }

    /// The socket files of its `unix:path=` alternatives (percent-escapes decoded).
    public var socketPaths: [String] {
        address.split(separator: ";").compactMap { entry -> String? in
            guard entry.hasPrefix("unix:") else { return nil }
            for pair in entry.dropFirst(5).split(separator: ",") where pair.hasPrefix("path=") {
                return String(pair.dropFirst(5)).removingPercentEncoding ?? String(pair.dropFirst(5))
            }
            return nil
        }
    }

    /// Nil when the bus may be there (a socket file exists, or an alternative that is not a
    /// socket path, such as `unix:abstract=` or `tcp:`, is named); else why there is none.
    public var absence: String? {
        let paths = socketPaths
        let others = address.split(separator: ";").count > paths.count
        if others || paths.contains(where: { FileSystem.kind(of: $0) != nil }) { return nil }
        return "no D-Bus system bus (\(paths.joined(separator: ", ")) does not exist)"
    }
}
