//! Per-tenant limits and settings, from a YAML file (`--tenants.limits-file`)
//! that the server reads again when it changes:
//!
//! ```yaml
//! defaults:                   # every tenant's, unless its own entry says otherwise
//!   max_active_series: 0      # series of the current day; 0: no limit
//!   ingestion_rate: 0         # samples per second, on average; 0: no limit
//!   ingestion_burst: 0        # samples above the rate at once; 0: one second's worth
//!   max_query_samples: 0      # samples a query may hold; 0: --query.max-samples
//!   max_query_series: 0       # series a query may select; 0: --query.max-series
//!   retention: 31d            # absent: --storage.retention
//!   shard_size: 0             # ingesters holding its series (cluster); 0: --cluster.shard-size
//! tenants:
//!   team-a:
//!     ingestion_rate: 50000
//! ```
//!
//! Over-limit writes get 429 naming the limit; what was refused is counted
//! per tenant and limit in `/metrics`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_storage::TenantId;
use parking_lot::{Mutex, RwLock};
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use crate::{ApiError, ErrorType, parse_duration};

/// One tenant's limits, every field given.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    pub max_active_series: u64,
    pub ingestion_rate: f64,
    pub ingestion_burst: u64,
    pub max_query_samples: usize,
    pub max_query_series: usize,
    #[serde(deserialize_with = "retention")]
    pub retention: Option<Duration>,
    pub shard_size: usize,
}

fn retention<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let text = Option::<String>::deserialize(d)?;
    text.map(|t| {
        let ms = parse_duration(&t).map_err(serde::de::Error::custom)?;
        u64::try_from(ms)
            .ok()
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis)
            .ok_or_else(|| serde::de::Error::custom(format!("retention {t:?} must be positive")))
    })
    .transpose()
}

/// Every tenant's limits, as the file says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantLimits {
    defaults: Limits,
    tenants: BTreeMap<TenantId, Limits>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: Mapping,
    #[serde(default)]
    tenants: BTreeMap<String, Mapping>,
}

impl TenantLimits {
    /// Parses the file's text; an error names what is wrong.
    pub fn parse(yaml: &str) -> Result<Self, String> {
        let file: File = serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())?;
        let of = |m: Mapping| -> Result<Limits, String> {
            serde_yaml_ng::from_value(Value::Mapping(m)).map_err(|e| e.to_string())
        };
        let defaults = of(file.defaults.clone())?;
        let mut tenants = BTreeMap::new();
        for (id, own) in file.tenants {
            let tenant = TenantId::new(&id).map_err(|e| e.to_string())?;
            // A tenant's entry overrides the defaults field by field.
            let mut merged = file.defaults.clone();
            merged.extend(own);
            tenants.insert(tenant, of(merged).map_err(|e| format!("tenant {id}: {e}"))?);
        }
        Ok(Self { defaults, tenants })
    }

    /// `tenant`'s limits.
    pub fn of(&self, tenant: &TenantId) -> &Limits {
        self.tenants.get(tenant).unwrap_or(&self.defaults)
    }
}

/// A token bucket: `rate` tokens a second, at most `burst` held.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The limits in force and each tenant's ingestion budget.
#[derive(Default)]
pub struct LimitsState {
    limits: RwLock<Arc<TenantLimits>>,
    buckets: Mutex<HashMap<TenantId, Bucket>>,
    /// Requests refused, by (tenant, limit).
    refused: Mutex<BTreeMap<(TenantId, &'static str), u64>>,
}

impl LimitsState {
    pub fn current(&self) -> Arc<TenantLimits> {
        self.limits.read().clone()
    }

    pub fn set(&self, limits: TenantLimits) {
        *self.limits.write() = Arc::new(limits);
    }

