//! Rule files: Prometheus' YAML format, read strictly and validated as
//! Prometheus validates them at load (and `promtool check rules` does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::template;
use cairn_config::duration::option_std as serde_opt;

mod positions;

/// One rule file, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleFile {
    pub path: PathBuf,
    pub groups: Vec<GroupSpec>,
}

/// One group as written in a file.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSpec {
    pub name: String,
    /// The file the group came from, as given to the loader (part of the group's identity).
    pub file: String,
    /// None: the global evaluation interval.
    pub interval: Option<Duration>,
    /// None: the global rule query offset.
    pub query_offset: Option<Duration>,
    /// 0: no limit.
    pub limit: usize,
    pub labels: BTreeMap<String, String>,
    pub rules: Vec<RuleSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RuleKind {
    /// A recording rule and the metric name it writes.
    Record(String),
    /// An alerting rule and its alert name.
    Alert(String),
}

/// One rule as written in a file; `labels` already hold the group's labels
/// under the rule's own (a rule's label wins).
#[derive(Debug, Clone, PartialEq)]
pub struct RuleSpec {
    pub kind: RuleKind,
    /// The expression as Prometheus prints it back (what `/api/v1/rules` shows).
    pub query: String,
    pub for_duration: Duration,
    pub keep_firing_for: Duration,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

impl RuleSpec {
    pub fn name(&self) -> &str {
        match &self.kind {
            RuleKind::Record(n) | RuleKind::Alert(n) => n,
        }
    }
}

/// What checking one file found: the number of rules, or every error.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleFileCheck {
    pub path: PathBuf,
    pub result: Result<usize, Vec<String>>,
    /// promtool's duplicate-rules lint (same name and labels twice), when it found any.
    pub lint: Option<String>,
}

/// Checks each file as `promtool check rules` does (with its default duplicate-rules lint).
pub fn check_rule_files(paths: &[PathBuf]) -> Vec<RuleFileCheck> {
    paths
        .iter()
        .map(|path| {
            let loaded = load_rule_file(path);
            let lint = loaded.as_ref().ok().and_then(|f| duplicate_rules_lint(&f.groups));
            RuleFileCheck {
                path: path.clone(),
                result: loaded.map(|f| f.groups.iter().map(|g| g.rules.len()).sum()),
                lint,
            }
        })
        .collect()
}

/// promtool's report of `check rules`: (stdout, stderr, exit code). Exit 1 on
/// errors; 3 on lint findings only when `lint_fatal`; else 0.
pub fn render_rule_checks(checks: &[RuleFileCheck], lint_fatal: bool) -> (String, String, i32) {
    let (mut out, mut err) = (String::new(), String::new());
    let (mut errors, mut lints) = (false, false);
    for c in checks {
        out.push_str(&format!("Checking {}\n", c.path.display()));
        match (&c.result, &c.lint) {
            (Err(es), _) => {
                errors = true;
                err.push_str("  FAILED:\n");
                for e in es {
                    err.push_str(e);
                    err.push('\n');
                }
            }
            (Ok(_), Some(lint)) => {
                lints = true;
                err.push_str("  FAILED:\n");
                err.push_str(&format!("lint error {lint}\n"));
            }
            (Ok(n), None) => out.push_str(&format!("  SUCCESS: {n} rules found\n")),
        }
        out.push('\n');
    }
    let code = if errors {
        1
    } else if lints && lint_fatal {
        3
    } else {
        0
    };
    (out, err, code)
}

fn duplicate_rules_lint(groups: &[GroupSpec]) -> Option<String> {
    let mut rules: Vec<(&str, &BTreeMap<String, String>)> = groups
        .iter()
        .flat_map(|g| g.rules.iter().map(|r| (r.name(), &r.labels)))
        .collect();
    rules.sort();
    let mut duplicates: Vec<(&str, &BTreeMap<String, String>)> = Vec::new();
    for pair in rules.windows(2) {
        if pair[0] == pair[1] && duplicates.last() != Some(&pair[1]) {
            duplicates.push(pair[1]);
        }
    }
    if duplicates.is_empty() {
        return None;
    }
    let mut msg = format!("{} duplicate rule(s) found.\n", duplicates.len());
    for (metric, labels) in duplicates {
        msg.push_str(&format!("Metric: {metric}\nLabel(s):\n"));
        for (k, v) in labels {
            msg.push_str(&format!("\t{k}: {v}\n"));
        }
    }
    msg.push_str("Might cause inconsistency while recording expressions");
    Some(msg)
}

