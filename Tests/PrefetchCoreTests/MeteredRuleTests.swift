import Testing
@testable import PrefetchCore

/// SPEC §7's metered rule (`MeteredRule`) over every combination of what NetworkManager
/// can say — `Startup`, its own `Metered` (0–4, and a value it does not define), the kind
/// of primary connection, the carrying device's `Metered`, how the carrying connection is
/// told apart (default route, connectivity) and a metered decoy beside it — against a
/// reference written the other way round (from the expected carrier out), plus the
/// issue's cases by name.
@Suite struct MeteredRuleTests {
    typealias State = NetworkManagerState
    typealias Connection = NetworkManagerState.Connection
    typealias Device = NetworkManagerState.Device

    enum Primary: CaseIterable {
        case none, ethernet, vpnPlugin, vpnPluginWithoutDevice, wireguard, tun, genericOverTunDevice
    }

    /// How the connection that carries the tunnel (wlan0) stands beside a standby metered
    /// one (wwan0) and a deactivated metered one (ppp0).
    enum Arrangement: CaseIterable {
        /// wlan0's connection owns the default route; wwan0 is up without one.
        case carrierOwnsDefaultRoute
        /// No default route owned; wlan0 has full connectivity, wwan0 none.
        case carrierHasConnectivity
        /// Neither tells them apart: both count.
        case nothingTellsThemApart
    }

    static func state(startup: Bool, global: UInt32, primary: Primary, carrier: UInt32, arrangement: Arrangement) -> State {
        let wlan = Device(interface: "wlan0", type: 2, metered: carrier,
                          connectivity: arrangement == .nothingTellsThemApart ? 0 : 4)
        let wwan = Device(interface: "wwan0", type: 8, metered: 1, connectivity: arrangement == .nothingTellsThemApart ? 0 : 1)
        let ppp = Device(interface: "ppp0", type: 23, metered: 1, connectivity: 4)
        let others = [
            Connection(type: "802-11-wireless", ownsDefaultRoute: arrangement == .carrierOwnsDefaultRoute, devices: [wlan]),
            Connection(type: "gsm", devices: [wwan]),
            Connection(type: "pppoe", state: 4, ownsDefaultRoute: true, devices: [ppp]),  // deactivated
        ]
        let primaryConnection: Connection?
        switch primary {
        case .none: primaryConnection = nil
        case .ethernet: primaryConnection = Connection(type: "802-3-ethernet", ownsDefaultRoute: true, devices: [Device(interface: "eth0", type: 1, metered: global)])
        case .vpnPlugin: primaryConnection = Connection(type: "vpn", vpn: true, ownsDefaultRoute: true, devices: [wlan])
        case .vpnPluginWithoutDevice: primaryConnection = Connection(type: "vpn", vpn: true, ownsDefaultRoute: true)
        case .wireguard: primaryConnection = Connection(type: "wireguard", ownsDefaultRoute: true, devices: [Device(interface: "wg0", type: 29, metered: 4)])
        case .tun: primaryConnection = Connection(type: "tun", ownsDefaultRoute: true, devices: [Device(interface: "tun0", type: 16, metered: 4)])
        case .genericOverTunDevice: primaryConnection = Connection(type: "generic", ownsDefaultRoute: true, devices: [Device(interface: "tun0", type: 16, metered: 0)])
        }
        let withOthers = primary != .none && primary != .ethernet && primary != .vpnPlugin
        return State(startup: startup, metered: global, primary: primaryConnection, others: withOthers ? others : [])
    }

    /// The reference: first which devices carry the tunnel, then the verdict.
    static func reference(startup: Bool, global: UInt32, primary: Primary, carrier: UInt32, arrangement: Arrangement) -> Bool? {
        if startup { return nil }
        let own: Bool? = [1, 3].contains(global) ? true : [2, 4].contains(global) ? false : nil
        let carriers: [UInt32]  // the Metered of each carrying device
        switch primary {
        case .none, .ethernet: return own
        case .vpnPlugin: carriers = [carrier]
        case .vpnPluginWithoutDevice, .wireguard, .tun, .genericOverTunDevice:
            // ppp0 is deactivated: never. wwan0 only when nothing tells wlan0 apart.
            carriers = arrangement == .nothingTellsThemApart ? [carrier, 1] : [carrier]
        }
        if carriers.contains(where: { $0 == 1 || $0 == 3 }) || own == true { return true }
        if carriers.allSatisfy({ $0 == 2 || $0 == 4 }) { return false }
        return nil
    }

