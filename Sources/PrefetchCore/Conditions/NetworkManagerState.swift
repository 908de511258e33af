/// What NetworkManager says over D-Bus about the link, in the terms `MeteredRule` decides
/// on (NetworkManager's D-Bus API: the `org.freedesktop.NetworkManager` object, the
/// `Connection.Active` objects and the `Device` objects). `NetworkManagerClient` reads it.
public struct NetworkManagerState: Sendable, Equatable {
    /// `Startup`: NetworkManager is still activating what it activates at boot.
    public var startup: Bool
    /// The manager's `Metered` (NMMetered: 0 unknown, 1 yes, 2 no, 3 guessed yes, 4 guessed
    /// no): "the metered property of the device associated with the primary connection".
    public var metered: UInt32
    /// The `PrimaryConnection`, nil when it is `/` (no connection).
    public var primary: Connection?
    /// The other `ActiveConnections` (read only when the primary is a VPN whose carrying
    /// device its own active connection does not name).
    public var others: [Connection]

    public init(startup: Bool = false, metered: UInt32, primary: Connection? = nil, others: [Connection] = []) {
        self.startup = startup
        self.metered = metered
        self.primary = primary
        self.others = others
    }

    /// An active connection (`org.freedesktop.NetworkManager.Connection.Active`).
    public struct Connection: Sendable, Equatable {
        /// `Type`: the connection type (`802-3-ethernet`, `802-11-wireless`, `vpn`, `wireguard`, `tun`, …).
        public var type: String
        /// `Vpn`: a VPN connection (NetworkManager's VPN plugins).
        public var vpn: Bool
        /// `State` (NMActiveConnectionState: 2 activated).
        public var state: UInt32
        /// `Default` or `Default6`: it owns the default IPv4 or IPv6 route.
        public var ownsDefaultRoute: Bool
        /// `Devices`: for a VPN, the device it runs over.
        public var devices: [Device]

        public init(type: String, vpn: Bool = false, state: UInt32 = Self.activated, ownsDefaultRoute: Bool = false, devices: [Device] = []) {
            self.type = type
            self.vpn = vpn
            self.state = state
            self.ownsDefaultRoute = ownsDefaultRoute
            self.devices = devices
        }

        public static let activated: UInt32 = 2
    }

    /// A network device (`org.freedesktop.NetworkManager.Device`).
    public struct Device: Sendable, Equatable {
        /// `Interface`, for the reading's source.
        public var interface: String
        /// `DeviceType` (NMDeviceType: 16 tun, 29 wireguard, 32 loopback, …).
        public var type: UInt32
        /// `Metered` (NMMetered).
        public var metered: UInt32
        /// The better of `Ip4Connectivity` and `Ip6Connectivity` (NMConnectivityState: 0
        /// unknown, 1 none, 2 portal, 3 limited, 4 full).
        public var connectivity: UInt32

        public init(interface: String, type: UInt32, metered: UInt32, connectivity: UInt32 = 0) {
            self.interface = interface
            self.type = type
            self.metered = metered
            self.connectivity = connectivity
        }

        public static let tun: UInt32 = 16
        public static let wireguard: UInt32 = 29
        public static let loopback: UInt32 = 32
    }
}
