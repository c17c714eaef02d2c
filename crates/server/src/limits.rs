//! The tenants' limits file: read at startup (a bad file stops it), then
//! read again whenever it changes; a bad edit is logged and the limits in
//! force stay.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use cairn_http::{LimitsState, TenantLimits};
use cairn_tsdb::{SettingsOf, TenantSettings, TsdbTenants};

/// How often the file is looked at for changes.
const CHECK_EVERY: Duration = Duration::from_secs(10);

/// Reads and parses the file.
pub fn load(path: &Path) -> anyhow::Result<TenantLimits> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    TenantLimits::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// What `limits` tell each tenant's engine.
pub fn settings(limits: Arc<TenantLimits>) -> SettingsOf {
    Arc::new(move |tenant| {
        let l = limits.of(tenant);
        TenantSettings {
            retention: l.retention,
            max_active_series: l.max_active_series,
        }
    })
}

/// What `limits` tell the cluster: each tenant's shard size.
pub fn shard_sizes(limits: Arc<TenantLimits>) -> cairn_cluster::ShardSizes {
    Arc::new(move |tenant| limits.of(tenant).shard_size)
}

/// Where the limits in force apply besides the HTTP API: this node's
/// engine and its cluster, where it has them.
#[derive(Clone, Default)]
pub struct Enforcers {
    pub tenants: Option<Arc<TsdbTenants>>,
    pub cluster: Option<Arc<cairn_cluster::Cluster>>,
}

impl Enforcers {
    /// Puts `limits` in force.
    pub fn apply(&self, limits: Arc<TenantLimits>) {
        if let Some(tenants) = &self.tenants {
            tenants.set_settings(settings(limits.clone()));
        }
        if let Some(cluster) = &self.cluster {
            cluster.set_shard_sizes(shard_sizes(limits));
        }
    }
}

/// Watches `path` and puts each good version in force.
pub async fn reload_on_change(path: PathBuf, state: Arc<LimitsState>, enforcers: Enforcers) {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut seen: Option<SystemTime> = modified(&path);
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        let now = modified(&path);
        if now == seen {
            continue;
        }
        seen = now;
        match load(&path) {
            Ok(limits) => {
                tracing::info!(path = %path.display(), "tenant limits reloaded");
                state.set(limits);
                enforcers.apply(state.current());
            }
            Err(e) => tracing::error!(error = %e, "tenant limits not reloaded; the previous ones stay"),
        }
    }
}
