/// Who holds a feed name that a feed source's manifest also names (SPEC §8, "Names"): a
/// local feed (local feeds win) or an earlier source in the config's order.
enum NameHolder: Equatable {
    /// A local feed, by its manifest's path as opened.
    case localFeed(path: String)
    /// The feed of an earlier source, by its label.
    case source(label: String)

    /// Why the source's feed does not run, as `status`, `status --json`'s `error` and the
    /// run's error line all say it: `name taken: 'NAME' is the local feed PATH`, or
    /// `name taken: 'NAME' is the feed of source LABEL`.
    func reason(_ name: String) -> String {
        switch self {
        case .localFeed(let path): "name taken: '\(name)' is the local feed \(path)"
        case .source(let label): "name taken: '\(name)' is the feed of source \(label)"
        }
    }
}