    /// Takes `samples` from `tenant`'s ingestion budget, or refuses the
    /// write (429). A write larger than the burst passes when the budget is
    /// full, and its debt is repaid at the rate before the next one passes.
    pub fn admit_write(&self, tenant: &TenantId, samples: u64) -> Result<(), ApiError> {
        let limits = self.current();
        let l = limits.of(tenant);
        if l.ingestion_rate <= 0.0 {
            return Ok(());
        }
        let burst = if l.ingestion_burst > 0 {
            l.ingestion_burst as f64
        } else {
            l.ingestion_rate
        };
        let now = Instant::now();
        let mut buckets = self.buckets.lock();
        let b = buckets
            .entry(tenant.clone())
            .or_insert(Bucket { tokens: burst, at: now });
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * l.ingestion_rate).min(burst);
        b.at = now;
        if b.tokens < (samples as f64).min(burst) {
            drop(buckets);
            return Err(self.refuse(
                tenant,
                "ingestion_rate",
                format!(
                    "tenant {tenant} is over its ingestion rate limit of {} samples/s (burst {burst}); retry later",
                    l.ingestion_rate
                ),
            ));
        }
        b.tokens -= samples as f64;
        Ok(())
    }

    /// Counts a refusal under `limit` and words it (429).
    pub fn refuse(&self, tenant: &TenantId, limit: &'static str, message: String) -> ApiError {
        *self.refused.lock().entry((tenant.clone(), limit)).or_default() += 1;
        ApiError::new(ErrorType::TooManyRequests, message)
    }

    /// Requests refused so far, by tenant and limit.
    pub fn refused(&self) -> Vec<((TenantId, &'static str), u64)> {
        self.refused.lock().iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> TenantId {
        TenantId::new(s).unwrap()
    }

    #[test]
    fn a_tenant_entry_overrides_the_defaults_field_by_field() {
        let l = TenantLimits::parse(
            "defaults:\n  ingestion_rate: 10\n  max_active_series: 5\n  retention: 2d\n\
             tenants:\n  a:\n    max_active_series: 7\n",
        )
        .unwrap();
        assert_eq!(l.of(&id("a")).ingestion_rate, 10.0);
        assert_eq!(l.of(&id("a")).max_active_series, 7);
        assert_eq!(l.of(&id("a")).retention, Some(Duration::from_secs(2 * 86_400)));
        assert_eq!(l.of(&id("b")).max_active_series, 5);
        assert_eq!(l.of(&id("b")).shard_size, 0);
        assert_eq!(TenantLimits::parse("").unwrap(), TenantLimits::default());
        let l = TenantLimits::parse("tenants:\n  a:\n    shard_size: 3\n").unwrap();
        assert_eq!((l.of(&id("a")).shard_size, l.of(&id("b")).shard_size), (3, 0));
    }

    #[test]
    fn mistakes_are_named() {
        let e = TenantLimits::parse("defaults:\n  max_series: 1\n").unwrap_err();
        assert!(e.contains("max_series"), "{e}");
        let e = TenantLimits::parse("tenants:\n  a/b:\n    ingestion_rate: 1\n").unwrap_err();
        assert!(e.contains("a/b"), "{e}");
        let e = TenantLimits::parse("defaults:\n  retention: forever\n").unwrap_err();
        assert!(e.contains("forever"), "{e}");
    }

    #[test]
    fn the_ingestion_budget_refills_at_the_rate() {
        let state = LimitsState::default();
        state.set(TenantLimits::parse("tenants:\n  a:\n    ingestion_rate: 1000\n    ingestion_burst: 100\n").unwrap());
        let a = id("a");
        assert!(state.admit_write(&a, 100).is_ok());
        let refused = state.admit_write(&a, 50).unwrap_err();
        assert_eq!(refused.kind, ErrorType::TooManyRequests);
        assert!(refused.message.contains("ingestion rate"), "{refused}");
        std::thread::sleep(Duration::from_millis(60));
        assert!(state.admit_write(&a, 50).is_ok());
        // Other tenants have no limit.
        assert!(state.admit_write(&id("b"), 1_000_000).is_ok());
        assert_eq!(state.refused(), vec![((a, "ingestion_rate"), 1)]);
    }
}
