//! Targets: a discovered label set turned into a scrape target with
//! Prometheus' label population, relabelling and checks, and its URL,
//! identity hash, scrape offset and status.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cairn_model::{Label, Labels};
use cairn_protocols::MetricType;
use parking_lot::Mutex;

use crate::discovery::{ADDRESS_LABEL, LabelSet};

use crate::settings::JobSettings;

pub const SCHEME_LABEL: &str = "__scheme__";
pub const METRICS_PATH_LABEL: &str = "__metrics_path__";
pub const SCRAPE_INTERVAL_LABEL: &str = "__scrape_interval__";
pub const SCRAPE_TIMEOUT_LABEL: &str = "__scrape_timeout__";
pub const PARAM_LABEL_PREFIX: &str = "__param_";
pub const META_LABEL_PREFIX: &str = "__meta_";
pub const RESERVED_LABEL_PREFIX: &str = "__";
pub const JOB_LABEL: &str = "job";
pub const INSTANCE_LABEL: &str = "instance";
pub(crate) const CONVERT_NHCB_LABEL: &str = "__convert_classic_histograms_to_nhcb__";
pub(crate) const ALWAYS_CLASSIC_LABEL: &str = "__always_scrape_classic_histograms__";
pub(crate) const NATIVE_HISTOGRAMS_LABEL: &str = "__scrape_native_histograms__";

/// The labels a target has before relabelling: its own, its group's below
/// them, then the job's settings where relabelling has not set them.
pub fn discovered_labels(job: &JobSettings, target: &LabelSet, group: &LabelSet) -> Labels {
    let mut map: BTreeMap<&str, String> = BTreeMap::new();
    for (n, v) in target {
        map.insert(n, v.clone());
    }
    for (n, v) in group {
        map.entry(n).or_insert_with(|| v.clone());
    }
    let defaults = [
        (JOB_LABEL, job.job_name.clone()),
        (SCRAPE_INTERVAL_LABEL, format_duration(job.scrape_interval)),
        (SCRAPE_TIMEOUT_LABEL, format_duration(job.scrape_timeout)),
        (METRICS_PATH_LABEL, job.metrics_path.clone()),
        (SCHEME_LABEL, job.scheme.clone()),
        (CONVERT_NHCB_LABEL, job.convert_classic_histograms_to_nhcb.to_string()),
        (ALWAYS_CLASSIC_LABEL, job.always_scrape_classic_histograms.to_string()),
        (NATIVE_HISTOGRAMS_LABEL, job.scrape_native_histograms.to_string()),
    ];
    let mut params = Vec::new();
    for (k, v) in &job.params {
        if let Some(first) = v.first() {
            params.push((format!("{PARAM_LABEL_PREFIX}{k}"), first.clone()));
        }
    }
    let mut labels: Vec<Label> = Vec::with_capacity(map.len() + defaults.len() + params.len());
    for (n, v) in map.iter().filter(|(_, v)| !v.is_empty()) {
        labels.push(Label::new(*n, v.as_str()));
    }
    let mut out = Labels::new(labels).unwrap_or_default();
    for (n, v) in defaults {
        if out.get(n).unwrap_or("").is_empty() {
            out.set(n, &v);
        }
    }
    for (n, v) in params {
        if out.get(&n).unwrap_or("").is_empty() {
            out.set(&n, &v);
        }
    }
    out
}

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// A target's final labels: `Ok(None)` when relabelling dropped it, `Err`
/// when its labels are not a valid target (it is then neither scraped nor
/// listed as dropped, as in Prometheus).
pub fn target_labels(job: &JobSettings, discovered: &Labels) -> Result<Option<Labels>, String> {
    let Some(mut labels) = job.relabel.apply(discovered.clone()) else {
        return Ok(None);
    };
    let addr = labels.get(ADDRESS_LABEL).unwrap_or("").to_string();
    if addr.is_empty() {
        return Err("no address".into());
    }
    if addr.contains('/') {
        return Err(format!("{addr:?} is not a valid hostname"));
    }
    let interval_text = labels.get(SCRAPE_INTERVAL_LABEL).unwrap_or("").to_string();
    let interval = parse_duration(&interval_text).map_err(|e| format!("error parsing scrape interval: {e}"))?;
    if interval.is_zero() {
        return Err("scrape interval cannot be 0".into());
    }
    let timeout_text = labels.get(SCRAPE_TIMEOUT_LABEL).unwrap_or("").to_string();
    let timeout = parse_duration(&timeout_text).map_err(|e| format!("error parsing scrape timeout: {e}"))?;
    if timeout.is_zero() {
        return Err("scrape timeout cannot be 0".into());
    }
    if timeout > interval {
        return Err(format!(
            "scrape timeout cannot be greater than scrape interval ({timeout_text:?} > {interval_text:?})"
        ));
    }
    for (name, what) in [
        (CONVERT_NHCB_LABEL, "convert classic histograms to nhcb"),
        (ALWAYS_CLASSIC_LABEL, "always scrape classic histograms"),
        (NATIVE_HISTOGRAMS_LABEL, "scrape native histograms"),
    ] {
        if let Some(v) = labels.get(name).filter(|v| !v.is_empty())
            && parse_go_bool(v).is_none()
        {
            return Err(format!(
                "error parsing {what}: strconv.ParseBool: parsing {v:?}: invalid syntax"
            ));
        }
    }
    let kept: Vec<Label> = labels
        .iter()
        .filter(|l| !l.name.starts_with(META_LABEL_PREFIX))
        .cloned()
        .collect();
    labels = Labels::new(kept).map_err(|e| e.to_string())?;
    if labels.get(INSTANCE_LABEL).unwrap_or("").is_empty() {
        labels.set(INSTANCE_LABEL, &addr);
    }
    Ok(Some(labels))
}

