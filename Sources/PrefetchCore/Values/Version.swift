/// prefetch's version: what `--version` prints and the User-Agent carries.
public enum ProgramVersion {
    public static let text = "0.1.0"
}
