//! Prometheus' service discovery and scraping: targets from static lists,
//! files and HTTP endpoints; Prometheus' target labels; one scrape loop per
//! target appending to any [`cairn_storage::Appendable`] with Prometheus'
//! staleness, limits and report series; and the targets and metadata the API
//! shows.

mod append;
mod append_lean;
mod cache;
pub mod client;
pub mod discovery;
mod exposition;
mod from_config;
pub mod http1;
mod inherit;
mod manager;
mod metrics;
mod pool;
mod scrape_loop;
pub mod settings;
mod status;
pub mod target;

pub use from_config::{http_settings, jobs_of, sd_configs};
pub use manager::{ScrapeManager, ScrapeOptions, offset_seed};
pub use metrics::{DiscoveryCounters, PoolMetrics, ScrapeMetrics, ScrapeMetricsSnapshot, go_duration};
pub use settings::{JobSettings, Relabeling};
pub use status::{GlobalUrlOptions, global_url, go_time_json};
pub use target::{FamilyMetadata, Health, ScrapeStatus, Target};

/// The `User-Agent` of scrapes and HTTP SD requests.
pub const USER_AGENT: &str = concat!("Cairn/", env!("CARGO_PKG_VERSION"));

/// Seconds as Go's `strconv.FormatFloat(s, 'f', -1, 64)` writes them (`10`, `0.5`).
pub(crate) fn seconds_text(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s}")
    }
}

/// Go's `resp.Status`: `404 Not Found`.
pub(crate) fn status_text(status: reqwest::StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}
