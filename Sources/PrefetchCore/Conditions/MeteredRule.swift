/// Whether the link is metered, from what NetworkManager says (SPEC §7), as one pure
/// function of `NetworkManagerState`:
///
/// 1. While NetworkManager reports `Startup` true, its `Metered` is not yet worth anything
///    (it reads 0 or a guess about a link still coming up): *unknown*.
/// 2. A primary connection that is not a VPN: NetworkManager's own `Metered` — `yes` (1)
///    and `guessed yes` (3) are metered, `no` (2) and `guessed no` (4) are not, anything
///    else (0 unknown) is *unknown*. No primary connection (`/`): the same `Metered`.
/// 3. A primary connection that is a VPN — its `Vpn` flag, its `Type` `vpn`, `wireguard`
///    or `tun`, or a device of type tun (16) or wireguard (29) — goes over another device,
///    and that *carrying device*'s `Metered` counts (NetworkManager's `Metered` is the
///    tunnel's own, typically `guessed no`):
///    - for a VPN plugin connection, its active connection's `Devices` (the device the VPN
///      runs over), the tunnel devices left out;
///    - else (WireGuard, tun: device connections of their own), the devices of the other
///      activated connections that are not tunnels: those that own a default route
///      (`Default`/`Default6`) if any do, else those with `limited` or `full`
///      connectivity if any have it, else all of them.
///    Metered when any carrying device is metered, or NetworkManager's own `Metered` says
///    so; not metered when every carrying device says `no` or `guessed no`; *unknown* when
///    one cannot say. With no carrying device found, NetworkManager's own `Metered`.
public enum MeteredRule {
    public static func reading(_ state: NetworkManagerState) -> Probed<Bool> {
        if state.startup { return .unknown(reason: "NetworkManager is starting up (Startup is true)") }
        let own = verdict(state.metered)
        func ownReading(_ note: String = "") -> Probed<Bool> {
            guard let own else { return .unknown(reason: "NetworkManager (Metered unknown\(note))") }
            return .known(own, source: "NetworkManager (\(word(state.metered))\(note))")
        }
        guard let primary = state.primary, isTunnel(primary) else { return ownReading() }
        let label = "VPN (\(primary.type))"
        let carriers = carryingDevices(state)
        guard !carriers.isEmpty else { return ownReading("; \(label) over no device NetworkManager names") }
        let names = carriers.map(\.interface).joined(separator: ", ")
        if let metered = carriers.first(where: { verdict($0.metered) == true }) {
            return .known(true, source: "NetworkManager: \(label) over \(metered.interface) (\(word(metered.metered)))")
        }
        if own == true { return ownReading() }
        if carriers.allSatisfy({ verdict($0.metered) == false }) {
            let words = Set(carriers.map { word($0.metered) }).sorted().joined(separator: ", ")
            return .known(false, source: "NetworkManager: \(label) over \(names) (\(words))")
        }
        return .unknown(reason: "NetworkManager: \(label) over \(names) (Metered unknown)")
    }

    /// NMMetered as metered (true), not (false), or unknown (nil).
    public static func verdict(_ metered: UInt32) -> Bool? {
        switch metered {
        case 1, 3: true
        case 2, 4: false
        default: nil
        }
    }

    /// NMMetered in NetworkManager's words.
    public static func word(_ metered: UInt32) -> String {
        switch metered {
        case 1: "yes"
        case 2: "no"
        case 3: "guessed yes"
        case 4: "guessed no"
        default: "unknown"
        }
    }

    /// A VPN: by its flag, its type, or a tunnel device.
    public static func isTunnel(_ connection: NetworkManagerState.Connection) -> Bool {
        connection.vpn || ["vpn", "wireguard", "tun"].contains(connection.type) || connection.devices.contains(where: isTunnel)
    }

    public static func isTunnel(_ device: NetworkManagerState.Device) -> Bool {
        device.type == NetworkManagerState.Device.tun || device.type == NetworkManagerState.Device.wireguard
    }

    /// The devices that carry the primary connection's tunnel (see the rule above).
    public static func carryingDevices(_ state: NetworkManagerState) -> [NetworkManagerState.Device] {
        guard let primary = state.primary else { return [] }
        func usable(_ device: NetworkManagerState.Device) -> Bool {
            !isTunnel(device) && device.type != NetworkManagerState.Device.loopback
        }
        let own = primary.devices.filter(usable)
        if primary.vpn, !own.isEmpty { return own }
        let candidates = state.others.filter { $0.state == NetworkManagerState.Connection.activated && !isTunnel($0) }
        let routed = candidates.filter(\.ownsDefaultRoute)
        let chosen: [NetworkManagerState.Connection]
        if !routed.isEmpty {
            chosen = routed
        } else {
            let connected = candidates.filter { $0.devices.contains { $0.connectivity >= 3 } }
            chosen = connected.isEmpty ? candidates : connected
        }
        var seen = Set<String>()
        return chosen.flatMap(\.devices).filter(usable).filter { seen.insert($0.interface).inserted }
    }
}
