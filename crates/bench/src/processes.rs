//! The processes of a system under test, as the run measures them. A
//! fault run kills one and starts it again: the set then holds the new
//! process, and keeps the CPU time the killed one had used, so the run's
//! CPU figure covers every process that ever served.

use std::sync::{Arc, Mutex, PoisonError};

use crate::procfs;

/// Shared by the system that starts and kills processes and the run that
/// samples them.
#[derive(Debug, Clone, Default)]
pub struct Processes(Arc<Mutex<Set>>);

#[derive(Debug, Default)]
struct Set {
    live: Vec<u32>,
    /// CPU seconds of the processes taken out of the set.
    retired_cpu_s: f64,
}

impl Processes {
    pub fn fixed(pids: Vec<u32>) -> Self {
        Self(Arc::new(Mutex::new(Set {
            live: pids,
            retired_cpu_s: 0.0,
        })))
    }

    fn set(&self) -> std::sync::MutexGuard<'_, Set> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn pids(&self) -> Vec<u32> {
        self.set().live.clone()
    }

    pub fn is_empty(&self) -> bool {
        self.set().live.is_empty()
    }

    /// CPU seconds of every process the set held: the live ones' now, the
    /// retired ones' at retirement. `None` with no process, or when a live
    /// one cannot be read.
    pub fn cpu_seconds(&self, tck: u64) -> Option<f64> {
        let set = self.set();
        procfs::cpu_seconds_of(&set.live, tck).map(|live| live + set.retired_cpu_s)
    }

    /// RSS summed over the live processes.
    pub fn rss_bytes(&self) -> Option<u64> {
        procfs::rss_of(&self.set().live)
    }

    pub fn add(&self, pid: u32) {
        self.set().live.push(pid);
    }

    /// Takes `pid` out of the set, keeping the CPU time it used so far:
    /// call it just before the process is killed.
    pub fn retire(&self, pid: u32, tck: u64) {
        let mut set = self.set();
        set.retired_cpu_s += procfs::cpu_seconds(pid, tck).unwrap_or(0.0);
        set.live.retain(|&p| p != pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retired_process_keeps_its_cpu_time_in_the_total() {
        let tck = procfs::clk_tck();
        let me = std::process::id();
        let set = Processes::fixed(vec![me]);
        // Some CPU time of our own to measure.
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let before = set.cpu_seconds(tck).unwrap();
        set.retire(me, tck);
        assert!(set.pids().is_empty());
        // No live process: nothing can be read.
        assert_eq!(set.cpu_seconds(tck), None);
        set.add(me);
        let after = set.cpu_seconds(tck).unwrap();
        // Now counted twice: once retired, once live.
        assert!(after >= 2.0 * before - 0.05, "{after} vs {before}");
        assert!(set.rss_bytes().unwrap() > 0);
    }
}
