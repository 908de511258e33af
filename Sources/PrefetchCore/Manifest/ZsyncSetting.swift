/// A resource's `zsync` key (SPEC §9 "Deltas"): where its control file is, if it has one.
public enum ZsyncSetting: Sendable, Equatable {
    /// No delta (the default).
    case none
    /// The control file is the URL with `.zsync` appended to its path, any query kept.
    case auto
    /// A control file of its own (at feed level an error: each file has its own).
    case url(ResourceURL)

    /// The control file's URL for a resource fetched from `url`; nil for `none`.
    func controlURL(for url: ResourceURL) -> ResourceURL? {
        switch self {
        case .none: return nil
        case .auto: return try? ResourceURL.parse(Self.appendingSuffix(to: url))
        case .url(let own): return own
        }
    }

    /// `url` with `.zsync` appended to its path, any query kept (`…/a.img?t=X` → `…/a.img.zsync?t=X`).
    static func appendingSuffix(to url: ResourceURL) -> String {
        let text = url.text
        var end = text.utf8.endIndex
        if let mark = text.utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) { end = mark }
        return String(decoding: text.utf8[..<end], as: UTF8.self) + ".zsync" + String(decoding: text.utf8[end...], as: UTF8.self)
    }

    /// How `plan --json` shows it: `"auto"`, the URL, or null.
    var jsonValue: String? {
        switch self {
        case .none: return nil
        case .auto: return "auto"
        case .url(let own): return own.redacted
        }
    }
}
