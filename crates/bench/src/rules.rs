//! Prometheus rule files (`groups: [{name, rules: [{alert|record, expr}]}]`):
//! the read load of `cairn bench`. Each rule's `expr` is run as an instant
//! query every query interval, as a rule evaluator would.

use serde::Deserialize;

/// The node_exporter alerting rules of VictoriaMetrics' prometheus-benchmark
/// (MIT license), the default read load.
pub const DEFAULT_RULES_YAML: &str = include_str!("../data/node-exporter-alerts.yaml");

/// One rule to evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `alert` or `record` name, or `<group>#<index>` when neither is set.
    pub name: String,
    pub group: String,
    pub expr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("rules file is not valid YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("group {group:?}: rule {index} has an empty expr")]
    EmptyExpr { group: String, index: usize },
    #[error("rules file has no rules")]
    NoRules,
}

#[derive(Deserialize)]
struct File {
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    name: String,
    #[serde(default)]
    rules: Vec<RawRule>,
}

#[derive(Deserialize)]
struct RawRule {
    alert: Option<String>,
    record: Option<String>,
    #[serde(default)]
    expr: String,
}

/// Parses a Prometheus rule file; unknown keys (`for`, `labels`,
/// `annotations`, `concurrency`, ...) are ignored.
pub fn parse_rules(yaml: &str) -> Result<Vec<Rule>, RulesError> {
    let file: File = serde_yaml_ng::from_str(yaml)?;
    let mut out = Vec::new();
    for g in file.groups {
        for (index, r) in g.rules.into_iter().enumerate() {
            let expr = r.expr.trim().to_string();
            if expr.is_empty() {
                return Err(RulesError::EmptyExpr { group: g.name, index });
            }
            let name = r.alert.or(r.record).unwrap_or_else(|| format!("{}#{index}", g.name));
            out.push(Rule {
                name,
                group: g.name.clone(),
                expr,
            });
        }
    }
    if out.is_empty() {
        return Err(RulesError::NoRules);
    }
    Ok(out)
}

/// The embedded default rules.
pub fn default_rules() -> Vec<Rule> {
    parse_rules(DEFAULT_RULES_YAML).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rules_parse() {
        let rules = parse_rules(DEFAULT_RULES_YAML).unwrap();
        // 36 `expr:` lines, one of them in a comment.
        assert_eq!(rules.len(), 35);
        assert_eq!(rules[0].name, "HostOutOfMemory");
        assert_eq!(rules[0].group, "nodeexporter");
        assert_eq!(
            rules[0].expr,
            "(node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < .10)"
        );
        assert!(rules.iter().all(|r| !r.expr.is_empty()));
    }

    #[test]
    fn record_rules_and_errors() {
        let y = "groups:\n- name: g\n  rules:\n  - record: job:up:sum\n    expr: sum(up) by (job)\n  - expr: up\n";
        let rules = parse_rules(y).unwrap();
        assert_eq!(rules[0].name, "job:up:sum");
        assert_eq!(rules[1].name, "g#1");
        assert!(matches!(
            parse_rules("groups:\n- name: g\n  rules:\n  - alert: A\n"),
            Err(RulesError::EmptyExpr { .. })
        ));
        assert!(matches!(parse_rules("groups: []"), Err(RulesError::NoRules)));
        assert!(matches!(parse_rules("groups: ["), Err(RulesError::Yaml(_))));
    }
}
