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

/// Watches `path` and puts each good version in force.
pub async fn reload_on_change(path: PathBuf, state: Arc<LimitsState>, tenants: Arc<TsdbTenants>) {
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
                tenants.set_settings(settings(state.current()));
            }
            Err(e) => tracing::error!(error = %e, "tenant limits not reloaded; the previous ones stay"),
        }
    }
}
