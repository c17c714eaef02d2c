//! The engine's background threads.
//!
//! - `cairn-maintain` keeps memory bounded and the WAL short: WAL
//!   syncs, merges of in-memory parts, flushes.
//! - `cairn-merge` merges disk parts and drops partitions past retention,
//!   at a lower CPU priority: a merge is seconds of CPU that can wait,
//!   while a query or a write waiting behind it cannot. It takes only the
//!   partition's disk-merge lock, so flushes go on meanwhile, and it never
//!   queues for a lock that queries or commits take (see
//!   `Partition::edit_parts_when_free`): a queued thread that the scheduler
//!   runs last would hold them up.
//! - `cairn-upload`, with a bucket, uploads settled days (tier.rs), backing
//!   off while the bucket fails.
//! - A read-only instance runs only `cairn-refresh`, which lists the bucket
//!   for what the writing instance uploaded.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cairn_storage::{StorageError, WriteOperation};

use crate::config::WalSync;
use crate::engine::Inner;

/// How much lower than the rest of the process the merge thread runs (a
/// Linux nice increment). At 10 the scheduler gives it about a tenth of a
/// core that foreground threads also want, and all of an idle one.
const MERGE_NICE: i32 = 10;

/// Starts the threads the configuration calls for.
pub(crate) fn spawn(inner: &Arc<Inner>) -> io::Result<Vec<JoinHandle<()>>> {
    let thread = |name: &str| std::thread::Builder::new().name(name.into());
    let db = inner.clone();
    if inner.config.read_only {
        return Ok(vec![thread("cairn-refresh").spawn(move || db.refresh_loop())?]);
    }
    let mut threads = vec![thread("cairn-maintain").spawn(move || db.maintenance_loop())?];
    let db = inner.clone();
    threads.push(thread("cairn-merge").spawn(move || {
        lower_own_priority(MERGE_NICE);
        db.merge_loop();
    })?);
    if inner.remote.is_some() {
        let db = inner.clone();
        threads.push(thread("cairn-upload").spawn(move || db.upload_loop())?);
    }
    Ok(threads)
}

impl Inner {
    fn maintenance_loop(&self) {
        let tick = match self.config.wal_sync {
            WalSync::Interval(d) => d.min(self.config.maintenance_interval),
            WalSync::EveryCommit => self.config.maintenance_interval,
        }
        .max(Duration::from_millis(10));
        let mut last_flush = Instant::now();
        while self.wait(tick) {
            self.health.check_free_space(&self.config.path);
            self.run_counted("maintenance", || {
                self.sync_wal_on_interval()?;
                // Every wake, not only every maintenance interval: seals can
                // add parts faster than one merge per interval removes them.
                self.merge_memory_parts()?;
                let over_memory = self.memory_bytes() > self.config.flush_threshold_bytes();
                if over_memory || last_flush.elapsed() >= self.config.flush_interval {
                    self.flush()?;
                    last_flush = Instant::now();
                }
                Ok(())
            });
        }
    }

    fn merge_loop(&self) {
        let tick = self.config.maintenance_interval.max(Duration::from_millis(10));
        while self.wait(tick) {
            // Round after round while there is work: a backfill flushes parts
            // faster than a merge per tick would remove them, and this
            // thread's priority already keeps merges out of the way.
            let round = || {
                let merged = self
                    .merge_disk_parts()
                    .inspect_err(|_| self.health.count_error(WriteOperation::Merge))?;
                self.apply_retention()?;
                Ok(merged)
            };
            while self.run_counted("merge", round) == Some(true) && !*self.stop.lock() {}
        }
    }

    /// Uploads settled days every tick; while the bucket fails, waits longer
    /// after each failure (up to `upload_max_backoff`). Parts stay on disk
    /// meanwhile, and nothing else waits for this thread.
    fn upload_loop(&self) {
        let tick = self.config.maintenance_interval.max(Duration::from_millis(10));
        let mut pause = tick;
        while self.sleep(pause) {
            pause = match self.run_counted("upload", || self.upload_round()) {
                Some(()) => tick,
                None if pause == tick => self.config.upload_min_backoff,
                None => (pause * 2).min(self.config.upload_max_backoff),
            };
        }
    }

    /// A read-only instance's one thread: looks for what the writer uploaded.
    fn refresh_loop(&self) {
        while self.sleep(self.config.bucket_refresh_interval) {
            self.run_counted("bucket refresh", || self.refresh_from_bucket());
        }
    }

