//! How far a storage's write-ahead log replay has come, shared between the
//! storage replaying it and the API answering `/api/v1/status/walreplay`
//! while it does (the API serves before storage has opened).

use std::sync::atomic::{AtomicU64, Ordering};

/// Segments of the log to replay (`min..=max`) and the one being replayed.
/// All zero before a replay starts and when there was nothing to replay.
#[derive(Debug, Default)]
pub struct WalReplay {
    min: AtomicU64,
    max: AtomicU64,
    current: AtomicU64,
}

/// A reading of [`WalReplay`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalReplayStatus {
    pub min: u64,
    pub max: u64,
    pub current: u64,
}

impl WalReplay {
    /// A replay of segments `min..=max` starts.
    pub fn start(&self, min: u64, max: u64) {
        self.min.store(min, Ordering::Relaxed);
        self.max.store(max, Ordering::Relaxed);
        self.current.store(min, Ordering::Relaxed);
    }

    /// Segment `segment` is being replayed.
    pub fn at(&self, segment: u64) {
        self.current.store(segment, Ordering::Relaxed);
    }

    pub fn status(&self) -> WalReplayStatus {
        WalReplayStatus {
            min: self.min.load(Ordering::Relaxed),
            max: self.max.load(Ordering::Relaxed),
            current: self.current.load(Ordering::Relaxed),
        }
    }
}