/// Go's `url.QueryEscape`.
fn query_escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

/// The URL Prometheus scrapes: the job's params with `__param_*` labels
/// replacing their first values, sorted by name.
pub fn scrape_url(job: &JobSettings, labels: &Labels) -> String {
    let mut params = job.params.clone();
    for l in labels.iter() {
        if let Some(name) = l.name.strip_prefix(PARAM_LABEL_PREFIX) {
            let values = params.entry(name.to_string()).or_default();
            match values.first_mut() {
                Some(first) => *first = l.value.to_string(),
                None => values.push(l.value.to_string()),
            }
        }
    }
    let mut url = format!(
        "{}://{}",
        labels.get(SCHEME_LABEL).unwrap_or(""),
        labels.get(ADDRESS_LABEL).unwrap_or("")
    );
    let path = labels.get(METRICS_PATH_LABEL).unwrap_or("");
    if !path.is_empty() && !path.starts_with('/') {
        url.push('/');
    }
    url.push_str(path);
    let mut query = String::new();
    for (k, vs) in &params {
        for v in vs {
            if !query.is_empty() {
                query.push('&');
            }
            query_escape(k, &mut query);
            query.push('=');
            query_escape(v, &mut query);
        }
    }
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query);
    }
    url
}

/// Prometheus' `labels.Hash`: xxHash64 of `name\xffvalue\xff...`.
pub fn labels_hash(labels: &Labels) -> u64 {
    let mut b = Vec::with_capacity(128);
    for l in labels.iter() {
        b.extend_from_slice(l.name.as_bytes());
        b.push(0xff);
        b.extend_from_slice(l.value.as_bytes());
        b.push(0xff);
    }
    xxhash_rust::xxh64::xxh64(&b, 0)
}

pub(crate) fn fnv64a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A target's health after its last scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Unknown,
    Up,
    Down,
}

impl Health {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Up => "up",
            Self::Down => "down",
        }
    }
}

/// What the last scrape of a target gave.
#[derive(Debug, Clone)]
pub struct ScrapeStatus {
    pub health: Health,
    pub last_error: Option<String>,
    /// Zero (the Unix epoch) before the first scrape.
    pub last_scrape: SystemTime,
    pub last_scrape_duration: Duration,
}

/// A metric family's metadata as a target exposes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FamilyMetadata {
    pub family: String,
    pub metric_type: MetricType,
    pub help: String,
    pub unit: String,
}

