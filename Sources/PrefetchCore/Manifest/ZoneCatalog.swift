import Foundation

/// IANA time zones by name, checked against the system's tz database.
public enum ZoneCatalog {
    private static let known = Set(TimeZone.knownTimeZoneIdentifiers)

    /// The zone named `name`, or an error with a "did you mean" for a near miss.
    public static func zone(named name: String) throws(ValueError) -> TimeZone {
        let plausible = !name.isEmpty && !name.hasPrefix("/") && !name.split(separator: "/").contains("..")
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/_+-".contains($0)) }
        if plausible, known.contains(name) || FileSystem.kind(of: "/usr/share/zoneinfo/" + name) == .regular,
           !["localtime", "posixrules", "Factory"].contains(name), !name.hasPrefix("posix/"), !name.hasPrefix("right/"),
           let zone = TimeZone(identifier: name) {
            return zone
        }
        var message = "unknown time zone '\(name)'; use an IANA name such as Europe/Berlin"
        if let guess = known.first(where: { $0.lowercased() == name.lowercased() })
            ?? Suggestion.closest(to: name, among: known.sorted()) {
            message = "unknown time zone '\(name)' (did you mean '\(guess)'?)"
        }
        throw ValueError(message)
    }

    /// The system's zone and its name (from `TZ` or `/etc/localtime`).
    public static var system: (zone: TimeZone, name: String) {
        let zone = TimeZone.current
        return (zone, zone.identifier)
    }
}
