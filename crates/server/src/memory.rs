//! Keeps glibc's allocator from holding on to memory the process has freed.
//!
//! Ingestion bursts (decoding a request, sealing rows, merging parts) allocate
//! and free hundreds of MB. glibc keeps freed memory in per-thread arenas and
//! returns it to the OS only from the top of each heap, so after a burst the
//! resident set stays near its peak. So Cairn caps the arenas (fewer heaps to
//! fragment), maps large blocks on their own, and trims periodically. The
//! measurements behind each setting are in docs/benchmarks.md ("Allocator
//! settings"). A no-op with other allocators and C libraries.
//!
//! It also hands back the executable's pages that start-up alone touched
//! ([`release_startup_code`]).

use std::time::Duration;

/// How often freed memory is handed back. A trim of a quiet heap costs
/// microseconds; idle CPU stays near zero.
const TRIM_INTERVAL: Duration = Duration::from_secs(10);

/// Allocations from this size on are mapped and unmapped on their own.
///
/// glibc raises its threshold (default 128 KiB) up to 32 MiB as large blocks
/// are freed, after which the multi-MB buffers of seals, merges and flushes
/// come from the arenas and leave them fragmented when freed.
const MMAP_THRESHOLD_BYTES: i32 = 4 << 20;

/// Free memory at the top of a heap that `free` keeps instead of handing back.
///
/// Fixing the mmap threshold also freezes glibc's trim threshold at 128 KiB,
/// so every query's multi-MB scratch (step columns, output rows, the JSON
/// body) would go back to the OS on free and be page-faulted in again by the
/// next query. The periodic trim still returns whatever is held within
/// [`TRIM_INTERVAL`].
const TRIM_THRESHOLD_BYTES: i32 = 8 << 20;

/// Malloc arenas for a process that may run on `cores` cores: one per core.
///
/// glibc's default is eight per core, each a heap that fragments on its own;
/// fewer than one per core would make threads on different cores (ingest
/// handlers, query workers, the maintenance thread) wait for each other's
/// arena locks.
pub fn arenas_for(cores: usize) -> i32 {
    i32::try_from(cores.max(1)).unwrap_or(i32::MAX)
}

/// Caps malloc arenas at one per core this process may use (its CPU
/// affinity and cgroup quota count, see [`arenas_for`]) and fixes the mmap
/// and trim thresholds ([`MMAP_THRESHOLD_BYTES`], [`TRIM_THRESHOLD_BYTES`]).
/// Call early, before threads allocate.
pub fn tune_allocator() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    glibc::tune(arenas_for(cores), MMAP_THRESHOLD_BYTES, TRIM_THRESHOLD_BYTES);
}

/// Trims the heap every [`TRIM_INTERVAL`] on the current tokio runtime.
pub fn spawn_trimmer() {
    tokio::spawn(async {
        let mut tick = tokio::time::interval(TRIM_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // Walking the arenas takes their locks: keep it off the async workers.
            let _ = tokio::task::spawn_blocking(glibc::trim).await;
        }
    });
}

/// Hands back the pages of this executable's code and read-only data that
/// are resident; call once start-up is done.
///
/// The kernel maps a file's pages in blocks around each one touched, so
/// start-up (flag parsing, configuration, opening storage, building the
/// routes) leaves megabytes of the binary resident that never run again,
/// counted in the resident set and in a container's working set. Code still
/// in use comes back with its next run. The bytes advised; an error where
/// the kernel does not support it.
pub fn release_startup_code() -> std::io::Result<usize> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut released = 0;
    for (range, perms, path) in maps.lines().filter_map(mapping) {
        // Written pages are the process' own copies, not the file's.
        if path != exe.as_os_str() || perms.contains('w') {
            continue;
        }
        pageout::advise(range.clone())?;
        released += range.len();
    }
    Ok(released)
}