    @Test func everyCombinationAgreesWithTheReference() {
        var count = 0
        for startup in [false, true] {
            for global: UInt32 in 0...5 {
                for primary in Primary.allCases {
                    for carrier: UInt32 in 0...5 {
                        for arrangement in Arrangement.allCases {
                            let state = Self.state(startup: startup, global: global, primary: primary, carrier: carrier, arrangement: arrangement)
                            let reading = MeteredRule.reading(state)
                            let expected = Self.reference(startup: startup, global: global, primary: primary, carrier: carrier, arrangement: arrangement)
                            #expect(reading.value == expected,
                                    "startup \(startup) Metered \(global) primary \(primary) carrier \(carrier) \(arrangement): \(reading)")
                            // Unknown always says why; known always says from what.
                            switch reading {
                            case .known(_, let source): #expect(source.hasPrefix("NetworkManager"))
                            case .unknown(let reason): #expect(reason.hasPrefix("NetworkManager"))
                            }
                            count += 1
                        }
                    }
                }
            }
        }
        #expect(count == 2 * 6 * Primary.allCases.count * 6 * Arrangement.allCases.count)
    }

    static let wifi = Device(interface: "wlan0", type: 2, metered: 3, connectivity: 4)

    @Test(arguments: [
        // NetworkManager's own word, for a primary connection that is not a VPN.
        (State(metered: 1, primary: Connection(type: "802-3-ethernet")), .known(true, source: "NetworkManager (yes)")),
        (State(metered: 3, primary: Connection(type: "802-11-wireless")), .known(true, source: "NetworkManager (guessed yes)")),
        (State(metered: 2, primary: Connection(type: "802-3-ethernet")), .known(false, source: "NetworkManager (no)")),
        (State(metered: 4, primary: Connection(type: "802-3-ethernet")), .known(false, source: "NetworkManager (guessed no)")),
        (State(metered: 0, primary: Connection(type: "802-3-ethernet")), .unknown(reason: "NetworkManager (Metered unknown)")),
        (State(metered: 0), .unknown(reason: "NetworkManager (Metered unknown)")),  // no primary connection
        // Starting up: Metered reads 0 (or a guess) and is not believed.
        (State(startup: true, metered: 0), .unknown(reason: "NetworkManager is starting up (Startup is true)")),
        (State(startup: true, metered: 2, primary: Connection(type: "802-3-ethernet")),
         .unknown(reason: "NetworkManager is starting up (Startup is true)")),
        // A VPN plugin connection over a metered Wi-Fi: NetworkManager's own Metered is the VPN's.
        (State(metered: 4, primary: Connection(type: "vpn", vpn: true, devices: [wifi])),
         .known(true, source: "NetworkManager: VPN (vpn) over wlan0 (guessed yes)")),
        // WireGuard and tun are connections of their own: the carrier is the connection
        // that owns the default route.
        (State(metered: 4, primary: Connection(type: "wireguard", devices: [Device(interface: "wg0", type: 29, metered: 4)]),
               others: [Connection(type: "802-11-wireless", ownsDefaultRoute: true, devices: [wifi])]),
         .known(true, source: "NetworkManager: VPN (wireguard) over wlan0 (guessed yes)")),
        (State(metered: 4, primary: Connection(type: "tun", devices: [Device(interface: "tun0", type: 16, metered: 4)]),
               others: [Connection(type: "802-3-ethernet", ownsDefaultRoute: true, devices: [Device(interface: "eth0", type: 1, metered: 2)])]),
         .known(false, source: "NetworkManager: VPN (tun) over eth0 (no)")),
        // A tunnel whose carrier NetworkManager does not manage: its own word.
        (State(metered: 4, primary: Connection(type: "tun", devices: [Device(interface: "tun0", type: 16, metered: 4)])),
         .known(false, source: "NetworkManager (guessed no; VPN (tun) over no device NetworkManager names)")),
        // The carrier cannot say.
        (State(metered: 4, primary: Connection(type: "wireguard", devices: [Device(interface: "wg0", type: 29, metered: 4)]),
               others: [Connection(type: "802-3-ethernet", devices: [Device(interface: "eth0", type: 1, metered: 0)])]),
         .unknown(reason: "NetworkManager: VPN (wireguard) over eth0 (Metered unknown)")),
        // The user marked the VPN itself metered.
        (State(metered: 1, primary: Connection(type: "wireguard", devices: [Device(interface: "wg0", type: 29, metered: 1)]),
               others: [Connection(type: "802-3-ethernet", ownsDefaultRoute: true, devices: [Device(interface: "eth0", type: 1, metered: 2)])]),
         .known(true, source: "NetworkManager (yes)")),
    ] as [(State, Probed<Bool>)])
    func theIssuesCases(_ state: State, _ expected: Probed<Bool>) {
        #expect(MeteredRule.reading(state) == expected)
    }
}