/// Reads and validates one rule file; errors are prefixed with the file name.
pub fn load_rule_file(path: &Path) -> Result<RuleFile, Vec<String>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("{name}: {e}")])?;
    parse_rule_file(&text, &name).map(|groups| RuleFile {
        path: path.to_path_buf(),
        groups,
    })
}

/// Parses and validates the text of a rule file named `file`.
pub fn parse_rule_file(text: &str, file: &str) -> Result<Vec<GroupSpec>, Vec<String>> {
    let raw: Option<RawFile> = serde_yaml_ng::from_str(text).map_err(|e| vec![format!("{file}: {e}")])?;
    let raw = raw.unwrap_or_default();
    let positions = positions::rule_positions(text);
    let mut errors = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut groups = Vec::with_capacity(raw.groups.len());
    for (j, g) in raw.groups.into_iter().enumerate() {
        if g.name.is_empty() {
            errors.push(format!("{file}: 0:0: Groupname must not be empty"));
        }
        if !seen.insert(g.name.clone()) {
            errors.push(format!(
                "{file}: 0:0: groupname: {:?} is repeated in the same file",
                g.name
            ));
        }
        for (k, v) in &g.labels {
            check_label(k, &v.0, &mut errors, file);
        }
        let group_labels: BTreeMap<String, String> = g.labels.into_iter().map(|(k, v)| (k, v.0)).collect();
        let mut rules = Vec::with_capacity(g.rules.len());
        for (i, r) in g.rules.into_iter().enumerate() {
            let name = if r.alert.0.is_empty() {
                r.record.0.clone()
            } else {
                r.alert.0.clone()
            };
            let mut rule_errors = Vec::new();
            let spec = validate_rule(r, &group_labels, &mut rule_errors);
            let at = positions.get(j).and_then(|rs| rs.get(i)).copied().unwrap_or_default();
            for (node, e) in rule_errors {
                let prefix = match node {
                    Node::None => String::new(),
                    Node::Record => format!("{}:{}: ", at.record.0, at.record.1),
                    Node::Expr => format!("{}:{}: ", at.expr.0, at.expr.1),
                    Node::RecordAndAlert => {
                        format!("{}:{}: {}:{}: ", at.record.0, at.record.1, at.alert.0, at.alert.1)
                    }
                };
                errors.push(format!(
                    "{file}: {prefix}group {:?}, rule {}, {:?}: {e}",
                    g.name,
                    i + 1,
                    name
                ));
            }
            rules.extend(spec);
        }
        groups.push(GroupSpec {
            name: g.name,
            file: file.to_string(),
            interval: g.interval.filter(|d| !d.is_zero()),
            query_offset: g.query_offset,
            limit: g.limit,
            labels: group_labels,
            rules,
        });
    }
    if errors.is_empty() { Ok(groups) } else { Err(errors) }
}

fn check_label(name: &str, _value: &str, errors: &mut Vec<String>, file: &str) {
    // Prometheus 3 validates names as UTF-8: any non-empty name but `__name__`.
    if name.is_empty() || name == "__name__" {
        errors.push(format!("{file}: invalid label name: {name}"));
    }
}

/// The YAML value an error is about (Prometheus prefixes its position).
enum Node {
    None,
    Record,
    Expr,
    RecordAndAlert,
}

