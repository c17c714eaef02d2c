//! One alert's state, and what is sent to Alertmanager.

use std::collections::BTreeMap;
use std::time::SystemTime;

use cairn_model::Labels;

/// Prometheus' alert states (`inactive` alerts are resolved ones kept for notification).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AlertState {
    Inactive,
    Pending,
    Firing,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Inactive => "inactive",
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
        }
    }
}

/// An alert of an alerting rule; times are nanoseconds since the epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub labels: Labels,
    pub annotations: BTreeMap<String, String>,
    pub state: AlertState,
    pub value: f64,
    pub active_at: i64,
    pub fired_at: Option<i64>,
    pub resolved_at: Option<i64>,
    pub last_sent_at: Option<i64>,
    pub valid_until: Option<i64>,
    pub keep_firing_since: Option<i64>,
}

impl Alert {
    /// Prometheus' `needsSending`: firing or resolved alerts, again once the resend delay passed.
    pub(crate) fn needs_sending(&self, ts: i64, resend_delay_ns: i64) -> bool {
        if self.state == AlertState::Pending {
            return false;
        }
        if self.resolved_at.unwrap_or(i64::MIN) > self.last_sent_at.unwrap_or(i64::MIN) {
            return true;
        }
        self.last_sent_at.unwrap_or(i64::MIN / 2) + resend_delay_ns < ts
    }
}

/// One alert as handed to the notifier (Alertmanager's API fields).
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyAlert {
    /// The alert's labels with the external labels it lacks.
    pub labels: Labels,
    pub annotations: BTreeMap<String, String>,
    pub starts_at: SystemTime,
    /// The resolve time, or how long the alert stays valid without being sent again.
    pub ends_at: SystemTime,
    pub generator_url: String,
}

/// Where alerts go (the server implements it with an Alertmanager client).
pub trait AlertNotifier: Send + Sync {
    fn send(&self, alerts: Vec<NotifyAlert>);
}

pub(crate) fn ns_to_system_time(ns: i64) -> SystemTime {
    if ns >= 0 {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(ns as u64)
    } else {
        SystemTime::UNIX_EPOCH - std::time::Duration::from_nanos(ns.unsigned_abs())
    }
}

pub(crate) fn system_time_to_ns(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}