/// The metadata a target exposed, by family, with the scrape each was last seen in.
#[derive(Debug, Default)]
pub(crate) struct MetadataStore {
    pub(crate) entries: BTreeMap<String, (FamilyMetadata, u64)>,
}

/// A scrape target. Shared by its pool, its loop and status readers.
#[derive(Debug)]
pub struct Target {
    labels: Labels,
    discovered: Mutex<Labels>,
    url: String,
    hash: u64,
    pub(crate) status: Mutex<ScrapeStatus>,
    pub(crate) metadata: Mutex<Arc<Mutex<MetadataStore>>>,
}

impl Target {
    pub fn new(job: &JobSettings, labels: Labels, discovered: Labels) -> Self {
        let url = scrape_url(job, &labels);
        let mut key = format!("{:016}", labels_hash(&labels)).into_bytes();
        key.extend_from_slice(url.as_bytes());
        Self {
            hash: fnv64a(&key),
            labels,
            discovered: Mutex::new(discovered),
            url,
            status: Mutex::new(ScrapeStatus {
                health: Health::Unknown,
                last_error: None,
                last_scrape: UNIX_EPOCH,
                last_scrape_duration: Duration::ZERO,
            }),
            metadata: Mutex::new(Arc::default()),
        }
    }

    /// All labels, the reserved `__*` ones included.
    pub fn all_labels(&self) -> &Labels {
        &self.labels
    }

    /// The labels its series get (none starting with `__`).
    pub fn labels(&self) -> Labels {
        let public: Vec<Label> = self
            .labels
            .iter()
            .filter(|l| !l.name.starts_with(RESERVED_LABEL_PREFIX))
            .cloned()
            .collect();
        Labels::new(public).unwrap_or_default()
    }

    /// The labels before relabelling (the latest discovery's, when several
    /// groups give the same target).
    pub fn discovered_labels(&self) -> Labels {
        self.discovered.lock().clone()
    }

    pub(crate) fn set_discovered_labels(&self, labels: Labels) {
        *self.discovered.lock() = labels;
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Prometheus' identity of a target within its pool (labels and URL).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    pub fn get(&self, name: &str) -> &str {
        self.labels.get(name).unwrap_or("")
    }

    /// The interval and timeout from its labels (relabelling may change them).
    pub fn interval_and_timeout(&self, job: &JobSettings) -> (Duration, Duration) {
        let interval = parse_duration(self.get(SCRAPE_INTERVAL_LABEL)).unwrap_or(job.scrape_interval);
        let timeout = parse_duration(self.get(SCRAPE_TIMEOUT_LABEL)).unwrap_or(job.scrape_timeout);
        (interval, timeout)
    }

    /// The wait before the first scrape: Prometheus' offset, which spreads
    /// targets over the interval by their hash and keeps each target at the
    /// same phase of the interval across restarts.
    pub fn offset(&self, interval: Duration, seed: u64, now: SystemTime) -> Duration {
        let interval_ns = interval.as_nanos().max(1) as u64;
        let now_ns = now.duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        let base = interval_ns - now_ns % interval_ns;
        let offset = (self.hash ^ seed) % interval_ns;
        let mut next = base + offset;
        if next > interval_ns {
            next -= interval_ns;
        }
        Duration::from_nanos(next)
    }

    pub fn status(&self) -> ScrapeStatus {
        self.status.lock().clone()
    }

    /// The metadata of the families it last exposed, by family name.
    pub fn metadata(&self) -> Vec<FamilyMetadata> {
        let store = self.metadata.lock().clone();
        let store = store.lock();
        store.entries.values().map(|(m, _)| m.clone()).collect()
    }

    /// One family's metadata.
    pub fn metadata_of(&self, family: &str) -> Option<FamilyMetadata> {
        let store = self.metadata.lock().clone();
        let store = store.lock();
        store.entries.get(family).map(|(m, _)| m.clone())
    }
}

/// Prometheus' text for a duration (`1m30s`), as the interval/timeout labels hold it.
fn format_duration(d: Duration) -> String {
    cairn_config::Duration::from_std(d).to_string()
}

