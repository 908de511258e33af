internal import CShims

/// glibc malloc settings for a process that moves many files in a row.
///
/// libcurl allocates a receive buffer for each transfer (512 KiB here, `CURLOPT_BUFFERSIZE`)
/// and frees it when the transfer ends. With glibc's defaults the mmap threshold moves and
/// the top of the heap is trimmed and grown again, so a run of many small files takes page
/// faults over and over for the same buffers (each new page zeroed by the kernel): a
/// noticeable share of its CPU time. A fixed mmap threshold and a trim threshold above what
/// a run reuses keep those pages in the process instead. Peak memory is unchanged: pages are kept,
/// not added; at most `trimThreshold` of freed heap stays resident between runs of `daemon`.
public enum MemoryTuning {
    /// Allocations above this go to their own mapping (rare here: nothing asks for more).
    static let mmapThreshold: Int32 = 4 << 20
    /// Freed memory at the top of the heap is returned to the system beyond this.
    static let trimThreshold: Int32 = 32 << 20

    /// Applies the settings; call once, first thing in `main`.
    public static func apply() {
        _ = CShims_malloc_thresholds(mmapThreshold, trimThreshold)
    }

    /// Gives the heap's free pages back (`malloc_trim`): the daemon, come to rest after a
    /// pass, keeps nothing of that pass's snapshot, listing and plan resident while it waits.
    static func releaseFreePages() {
        _ = CShims_malloc_trim()
    }
}
