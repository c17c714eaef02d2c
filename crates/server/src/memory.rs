//! Keeps glibc's allocator from holding on to memory the process has freed.
//!
//! Ingestion bursts (decoding a request, sealing rows, merging parts) allocate
//! and free hundreds of MB. glibc keeps freed memory in per-thread arenas and
//! returns it to the OS only from the top of each heap, so after a burst the
//! resident set stays near its peak: measured with the ingest benchmark (20k
//! series, 3 h backfill), 33.5 MB of anonymous memory fell to 25.5 MB after one
//! `malloc_trim(0)`. So Cairn limits the arenas (fewer heaps to fragment), maps
//! large blocks on their own, and trims periodically. A no-op with other allocators and C libraries.

use std::time::Duration;

/// How often freed memory is handed back. A trim of a quiet heap costs
/// microseconds; idle CPU stays near zero.
const TRIM_INTERVAL: Duration = Duration::from_secs(10);

/// Allocations from this size on are mapped and unmapped on their own.
///
/// glibc raises its threshold (default 128 KiB) up to 32 MiB as large blocks
/// are freed, after which the multi-MB buffers of seals, merges and flushes
/// come from the arenas and leave them fragmented when freed. Fixed at 4 MiB:
/// after a 1,000-target x 2 h backfill, steady RSS 213-282 -> 191 B/series and
/// peak RSS 1.56-1.64 -> 1.42 GB; 100 targets x 6 h peak RSS ~350 -> ~280 MB,
/// ingest rate within the run-to-run noise (4.1-4.7 vs 4.1-4.4 M samples/s).
const MMAP_THRESHOLD_BYTES: i32 = 4 << 20;

/// Free memory at the top of a heap that `free` keeps instead of handing back.
///
/// Fixing the mmap threshold also freezes glibc's trim threshold at 128 KiB,
/// so every query's multi-MB scratch (step columns, output rows, the JSON
/// body) went back to the OS on free and was page-faulted in again by the next
/// query: 16 % of the CPU of a 24 h range query over 100 series. The periodic
/// trim still returns whatever is held within [`TRIM_INTERVAL`]. 8 MiB, in
/// A/B runs against 128 KiB: that query (`(1 - MemAvailable / MemTotal) * 100`,
/// 50 hosts) 11.7-12.3 -> 9.2-9.7 ms median, 13.2 -> 10.2-11.8 ms CPU; the 24 h
/// `sum by (mode) (rate(...))` panel unchanged within the noise; 64 MiB gained
/// nothing more. Footprint run (`--footprint --footprint-minutes 2`) steady
/// RSS 13.5-15.3 MB against 13.8-15.1 MB at 128 KiB: within its noise.
const TRIM_THRESHOLD_BYTES: i32 = 8 << 20;

/// Limits malloc arenas to two (one per core of a small machine) instead of
/// glibc's eight per core, and fixes the mmap and trim thresholds
/// ([`MMAP_THRESHOLD_BYTES`], [`TRIM_THRESHOLD_BYTES`]). Call early, before
/// threads allocate.
pub fn tune_allocator() {
    glibc::tune(2, MMAP_THRESHOLD_BYTES, TRIM_THRESHOLD_BYTES);
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
