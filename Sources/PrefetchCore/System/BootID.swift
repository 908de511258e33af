/// The kernel's boot id (`/proc/sys/kernel/random/boot_id`): which boot of the machine a
/// partial was written in. Within one boot, bytes the kernel accepted survive a process
/// that died; across a reboot only what was fsynced does (SPEC §5).
public enum BootID {
    /// `PREFETCH_BOOT_ID` when set (tests rehearse a reboot with it), else the kernel's;
    /// "unknown" when neither can be read (every partial is then trusted only to its
    /// fsynced offset, as after a reboot).
    public static func current(environment: [String: String], file: String = "/proc/sys/kernel/random/boot_id") -> String {
        if let given = environment["PREFETCH_BOOT_ID"]?.trimmingSpaces(), !given.isEmpty { return given }
        guard case .success(let bytes) = FileSystem.readFile(file) else { return unknown }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: " \t\r\n")
        return text.isEmpty ? unknown : text
    }

    /// Never equal to a recorded boot id: nothing unsynced is trusted.
    public static let unknown = "unknown"
}