/// Reads Prometheus' duration notation from an interval/timeout label.
fn parse_duration(text: &str) -> Result<Duration, cairn_config::DurationError> {
    cairn_config::Duration::parse(text).map(cairn_config::Duration::as_std)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Relabeling;

    fn job() -> JobSettings {
        let mut j = JobSettings::new("node");
        j.scrape_interval = Duration::from_secs(15);
        j.params.insert("module".into(), vec!["http 2xx".into(), "b".into()]);
        j
    }

    fn addr(a: &str) -> LabelSet {
        LabelSet::from([(ADDRESS_LABEL.to_string(), a.to_string())])
    }

    #[test]
    fn population_sets_defaults_and_instance() {
        let j = job();
        let group = LabelSet::from([
            ("env".to_string(), "prod".to_string()),
            ("__meta_x".to_string(), "y".to_string()),
        ]);
        let d = discovered_labels(&j, &addr("h:9100"), &group);
        assert_eq!(d.get("job"), Some("node"));
        assert_eq!(d.get(SCRAPE_INTERVAL_LABEL), Some("15s"));
        assert_eq!(d.get(SCRAPE_TIMEOUT_LABEL), Some("10s"));
        assert_eq!(d.get("__param_module"), Some("http 2xx"));
        assert_eq!(d.get("__meta_x"), Some("y"));
        let l = target_labels(&j, &d).unwrap().unwrap();
        assert_eq!(l.get("instance"), Some("h:9100"));
        assert_eq!(l.get("__meta_x"), None);
        assert_eq!(l.get("__scheme__"), Some("http"));
        let t = Target::new(&j, l, d);
        assert_eq!(t.url(), "http://h:9100/metrics?module=http+2xx&module=b");
        assert_eq!(t.labels().to_string(), r#"{env="prod", instance="h:9100", job="node"}"#);
    }

    #[test]
    fn target_labels_win_over_group_labels() {
        let j = job();
        let mut t = addr("a:1");
        t.insert("env".into(), "mine".into());
        let group = LabelSet::from([("env".to_string(), "group".to_string())]);
        assert_eq!(discovered_labels(&j, &t, &group).get("env"), Some("mine"));
    }

    #[test]
    fn invalid_targets_are_errors_and_dropped_ones_none() {
        let mut j = job();
        let d = discovered_labels(&j, &addr("h/x:1"), &LabelSet::new());
        assert!(target_labels(&j, &d).unwrap_err().contains("not a valid hostname"));
        let mut d = discovered_labels(&j, &addr("h:1"), &LabelSet::new());
        d.set(SCRAPE_TIMEOUT_LABEL, "1m");
        assert!(
            target_labels(&j, &d)
                .unwrap_err()
                .contains("greater than scrape interval")
        );
        j.relabel = Relabeling::new(|_| None);
        let d = discovered_labels(&j, &addr("h:1"), &LabelSet::new());
        assert_eq!(target_labels(&j, &d), Ok(None));
    }

    #[test]
    fn hash_matches_prometheus_labels_hash() {
        // xxHash64 of `a\xffb\xff`, as Go's labels.FromStrings("a","b").Hash() computes it.
        let l = Labels::from_pairs([("a", "b")]);
        assert_eq!(labels_hash(&l), xxhash_rust::xxh64::xxh64(b"a\xffb\xff", 0));
    }

    #[test]
    fn offset_stays_within_the_interval_and_keeps_its_phase() {
        let j = job();
        let d = discovered_labels(&j, &addr("h:1"), &LabelSet::new());
        let t = Target::new(&j, target_labels(&j, &d).unwrap().unwrap(), d);
        let interval = Duration::from_secs(15);
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let o1 = t.offset(interval, 0, now);
        assert!(o1 <= interval);
        let o2 = t.offset(interval, 0, now + Duration::from_secs(1));
        // One second later the wait is one second shorter (modulo the interval).
        let diff = (o1.as_nanos() as i128 - o2.as_nanos() as i128).rem_euclid(interval.as_nanos() as i128);
        assert_eq!(diff, 1_000_000_000);
    }
}
