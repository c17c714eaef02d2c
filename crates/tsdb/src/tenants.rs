//! One engine per tenant under one data directory: the default tenant's is
//! the directory itself (where a single-tenant Cairn always kept its data),
//! every other's `tenants/<id>/`, opened at startup when found (on disk or,
//! with a bucket, in it) and created by a tenant's first write. With a
//! bucket, every engine keeps its days under its own prefix
//! (`tenants/<id>/partitions/...`) through one shared client and cache.
//!
//! Each engine has its own WAL, memory budget and background threads, as
//! Mimir's ingesters keep a TSDB per tenant: no lock, file or query of one
//! tenant is shared with another.

use std::collections::BTreeMap;
use std::fs;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use cairn_storage::{ReadOptions, Storage, StorageError, TenantId, Tenants};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::config::Config;
use crate::engine::Tsdb;
use crate::partition::Remote;
use crate::tier;

/// Where the engines of tenants other than the default are, on disk and in the bucket.
const TENANTS_DIR: &str = "tenants";

/// What comes before every key of `tenant`'s engine in the bucket.
fn bucket_prefix(tenant: &TenantId) -> String {
    if tenant.is_default() {
        String::new()
    } else {
        format!("{TENANTS_DIR}/{tenant}/")
    }
}

/// What comes before the keys of `tenant`'s `day` in the bucket (below the
/// engines' prefix).
pub fn day_keys_prefix(tenant: &TenantId, day: crate::Day) -> String {
    format!("{}{}/{day}/", bucket_prefix(tenant), crate::partition::PARTITIONS)
}

/// What a tenant's limits say its engine keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TenantSettings {
    /// `None`: the configuration's retention.
    pub retention: Option<Duration>,
    /// Series its current day may hold (0: no limit).
    pub max_active_series: u64,
}

/// Each tenant's settings, asked when its engine opens and when they change.
pub type SettingsOf = Arc<dyn Fn(&TenantId) -> TenantSettings + Send + Sync>;

pub struct TsdbTenants {
    /// The default tenant's configuration; the others' derive from it.
    config: Config,
    /// The bucket client all engines share (the default tenant's prefix).
    remote: Option<Arc<Remote>>,
    engines: RwLock<BTreeMap<TenantId, Arc<Tsdb>>>,
    /// One tenant created at a time (opening is not cheap; a race would open twice).
    creating: Mutex<()>,
    settings: RwLock<SettingsOf>,
    /// A read-only instance's thread looking for tenants new in the bucket.
    watcher: Mutex<Option<JoinHandle<()>>>,
    stop: Arc<(Mutex<bool>, Condvar)>,
}

impl TsdbTenants {
    /// Opens the default tenant's engine and every other tenant's found on
    /// disk or in the bucket, each with its settings.
    pub fn open(config: Config, settings: SettingsOf) -> Result<Arc<Self>, StorageError> {
        let remote = tier::connect(&config)?;
        let tenants = Arc::new(Self {
            config,
            remote,
            settings: RwLock::new(settings),
            engines: RwLock::default(),
            creating: Mutex::new(()),
            watcher: Mutex::new(None),
            stop: Arc::default(),
        });
        let default = TenantId::default_tenant();
        let engine = tenants.open_engine(&default)?;
        tenants.engines.write().insert(default, engine);
        tenants.open_found()?;
        if tenants.config.read_only && tenants.config.background {
            let watcher = Arc::downgrade(&tenants);
            let stop = tenants.stop.clone();
            let every = tenants.config.bucket_refresh_interval;
            let handle = std::thread::Builder::new()
                .name("cairn-tenants".into())
                .spawn(move || watch(watcher, stop, every))
                .map_err(StorageError::io("spawn the tenant watcher for", &tenants.config.path))?;
            *tenants.watcher.lock() = Some(handle);
        }
        Ok(tenants)
    }