/// A line of `/proc/self/maps` naming a file: its address range,
/// permissions and path (the rest of the line from its first `/`).
fn mapping(line: &str) -> Option<(std::ops::Range<usize>, &str, &std::ffi::OsStr)> {
    let (head, path) = line.split_at(line.find('/')?);
    let mut fields = head.split_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let range = usize::from_str_radix(start, 16).ok()?..usize::from_str_radix(end, 16).ok()?;
    Some((range, fields.next()?, std::ffi::OsStr::new(path)))
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod pageout {
    pub fn advise(range: std::ops::Range<usize>) -> std::io::Result<()> {
        // SAFETY: MADV_PAGEOUT changes no contents: the range is a read-only
        // file mapping of this process, whose pages are read back from the
        // file when next touched.
        let rc = unsafe { libc::madvise(range.start as *mut libc::c_void, range.len(), libc::MADV_PAGEOUT) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod pageout {
    pub fn advise(_: std::ops::Range<usize>) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
mod glibc {
    use std::ffi::c_int;

    /// `M_ARENA_MAX`, `M_MMAP_THRESHOLD` and `M_TRIM_THRESHOLD` from glibc's `malloc.h`.
    const M_ARENA_MAX: c_int = -8;
    const M_MMAP_THRESHOLD: c_int = -3;
    const M_TRIM_THRESHOLD: c_int = -1;

    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> c_int;
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }

    pub fn tune(arenas: c_int, mmap_threshold: c_int, trim_threshold: c_int) {
        // SAFETY: mallopt only adjusts allocator tunables; all are valid parameters.
        unsafe {
            mallopt(M_ARENA_MAX, arenas);
            mallopt(M_MMAP_THRESHOLD, mmap_threshold);
            mallopt(M_TRIM_THRESHOLD, trim_threshold);
        }
    }

    pub fn trim() {
        // SAFETY: malloc_trim takes the allocator's own locks and only releases free pages.
        unsafe {
            malloc_trim(0);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod glibc {
    pub fn tune(_: i32, _: i32, _: i32) {}
    pub fn trim() {}
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    const PAGE: usize = 4096;

    /// Read-only data of this executable that nothing but the test below
    /// reads: what other tests run meanwhile cannot bring it back.
    static UNUSED: [u8; 256 * PAGE] = [1; 256 * PAGE];

    /// How many pages of `bytes` are present in this process' page table.
    fn resident_pages(bytes: &[u8]) -> usize {
        use std::os::unix::fs::FileExt;
        const PRESENT: u64 = 1 << 63;
        let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        let first = bytes.as_ptr() as usize / PAGE;
        let last = (bytes.as_ptr() as usize + bytes.len() - 1) / PAGE;
        let mut entries = vec![0u8; (last - first + 1) * 8];
        pagemap.read_exact_at(&mut entries, (first * 8) as u64).unwrap();
        entries
            .chunks_exact(8)
            .filter(|e| u64::from_ne_bytes((*e).try_into().unwrap()) & PRESENT != 0)
            .count()
    }

    #[test]
    fn maps_lines_give_range_permissions_and_path() {
        let line = "55a0746b4000-55a0746c4000 r-xp 00839000 fe:00 9977998    /opt/my tools/cairn";
        let (range, perms, path) = mapping(line).unwrap();
        assert_eq!(range, 0x55a0746b4000..0x55a0746c4000);
        assert_eq!(perms, "r-xp");
        assert_eq!(path, "/opt/my tools/cairn");
        assert!(mapping("7ffcd1210000-7ffcd1231000 rw-p 00000000 00:00 0    [stack]").is_none());
    }

    #[test]
    fn released_code_leaves_the_resident_set() {
        let unused: &[u8] = &UNUSED;
        for page in unused.chunks(PAGE) {
            std::hint::black_box(page[0]);
        }
        let pages = unused.len().div_ceil(PAGE);
        assert!(resident_pages(unused) >= pages);
        let advised = release_startup_code().unwrap();
        assert!(advised >= unused.len(), "advised {advised} bytes");
        // Reads of the pages next to it may map a few back.
        let kept = resident_pages(unused);
        assert!(kept * 4 < pages, "{kept} of {pages} pages stayed");
    }
}
