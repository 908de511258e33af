import Foundation

/// The width of the terminal a descriptor writes to, for output drawn across it
/// (`plan --timeline`).
enum TerminalSize {
    /// The terminal's columns (`TIOCGWINSZ`), or nil when `fd` is not a terminal or the
    /// kernel reports no size (a serial console says 0).
    static func columns(of fd: Int32) -> Int? {
        guard isatty(fd) == 1 else { return nil }
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}
