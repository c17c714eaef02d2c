//! Prometheus' recording and alerting rules: rule files (`file`), Go templates
//! for alert labels and annotations (`template`), group evaluation with alert
//! state (`group`, `alert`), the manager that schedules and reloads groups
//! (`manager`), the status the API shows (`status`) and promtool's rule unit
//! tests (`unit_test`).

mod alert;
mod file;
mod group;
mod manager;
mod metrics;
mod status;
pub mod template;
mod unit_test;

pub use alert::{AlertNotifier, AlertState, NotifyAlert};
pub use file::{
    GroupSpec, RuleFile, RuleFileCheck, RuleKind, RuleSpec, check_rule_files, load_rule_file, parse_rule_file,
    render_rule_checks,
};
pub use group::RuleHealth;
pub use manager::{RuleManager, RuleManagerOptions, RulesConfig};
pub use metrics::{GroupMetrics, RuleMetrics};
pub use status::{AlertStatus, GroupStatus, RuleStatus, alerts_json, rfc3339_nano, rules_json};
pub use unit_test::{RuleTestReport, run_rule_tests};
