//! Keeps glibc's allocator from holding on to memory the process has freed.
//!
//! Ingestion bursts (decoding a request, sealing rows, merging parts) allocate
//! and free hundreds of MB. glibc keeps freed memory in per-thread arenas and
//! returns it to the OS only from the top of each heap, so after a burst the
//! resident set stays near its peak: measured with the ingest benchmark (20k
//! series, 3 h backfill), 33.5 MB of anonymous memory fell to 25.5 MB after one
//! `malloc_trim(0)`. So Cairn limits the arenas (fewer heaps to fragment) and
//! trims periodically. A no-op with other allocators and C libraries.

use std::time::Duration;

/// How often freed memory is handed back. A trim of a quiet heap costs
/// microseconds; idle CPU stays near zero.
const TRIM_INTERVAL: Duration = Duration::from_secs(10);

/// Limits malloc arenas to two (one per core of a small machine) instead of
/// glibc's eight per core. Call early, before threads allocate.
pub fn limit_arenas() {
    glibc::limit_arenas(2);
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

    /// `M_ARENA_MAX` from glibc's `malloc.h`.
    const M_ARENA_MAX: c_int = -8;

    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> c_int;
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }

    pub fn limit_arenas(n: c_int) {
        // SAFETY: mallopt only adjusts allocator tunables; M_ARENA_MAX is a valid parameter.
        unsafe {
            mallopt(M_ARENA_MAX, n);
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
    pub fn limit_arenas(_: i32) {}
    pub fn trim() {}
}