fn validate_rule(
    r: RawRule,
    group_labels: &BTreeMap<String, String>,
    errors: &mut Vec<(Node, String)>,
) -> Option<RuleSpec> {
    let (record, alert) = (r.record.0, r.alert.0);
    if !record.is_empty() && !alert.is_empty() {
        errors.push((
            Node::RecordAndAlert,
            "only one of 'record' and 'alert' must be set".into(),
        ));
    }
    if record.is_empty() && alert.is_empty() {
        errors.push((Node::RecordAndAlert, "one of 'record' or 'alert' must be set".into()));
    }
    let mut query = None;
    if r.expr.0.is_empty() {
        errors.push((Node::Expr, "field 'expr' must be set in rule".into()));
    } else {
        match cairn_promql::parse(&r.expr.0) {
            Ok(expr) => query = Some(expr.to_string()),
            Err(e) => errors.push((
                Node::Expr,
                format!("could not parse expression: {}", strip_query_prefix(&e.to_string())),
            )),
        }
    }
    let for_duration = r.for_duration.unwrap_or_default();
    let keep_firing_for = r.keep_firing_for.unwrap_or_default();
    if !record.is_empty() {
        if !r.annotations.is_empty() {
            errors.push((Node::Record, "invalid field 'annotations' in recording rule".into()));
        }
        if !for_duration.is_zero() {
            errors.push((Node::Record, "invalid field 'for' in recording rule".into()));
        }
        if !keep_firing_for.is_zero() {
            errors.push((Node::Record, "invalid field 'keep_firing_for' in recording rule".into()));
        }
        if record.contains('{') || record.contains('}') {
            errors.push((
                Node::Record,
                format!("braces present in the recording rule name; should it be in expr?: {record}"),
            ));
        }
    }
    for k in r.labels.keys() {
        if k.is_empty() || k == "__name__" {
            errors.push((Node::None, format!("invalid label name: {k}")));
        }
    }
    for k in r.annotations.keys() {
        if k.is_empty() {
            errors.push((Node::None, format!("invalid annotation name: {k}")));
        }
    }
    if !alert.is_empty() {
        let name = format!("__alert_{alert}");
        for (k, v) in &r.labels {
            if let Err(e) = template::parse_alert_template(&name, &v.0) {
                errors.push((Node::None, format!("label {k:?}: {e}")));
            }
        }
        for (k, v) in &r.annotations {
            if let Err(e) = template::parse_alert_template(&name, &v.0) {
                errors.push((Node::None, format!("annotation {k:?}: {e}")));
            }
        }
    }
    if !errors.is_empty() {
        return None;
    }
    let mut labels = group_labels.clone();
    labels.extend(r.labels.into_iter().map(|(k, v)| (k, v.0)));
    Some(RuleSpec {
        kind: if alert.is_empty() {
            RuleKind::Record(record)
        } else {
            RuleKind::Alert(alert)
        },
        query: query.unwrap_or_default(),
        for_duration,
        keep_firing_for,
        labels,
        annotations: r.annotations.into_iter().map(|(k, v)| (k, v.0)).collect(),
    })
}

/// cairn-promql words its parse errors for the query API (`invalid parameter "query": ...`);
/// a rule file names no parameter.
fn strip_query_prefix(message: &str) -> &str {
    message.strip_prefix("invalid parameter \"query\": ").unwrap_or(message)
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    groups: Vec<RawGroup>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    #[serde(default)]
    name: String,
    #[serde(default, with = "serde_opt")]
    interval: Option<Duration>,
    #[serde(default, with = "serde_opt")]
    query_offset: Option<Duration>,
    #[serde(default)]
    limit: usize,
    #[serde(default)]
    rules: Vec<RawRule>,
    #[serde(default)]
    labels: BTreeMap<String, Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    #[serde(default)]
    record: Scalar,
    #[serde(default)]
    alert: Scalar,
    #[serde(default)]
    expr: Scalar,
    #[serde(default, rename = "for", with = "serde_opt")]
    for_duration: Option<Duration>,
    #[serde(default, with = "serde_opt")]
    keep_firing_for: Option<Duration>,
    #[serde(default)]
    labels: BTreeMap<String, Scalar>,
    #[serde(default)]
    annotations: BTreeMap<String, Scalar>,
}

/// A YAML scalar read as text, as Go's YAML decoder fills a string
/// (`expr: 1`, `severity: 2`); null is empty.
#[derive(Debug, Default)]
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_yaml_ng::Value;
        match Value::deserialize(d)? {
            Value::Null => Ok(Scalar(String::new())),
            Value::Bool(b) => Ok(Scalar(b.to_string())),
            Value::Number(n) => Ok(Scalar(n.to_string())),
            Value::String(s) => Ok(Scalar(s)),
            other => Err(serde::de::Error::custom(format!("expected a string, found {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests;