    /// Waits `pause` whatever nudges come; false once the engine is closing.
    fn sleep(&self, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        loop {
            let now = Instant::now();
            if now >= until {
                return !*self.stop.lock();
            }
            if !self.wait(until - now) {
                return false;
            }
        }
    }

    /// Waits up to `tick` or until nudged; false once the engine is closing.
    fn wait(&self, tick: Duration) -> bool {
        let mut stop = self.stop.lock();
        if !*stop {
            self.wake.wait_for(&mut stop, tick);
        }
        !*stop
    }

    /// Runs one round of background work, logs its failure (the next round
    /// retries) and counts its CPU time; its result, `None` if it failed.
    fn run_counted<T>(&self, what: &str, round: impl FnOnce() -> Result<T, StorageError>) -> Option<T> {
        let cpu = cpu_time::ThreadTime::now();
        let result = round();
        self.counters
            .maintenance_cpu_nanos
            .fetch_add(cpu.elapsed().as_nanos() as u64, Ordering::Relaxed);
        result
            .inspect_err(|e| tracing::error!(error = %e, "background {what} failed; will retry"))
            .ok()
    }
}

/// Raises the calling thread's nice value by `increment`. Linux keeps a nice
/// value per thread; elsewhere (where it is per process) this does nothing.
fn lower_own_priority(increment: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: nice(2) only changes a scheduling attribute of the calling
        // thread (glibc applies it to the thread, as the kernel keeps it);
        // errno is this thread's. -1 is also a valid new nice value, so
        // errno tells a failure.
        #[allow(unsafe_code)]
        let failed = unsafe {
            *libc::__errno_location() = 0;
            libc::nice(increment) == -1 && *libc::__errno_location() != 0
        };
        if failed {
            tracing::warn!(error = %io::Error::last_os_error(), "could not lower the merge thread's priority");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = increment;
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use cairn_model::{Labels, Sample};
    use cairn_storage::{Admin, Appendable};

    use crate::{Config, Tsdb};

    #[test]
    fn a_backlog_of_disk_parts_is_merged_in_one_wake() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::new(dir.path());
        // Long enough that several ticks cannot pass during the test.
        config.maintenance_interval = Duration::from_secs(30);
        config.flush_interval = Duration::from_secs(3600);
        let db = Tsdb::open(config).unwrap();
        let now = crate::engine::now_ms();
        let labels = Labels::from_pairs([("__name__", "m")]);
        for i in 0..16 {
            let mut app = db.appender();
            app.append(&labels, &[Sample::new(now - 60_000 + i, 1.0)]).unwrap();
            app.commit().unwrap();
            db.flush().unwrap();
        }
        assert!(db.stats().parts >= 16, "a part per flush");
        db.inner.nudge();
        let deadline = Instant::now() + Duration::from_secs(20);
        while db.stats().parts > 5 {
            assert!(Instant::now() < deadline, "still {} parts", db.stats().parts);
            std::thread::sleep(Duration::from_millis(20));
        }
        db.close().unwrap();
    }

    /// The nice value (field 19 of /proc/self/task/TID/stat) of this
    /// process' thread named `name`.
    #[cfg(target_os = "linux")]
    fn nice_of_thread(name: &str) -> Option<i64> {
        std::fs::read_dir("/proc/self/task").ok()?.find_map(|task| {
            let dir = task.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            if comm.trim_end() != name {
                return None;
            }
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            // Fields after the parenthesised command name, which may hold spaces.
            let after_comm = stat.rsplit_once(") ")?.1;
            after_comm.split(' ').nth(16)?.parse().ok()
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_merge_thread_runs_at_a_lower_priority_than_maintenance() {
        let dir = tempfile::tempdir().unwrap();
        let db = Tsdb::open(Config::new(dir.path())).unwrap();
        // Nice values stop at 19, whatever the test runner's own is.
        let lowered = |maintenance: i64| (maintenance + i64::from(super::MERGE_NICE)).min(19);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match (nice_of_thread("cairn-maintain"), nice_of_thread("cairn-merge")) {
                (Some(a), Some(b)) if b == lowered(a) => break,
                seen if std::time::Instant::now() > deadline => panic!("(maintenance, merge) nice: {seen:?}"),
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        db.close().unwrap();
    }
}
