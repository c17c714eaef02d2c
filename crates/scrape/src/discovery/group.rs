//! Target groups: what every discovery mechanism produces.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A label set of discovery (Prometheus' `model.LabelSet`), ordered by name.
pub type LabelSet = BTreeMap<String, String>;

/// The label holding a target's address.
pub const ADDRESS_LABEL: &str = "__address__";

/// A set of targets sharing labels, identified by `source` within its
/// discovery mechanism: a new group with the same source replaces the old one,
/// and a group without targets removes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetGroup {
    pub source: String,
    /// Each target's own labels; `__address__` at least.
    pub targets: Vec<LabelSet>,
    /// Labels of every target in the group, below the target's own.
    pub labels: LabelSet,
}

impl TargetGroup {
    /// A group of addresses, as a `static_configs` entry or an SD file lists them.
    pub fn from_addresses<S: Into<String>>(
        source: impl Into<String>,
        addresses: impl IntoIterator<Item = S>,
        labels: LabelSet,
    ) -> Self {
        Self {
            source: source.into(),
            targets: addresses
                .into_iter()
                .map(|a| LabelSet::from([(ADDRESS_LABEL.to_string(), a.into())]))
                .collect(),
            labels,
        }
    }
}

/// The file and HTTP SD entry: `{"targets": [...], "labels": {...}}`, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupWire {
    #[serde(default)]
    targets: Option<Vec<String>>,
    #[serde(default)]
    labels: Option<LabelSet>,
}

fn from_wire(items: Vec<Option<GroupWire>>) -> Result<Vec<(Vec<String>, LabelSet)>, String> {
    items
        .into_iter()
        .map(|item| {
            let g = item.ok_or_else(|| "nil target group item found".to_string())?;
            let labels = g.labels.unwrap_or_default();
            for name in labels.keys() {
                // Prometheus 3 accepts any non-empty UTF-8 label name.
                if name.is_empty() {
                    return Err(format!("{name:?} is not a valid label name"));
                }
            }
            Ok((g.targets.unwrap_or_default(), labels))
        })
        .collect()
}

/// Parses a JSON list of target groups (file SD `.json`, HTTP SD bodies).
pub fn parse_json_groups(body: &[u8]) -> Result<Vec<(Vec<String>, LabelSet)>, String> {
    let items: Vec<Option<GroupWire>> = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    from_wire(items)
}

/// Parses a YAML list of target groups (file SD `.yml`, `.yaml`), strictly.
pub fn parse_yaml_groups(body: &[u8]) -> Result<Vec<(Vec<String>, LabelSet)>, String> {
    let items: Option<Vec<Option<GroupWire>>> = serde_yaml_ng::from_slice(body).map_err(|e| e.to_string())?;
    from_wire(items.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_groups_parse_and_reject_unknown_fields_and_nulls() {
        let groups =
            parse_json_groups(br#"[{"targets":["a:1","b:2"],"labels":{"env":"prod"}},{"targets":[]}]"#).unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].0, vec!["a:1", "b:2"]);
        assert_eq!(groups[0].1["env"], "prod");
        assert!(parse_json_groups(br#"[{"targets":["a:1"],"extra":1}]"#).is_err());
        assert_eq!(parse_json_groups(b"[null]").unwrap_err(), "nil target group item found");
        assert!(parse_json_groups(br#"[{"targets":["a"],"labels":{"":"x"}}]"#).is_err());
    }

    #[test]
    fn yaml_groups_parse_strictly() {
        let groups = parse_yaml_groups(b"- targets: ['a:1']\n  labels:\n    team: x\n").unwrap();
        assert_eq!(groups[0].0, vec!["a:1"]);
        assert_eq!(groups[0].1["team"], "x");
        assert!(parse_yaml_groups(b"- targets: ['a:1']\n  bogus: 1\n").is_err());
        assert!(parse_yaml_groups(b"").unwrap().is_empty());
    }
}