    /// Opens the tenants found on disk or in the bucket that are not open.
    pub fn open_found(&self) -> Result<(), StorageError> {
        let mut found = Vec::new();
        let dir = self.config.path.join(TENANTS_DIR);
        if let Ok(entries) = fs::read_dir(&dir) {
            for entry in entries {
                let entry = entry.map_err(StorageError::io("list", &dir))?;
                found.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        if let Some(remote) = &self.remote {
            found.extend(remote.bucket.list_dirs(TENANTS_DIR)?);
        }
        for name in found {
            match TenantId::new(&name) {
                Ok(id) if !id.is_default() => {
                    self.get_or_open(&id, false)?;
                }
                _ => tracing::warn!(name, "not a tenant's directory; left alone"),
            }
        }
        Ok(())
    }

    /// The configuration of `id`'s engine: the default tenant's, elsewhere,
    /// with its settings.
    fn config_of(&self, id: &TenantId) -> Config {
        let mut config = self.config.clone();
        let settings = (self.settings.read())(id);
        config.retention = settings.retention.unwrap_or(self.config.retention);
        config.max_active_series = settings.max_active_series;
        if !id.is_default() {
            config.path = self.config.path.join(TENANTS_DIR).join(id.as_str());
            config.wal_replay = Arc::default();
        }
        config
    }

    fn open_engine(&self, id: &TenantId) -> Result<Arc<Tsdb>, StorageError> {
        let config = self.config_of(id);
        if id.is_default() {
            return Ok(Arc::new(Tsdb::open_with(config, self.remote.clone())?));
        }
        let remote = self.remote.as_ref().map(|r| {
            Arc::new(Remote {
                bucket: r.bucket.clone(),
                prefix: bucket_prefix(id),
                writable: r.writable,
            })
        });
        Ok(Arc::new(Tsdb::open_with(config, remote)?))
    }

    /// `id`'s engine, opened if need be; a new tenant beyond
    /// `config.max_tenants` is refused when `limited` (a write's, not one
    /// found on disk or in the bucket).
    fn get_or_open(&self, id: &TenantId, limited: bool) -> Result<Arc<Tsdb>, StorageError> {
        if let Some(engine) = self.engines.read().get(id) {
            return Ok(engine.clone());
        }
        let _creating = self.creating.lock();
        if let Some(engine) = self.engines.read().get(id) {
            return Ok(engine.clone());
        }
        let open = self.engines.read().len();
        if limited && open >= self.config.max_tenants {
            return Err(StorageError::LimitExceeded(format!(
                "tenant {id} would be tenant {} of at most {} (--tenants.max): each has an engine of its own",
                open + 1,
                self.config.max_tenants
            )));
        }
        let engine = self.open_engine(id)?;
        tracing::info!(tenant = %id, "opened the tenant's storage");
        self.engines.write().insert(id.clone(), engine.clone());
        Ok(engine)
    }

    /// New settings: applied to every open engine at once (a shorter
    /// retention drops the days that fell out in the next merge round) and
    /// to the engines opened later.
    pub fn set_settings(&self, settings: SettingsOf) {
        *self.settings.write() = settings;
        for (id, engine) in self.engines() {
            let config = self.config_of(&id);
            engine.set_retention(config.retention);
            engine.set_max_active_series(config.max_active_series);
        }
    }

    /// The default tenant's engine.
    pub fn default_engine(&self) -> Arc<Tsdb> {
        self.engines.read()[&TenantId::default_tenant()].clone()
    }

    /// `id`'s engine, if it is open.
    pub fn engine(&self, id: &TenantId) -> Option<Arc<Tsdb>> {
        self.engines.read().get(id).cloned()
    }

    /// Every open engine, by tenant.
    pub fn engines(&self) -> Vec<(TenantId, Arc<Tsdb>)> {
        self.engines
            .read()
            .iter()
            .map(|(id, e)| (id.clone(), e.clone()))
            .collect()
    }

    /// Flushes and closes every engine (and stops looking for new tenants);
    /// the first error, once all were tried.
    pub fn close(&self) -> Result<(), StorageError> {
        {
            let (stopped, wake) = &*self.stop;
            *stopped.lock() = true;
            wake.notify_all();
        }
        if let Some(handle) = self.watcher.lock().take() {
            let _ = handle.join();
        }
        let mut first = None;
        for (id, engine) in self.engines() {
            if let Err(e) = engine.close() {
                tracing::error!(tenant = %id, error = %e, "closing the tenant's storage failed");
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// A read-only instance's loop: opens tenants the writer has uploaded since.
fn watch(tenants: std::sync::Weak<TsdbTenants>, stop: Arc<(Mutex<bool>, Condvar)>, every: Duration) {
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
        let Some(tenants) = tenants.upgrade() else {
            return;
        };
        if let Err(e) = tenants.open_found() {
            tracing::warn!(error = %e, "looking for new tenants in the bucket failed");
        }
    }
}

impl Tenants for TsdbTenants {
    fn get(&self, tenant: &TenantId) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        Ok(self.engines.read().get(tenant).map(|e| e.clone() as Arc<dyn Storage>))
    }

    /// The tenant's engine, with the samples lost to damage named in the
    /// read's warnings.
    fn get_for_read(&self, tenant: &TenantId, options: &ReadOptions) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        Ok(self.engines.read().get(tenant).map(|tsdb| {
            Arc::new(crate::warned::WarnedReads {
                tsdb: tsdb.clone(),
                warnings: options.warnings.clone(),
            }) as Arc<dyn Storage>
        }))
    }

    fn get_or_create(&self, tenant: &TenantId) -> Result<Arc<dyn Storage>, StorageError> {
        if self.config.read_only {
            return Err(crate::engine::read_only());
        }
        Ok(self.get_or_open(tenant, true)?)
    }

    fn list(&self) -> Vec<TenantId> {
        self.engines.read().keys().cloned().collect()
    }

    fn snapshot(&self, name: &str, skip_head: bool) -> Result<std::path::PathBuf, StorageError> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(StorageError::InvalidArgument(format!("bad snapshot name {name:?}")));
        }
        let dest = self.config.path.join(SNAPSHOTS_DIR).join(name);
        if dest.exists() {
            return Err(StorageError::InvalidArgument(format!("snapshot {name} already exists")));
        }
        for (id, engine) in self.engines() {
            let into = if id.is_default() {
                dest.clone()
            } else {
                dest.join(TENANTS_DIR).join(id.as_str())
            };
            cairn_storage::Admin::snapshot(&*engine, &into, skip_head)?;
        }
        Ok(dest)
    }
}

/// Where snapshots go, inside the data directory.
pub const SNAPSHOTS_DIR: &str = "snapshots";
