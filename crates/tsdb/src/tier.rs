//! The engine's side of the bucket: connecting to it, the days it holds,
//! the upload thread's rounds and a read-only instance's refreshes. What a
//! partition keeps there and when it uploads is partition/bucket.rs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_storage::StorageError;

use crate::config::Config;
use crate::day::Day;
use crate::engine::{Inner, now_ms};
use crate::partition::{Partition, Remote};

/// The bucket of `config`, with its cache in the data directory.
pub(crate) fn connect(config: &Config) -> Result<Option<Arc<Remote>>, StorageError> {
    let Some(bucket) = &config.object_store else {
        if config.read_only {
            return Err(StorageError::InvalidArgument(
                "a read-only instance serves a bucket's data: it needs an object store".into(),
            ));
        }
        return Ok(None);
    };
    let bucket = Bucket::open(bucket, &config.path.join("cache"), config.cache_max_bytes)?;
    Ok(Some(Arc::new(Remote {
        bucket: Arc::new(bucket),
        prefix: String::new(),
        writable: !config.read_only,
    })))
}

/// The bucket's days from `oldest` on, with their objects. A writer deletes
/// the objects of older days (retention that a stopped process missed).
pub(crate) fn list_retained(remote: &Remote, oldest: Day) -> Result<BTreeMap<Day, Vec<ObjectInfo>>, StorageError> {
    let mut days = remote.list_days()?;
    let retained = days.split_off(&oldest);
    if remote.writable {
        for day in days.into_keys() {
            tracing::info!(%day, "deleting a day past retention from the bucket");
            remote.delete_day(day)?;
        }
    }
    Ok(retained)
}

impl Inner {
    /// Uploads every settled partition's part; counts what went and what
    /// failed. Stops at the first failure: the bucket is likely down, and the
    /// parts stay on disk until a later round gets them there.
    pub(crate) fn upload_round(&self) -> Result<(), StorageError> {
        let now = now_ms();
        let idle = self.config.idle_merge_after.as_millis() as i64;
        let partitions: Vec<_> = self.partitions.read().values().cloned().collect();
        for p in partitions {
            match p.upload(now, idle) {
                Ok(done) => {
                    self.counters.uploaded_parts.fetch_add(done.parts, Ordering::Relaxed);
                    self.counters.uploaded_bytes.fetch_add(done.bytes, Ordering::Relaxed);
                }
                Err(e) => {
                    self.counters.upload_failures.fetch_add(1, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Parts on disk waiting for upload, and their bytes.
    pub(crate) fn upload_backlog(&self) -> (u64, u64) {
        let now = now_ms();
        let partitions: Vec<_> = self.partitions.read().values().cloned().collect();
        partitions
            .iter()
            .map(|p| p.upload_backlog(now))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    /// A read-only instance's view brought up to the bucket's: new days
    /// opened, changed ones refreshed, days gone from it (retention) dropped.
    /// Any of these is a change of settled data (the writer's days in the
    /// bucket are settled), counted once visible.
    pub(crate) fn refresh_from_bucket(&self) -> Result<(), StorageError> {
        let Some(remote) = &self.remote else {
            return Ok(());
        };
        let oldest = Day::of(self.min_valid_t());
        let listed = remote.list_days()?.split_off(&oldest);
        let open: BTreeMap<Day, Arc<Partition>> = self.partitions.read().clone();
        let mut added = Vec::new();
        let mut changed = false;
        for (day, objects) in &listed {
            let refreshed = match open.get(day) {
                Some(p) => p.refresh(objects).map(|c| changed |= c),
                None => Partition::open(
                    self.partition_dir(*day),
                    *day,
                    Some(remote.clone()),
                    objects,
                    self.quarantine.clone(),
                )
                .map(|p| added.push(Arc::new(p))),
            };
            if let Err(e) = refreshed {
                // What was refreshed before the failure is visible already.
                self.settled.record();
                return Err(e);
            }
        }
        let gone: Vec<Day> = open.keys().filter(|d| !listed.contains_key(d)).copied().collect();
        changed |= !added.is_empty() || !gone.is_empty();
        let all: Vec<Arc<Partition>> = {
            let mut map = self.partitions.write();
            for p in added {
                map.insert(p.day, p);
            }
            for day in &gone {
                if let Some(p) = map.remove(day) {
                    self.expired.lock().push(p);
                }
            }
            map.values().cloned().collect()
        };
        if changed {
            self.settled.record();
        }
        let mut earlier = None;
        for p in &all {
            p.seal_labels(earlier);
            earlier = Some(&**p);
        }
        self.apply_retention()
    }
}
