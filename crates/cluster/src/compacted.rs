//! Every node's view of the compacted days: a read-only view of each
//! compactor's prefix in the bucket, found by listing `compactors/` every
//! `--storage.object-store.refresh-interval`, and of `compacted/`, where the
//! single compactor of earlier versions kept its days. A compactor reads its
//! own days from its engine. Reads join all of these like replicas.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use cairn_bucket::{Bucket, BucketConfig};
use cairn_storage::{StorageError, Tenants};
use cairn_tsdb::{Config, SettingsOf, TsdbTenants};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::layout;

/// The name, among the views, of the earlier versions' `compacted/`.
const EARLIER: &str = "";

pub struct CompactedDays {
    bucket: Bucket,
    base: BucketConfig,
    /// What a view is opened with, but for its path and URL.
    template: Config,
    settings: SettingsOf,
    /// This node's own directory, when it is a compactor, and its engine.
    own: Option<(String, Arc<TsdbTenants>)>,
    /// A view of each other compactor's prefix, by its directory.
    views: RwLock<BTreeMap<String, Arc<TsdbTenants>>>,
    stop: Arc<(Mutex<bool>, Condvar)>,
}

impl CompactedDays {
    /// Opens a view of each compactor's prefix listed now (so that the
    /// first read sees every compacted day), then keeps looking for new
    /// ones. `storage` is this node's storage configuration; `own` its
    /// engine, when it is the compactor whose id is `node_id`.
    pub fn start(
        base: BucketConfig,
        node_id: &str,
        storage: &Config,
        settings: SettingsOf,
        own: Option<Arc<TsdbTenants>>,
    ) -> Result<Arc<Self>, StorageError> {
        let bucket = Bucket::open_uncached(&base)?;
        let mut template = storage.clone();
        template.read_only = true;
        template.wal_replay = Arc::default();
        let days = Arc::new(Self {
            bucket,
            base,
            template,
            settings,
            own: own.map(|engine| (layout::node_dir(node_id), engine)),
            views: RwLock::default(),
            stop: Arc::default(),
        });
        days.open_new()?;
        let every = storage.bucket_refresh_interval.max(Duration::from_millis(100));
        let (watcher, stop) = (Arc::downgrade(&days), days.stop.clone());
        std::thread::Builder::new()
            .name("cairn-compacted".into())
            .spawn(move || {
                loop {
                    {
                        let (stopped, wake) = &*stop;
                        let mut stopped = stopped.lock();
                        if !*stopped {
                            wake.wait_for(&mut stopped, every);
                        }
                        if *stopped {
                            return;
                        }
                    }
                    let Some(days) = watcher.upgrade() else { return };
                    if let Err(e) = days.open_new() {
                        tracing::warn!(error = %e, "cannot list the compactors' days in the bucket; trying again");
                    }
                }
            })
            .map_err(|e| StorageError::Unavailable(format!("cannot start the compacted days' watcher: {e}")))?;
        Ok(days)
    }

    /// Opens a view of each compactor prefix not seen before.
    fn open_new(&self) -> Result<(), StorageError> {
        let mut found: Vec<(String, String)> = layout::compactors_in(&self.bucket)?
            .into_iter()
            .filter(|dir| self.own.as_ref().is_none_or(|(me, _)| me != dir))
            .map(|dir| {
                let url = layout::compactor_bucket_url(&self.base.url, &dir);
                (dir, url)
            })
            .collect();
        if layout::has_compacted(&self.bucket)? {
            found.push((EARLIER.to_string(), layout::compacted_bucket_url(&self.base.url)));
        }
        for (dir, url) in found {
            if self.views.read().contains_key(&dir) {
                continue;
            }
            let mut config = self.template.clone();
            config.path = if dir == EARLIER {
                self.template.path.join("compacted")
            } else {
                self.template.path.join("compactors").join(&dir)
            };
            config.object_store = Some(layout::with_url(&self.base, url));
            let view = TsdbTenants::open(config, self.settings.clone())?;
            tracing::info!(compactor = dir, "reading a compactor's days");
            self.views.write().insert(dir, view);
        }
        Ok(())
    }

    /// Every copy of compacted days this node reads.
    pub(crate) fn all(&self) -> Vec<Arc<dyn Tenants>> {
        let own = self.own.iter().map(|(_, engine)| engine.clone() as Arc<dyn Tenants>);
        let views = self.views.read();
        own.chain(views.values().map(|v| v.clone() as Arc<dyn Tenants>))
            .collect()
    }

    /// Stops looking for compactors and closes the views.
    pub fn close(&self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock() = true;
        wake.notify_all();
        for (dir, view) in std::mem::take(&mut *self.views.write()) {
            if let Err(e) = view.close() {
                tracing::warn!(compactor = dir, error = %e, "closing a view of compacted days failed");
            }
        }
    }
}
