/// Reads `NetworkManagerState` over a bus connection, in rounds whose calls go out
/// together (`org.freedesktop.DBus.Properties.GetAll`, never starting NetworkManager):
/// the bus's own `GetNameOwner` with the manager object, then the primary active
/// connection, its devices, and — for a tunnel whose carrying device its active
/// connection does not name — the other active connections and their devices.
/// `matches` are the signals a watcher subscribes to, so that a change is read again.
enum NetworkManagerClient {
    static let service = "org.freedesktop.NetworkManager"
    static let root = "/org/freedesktop/NetworkManager"
    static let managerInterface = "org.freedesktop.NetworkManager"
    static let activeInterface = "org.freedesktop.NetworkManager.Connection.Active"
    static let deviceInterface = "org.freedesktop.NetworkManager.Device"
    /// At most this many active connections or devices are read in one round.
    static let objectLimit = 64

    /// The bus driver's call that tells whether NetworkManager runs at all.
    static let nameOwner = BusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                   interface: "org.freedesktop.DBus", member: "GetNameOwner", arguments: [service])

    /// The match rules (`AddMatch`) for the changes the reading depends on: NetworkManager's
    /// properties on the manager, active connections and devices (not access points'
    /// signal strength, nor statistics), and NetworkManager starting or stopping.
    static let matches: [String] = [managerInterface, activeInterface, deviceInterface].map {
        "type='signal',sender='\(service)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='\($0)'"
    } + ["type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(service)'"]

    static func addMatch(_ rule: String) -> BusCall {
        BusCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "AddMatch", arguments: [rule])
    }

    /// Whether a signal is one `matches` asked for (a change to read).
    static func isChange(_ message: BusMessage) -> Bool {
        guard message.kind == .signal else { return false }
        if message.interface == "org.freedesktop.DBus.Properties", message.member == "PropertiesChanged",
           message.path?.hasPrefix(root) == true {
            return true
        }
        return message.interface == "org.freedesktop.DBus" && message.member == "NameOwnerChanged"
    }

    private static func getAll(_ path: String, _ interface: String) -> BusCall {
        BusCall(destination: service, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                arguments: [interface], autoStart: false)
    }

    /// The state by `deadline`; throws the reason it cannot be had. `signal` sees the
    /// signals that arrive meanwhile (a change while reading is read again).
    static func read(_ connection: BusConnection, until deadline: UInt64,
                     signal: (BusMessage) -> Void = { _ in }) throws(BusFailure) -> NetworkManagerState {
        // Round 1: does NetworkManager run (the bus answers that), and its manager object.
        var owner: Result<Void, BusFailure>?
        var manager: [String: BusValue]?
        var managerError: BusFailure?
        let answered = try connection.callAll([nameOwner, getAll(root, managerInterface)], until: deadline, reply: { (index, message) throws(BusFailure) in
            if index == 0 {
                if let error = message.error {
                    owner = .failure(error.name.hasSuffix("NameHasNoOwner") ? BusFailure("NetworkManager not running", serviceOnly: true)
                                                                            : BusFailure("the system bus: \(error.name): \(error.message)"))
                } else {
                    owner = .success(())
                }
            } else if let error = message.error {
                managerError = error.name.hasSuffix("ServiceUnknown") || error.name.hasSuffix("NameHasNoOwner")
                    ? BusFailure("NetworkManager not running", serviceOnly: true) : BusFailure("NetworkManager: \(error.name): \(error.message)", serviceOnly: true)
            } else {
                manager = try message.readProperties()
            }
        }, signal: signal)
        if case .failure(let failure) = owner { throw failure }
        if let managerError { throw managerError }
        guard answered, let manager else {
            throw owner == nil ? BusFailure("the system bus did not answer within 2 s", timedOut: true)
                               : BusFailure("NetworkManager did not answer within 2 s", timedOut: true, serviceOnly: true)
        }
        var state = NetworkManagerState(startup: manager["Startup"]?.bool ?? false, metered: manager["Metered"]?.uint32 ?? 0)
        let primaryPath = manager["PrimaryConnection"]?.string ?? "/"
        guard !state.startup, primaryPath != "/" else { return state }

        // Rounds 2–3: the primary connection and its devices.
        guard let primary = try connections([primaryPath], connection, deadline, signal).first else { return state }
        state.primary = primary
        guard MeteredRule.isTunnel(primary), !(primary.vpn && !MeteredRule.carryingDevices(state).isEmpty) else { return state }

        // Rounds 4–5: the other active connections, for the device that carries the tunnel.
        let others = (manager["ActiveConnections"]?.objectPaths ?? []).filter { $0 != primaryPath }
        state.others = try connections(Array(others.prefix(objectLimit)), connection, deadline, signal)
        return state
    }

    /// The active connections at `paths` with their devices (two rounds); one that vanished
    /// meanwhile is left out.
    private static func connections(_ paths: [String], _ connection: BusConnection, _ deadline: UInt64,
                                    _ signal: (BusMessage) -> Void) throws(BusFailure) -> [NetworkManagerState.Connection] {
        let active = try objects(paths, activeInterface, connection, deadline, signal)
        var devicePaths: [String] = []
        for properties in active.compactMap({ $0 }) {
            for path in properties["Devices"]?.objectPaths ?? [] where !devicePaths.contains(path) { devicePaths.append(path) }
        }
        let devices = try objects(Array(devicePaths.prefix(objectLimit)), deviceInterface, connection, deadline, signal)
        var byPath: [String: NetworkManagerState.Device] = [:]
        for (path, properties) in zip(devicePaths, devices) {
            guard let properties else { continue }
            byPath[path] = NetworkManagerState.Device(
                interface: properties["Interface"]?.string ?? path,
                type: properties["DeviceType"]?.uint32 ?? 0,
                metered: properties["Metered"]?.uint32 ?? 0,
                connectivity: max(properties["Ip4Connectivity"]?.uint32 ?? 0, properties["Ip6Connectivity"]?.uint32 ?? 0))
        }
        return active.compactMap { properties in
            guard let properties else { return nil }
            return NetworkManagerState.Connection(
                type: properties["Type"]?.string ?? "",
                vpn: properties["Vpn"]?.bool ?? false,
                state: properties["State"]?.uint32 ?? 0,
                ownsDefaultRoute: properties["Default"]?.bool == true || properties["Default6"]?.bool == true,
                devices: (properties["Devices"]?.objectPaths ?? []).compactMap { byPath[$0] })
        }
    }

    /// `GetAll` of `interface` on each path, in one round: nil for an object that is gone.
    private static func objects(_ paths: [String], _ interface: String, _ connection: BusConnection, _ deadline: UInt64,
                                _ signal: (BusMessage) -> Void) throws(BusFailure) -> [[String: BusValue]?] {
        var found = [[String: BusValue]?](repeating: nil, count: paths.count)
        var failure: BusFailure?
        let answered = try connection.callAll(paths.map { getAll($0, interface) }, until: deadline, reply: { (index, message) throws(BusFailure) in
            if let error = message.error {
                // An object removed between two rounds (a connection that just went down).
                if !error.name.hasSuffix("UnknownObject") && !error.name.hasSuffix("UnknownMethod") && !error.name.hasSuffix("UnknownInterface") {
                    failure = BusFailure("NetworkManager: \(error.name): \(error.message)", serviceOnly: true)
                }
            } else {
                found[index] = try message.readProperties()
            }
        }, signal: signal)
        if let failure { throw failure }
        guard answered else { throw BusFailure("NetworkManager did not answer within 2 s", timedOut: true, serviceOnly: true) }
        return found
    }
}
