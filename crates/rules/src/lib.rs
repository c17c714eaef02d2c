//! Prometheus' recording and alerting rules: rule files (`file`), Go templates
//! for alert labels and annotations (`template`), and their evaluation.

mod duration;
mod file;
pub mod template;

pub use duration::{format_duration, parse_duration};
pub use file::{
    GroupSpec, RuleFile, RuleFileCheck, RuleKind, RuleSpec, check_rule_files, load_rule_file, parse_rule_file,
};
