//! Relabelling: the rules of `relabel_configs`, `metric_relabel_configs`,
//! `alert_relabel_configs` and `write_relabel_configs`, and the engine that
//! applies them with Prometheus' semantics.

mod builder;
mod expand;
mod process;
mod regex;

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use builder::LabelsBuilder;
pub use expand::expand;
pub use process::{process, process_builder};
pub use regex::{RegexError, RelabelRegex};

use crate::names::NameValidationScheme;

/// What one relabelling rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RelabelAction {
    /// Sets `target_label` to the expanded `replacement` when `regex` matches.
    #[default]
    Replace,
    /// Drops the label set unless `regex` matches the joined source values.
    Keep,
    /// Drops the label set when `regex` matches the joined source values.
    Drop,
    /// Drops the label set unless the joined source values equal `target_label`'s value.
    KeepEqual,
    /// Drops the label set when the joined source values equal `target_label`'s value.
    DropEqual,
    /// Sets `target_label` to a hash of the joined source values modulo `modulus`.
    HashMod,
    /// Copies every label whose name matches `regex` to the name `replacement` expands to.
    LabelMap,
    /// Removes every label whose name matches `regex`.
    LabelDrop,
    /// Removes every label whose name does not match `regex`.
    LabelKeep,
    /// Sets `target_label` to the joined source values in lower case.
    Lowercase,
    /// Sets `target_label` to the joined source values in upper case.
    Uppercase,
}

impl RelabelAction {
    pub const ALL: [RelabelAction; 11] = [
        Self::Replace,
        Self::Keep,
        Self::Drop,
        Self::KeepEqual,
        Self::DropEqual,
        Self::HashMod,
        Self::LabelMap,
        Self::LabelDrop,
        Self::LabelKeep,
        Self::Lowercase,
        Self::Uppercase,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replace => "replace",
            Self::Keep => "keep",
            Self::Drop => "drop",
            Self::KeepEqual => "keepequal",
            Self::DropEqual => "dropequal",
            Self::HashMod => "hashmod",
            Self::LabelMap => "labelmap",
            Self::LabelDrop => "labeldrop",
            Self::LabelKeep => "labelkeep",
            Self::Lowercase => "lowercase",
            Self::Uppercase => "uppercase",
        }
    }

    /// Parses an action name, ignoring case as Prometheus does.
    pub fn parse(text: &str) -> Option<Self> {
        let lower = text.to_lowercase();
        Self::ALL.into_iter().find(|a| a.as_str() == lower)
    }
}

impl fmt::Display for RelabelAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RelabelAction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RelabelAction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown relabel action {text:?}")))
    }
}

pub const DEFAULT_SEPARATOR: &str = ";";
pub const DEFAULT_REPLACEMENT: &str = "$1";

/// One relabelling rule, with Prometheus' defaults: action `replace`,
/// regex `(.*)`, separator `;`, replacement `$1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelabelConfig {
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::null_as_default"
    )]
    pub source_labels: Vec<String>,
    #[serde(deserialize_with = "crate::serde_util::scalar_string")]
    pub separator: String,
    #[serde(skip_serializing_if = "RelabelRegex::is_default")]
    pub regex: RelabelRegex,
    #[serde(skip_serializing_if = "is_zero_u64")]
    #[serde(deserialize_with = "crate::serde_util::go_uint")]
    pub modulus: u64,
    #[serde(
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::scalar_string"
    )]
    pub target_label: String,
    #[serde(deserialize_with = "crate::serde_util::scalar_string")]
    pub replacement: String,
    pub action: RelabelAction,
    /// Which label names `replace` and `labelmap` may produce; set from the
    /// enclosing configuration when it is validated.
    #[serde(skip)]
    pub name_validation: NameValidationScheme,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

impl Default for RelabelConfig {
    fn default() -> Self {
        Self {
            source_labels: Vec::new(),
            separator: DEFAULT_SEPARATOR.to_string(),
            regex: RelabelRegex::default(),
            modulus: 0,
            target_label: String::new(),
            replacement: DEFAULT_REPLACEMENT.to_string(),
            action: RelabelAction::Replace,
            name_validation: NameValidationScheme::Utf8,
        }
    }
}

/// Why a relabelling rule is invalid; the messages are Prometheus'.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RelabelConfigError {
    #[error("relabel configuration for hashmod requires non-zero modulus")]
    ZeroModulus,
    #[error("relabel configuration for {0} action requires 'target_label' value")]
    MissingTargetLabel(RelabelAction),
    #[error("{label:?} is invalid 'target_label' for {action} action")]
    InvalidTargetLabel { label: String, action: RelabelAction },
    #[error("'replacement' can not be set for {0} action")]
    ReplacementNotAllowed(RelabelAction),
    #[error("{replacement:?} is invalid 'replacement' for {action} action")]
    InvalidReplacement { replacement: String, action: RelabelAction },
    #[error("{0} action requires only 'source_labels' and `target_label`, and no other fields")]
    OnlySourceAndTarget(RelabelAction),
    #[error("{0} action requires only 'regex', and no other fields")]
    OnlyRegex(RelabelAction),
    #[error("{0:?} is not a valid label name")]
    InvalidSourceLabel(String),
}

impl RelabelConfig {
    /// Checks the rule as Prometheus does when it loads a configuration, and
    /// fixes which label names the rule may produce.
    pub fn validate(&mut self, scheme: NameValidationScheme) -> Result<(), RelabelConfigError> {
        use RelabelAction::*;
        self.name_validation = scheme;
        let action = self.action;
        if let Some(bad) = self.source_labels.iter().find(|l| l.is_empty()) {
            return Err(RelabelConfigError::InvalidSourceLabel(bad.clone()));
        }
        if action == HashMod && self.modulus == 0 {
            return Err(RelabelConfigError::ZeroModulus);
        }
        let needs_target = matches!(
            action,
            Replace | HashMod | Lowercase | Uppercase | KeepEqual | DropEqual
        );
        if needs_target && self.target_label.is_empty() {
            return Err(RelabelConfigError::MissingTargetLabel(action));
        }
        let invalid_target = || RelabelConfigError::InvalidTargetLabel {
            label: self.target_label.clone(),
            action,
        };
        let templated_target = self.target_label.contains('$');
        if action == Replace && !templated_target && !scheme.is_valid_label_name(&self.target_label) {
            return Err(invalid_target());
        }
        if action == Replace && templated_target && !scheme.is_valid_templated_label_name(&self.target_label) {
            return Err(invalid_target());
        }
        let copies_value = matches!(action, Lowercase | Uppercase | KeepEqual | DropEqual);
        if copies_value && !scheme.is_valid_label_name(&self.target_label) {
            return Err(invalid_target());
        }
        if copies_value && self.replacement != DEFAULT_REPLACEMENT {
            return Err(RelabelConfigError::ReplacementNotAllowed(action));
        }
        if action == LabelMap && !scheme.is_valid_templated_label_name(&self.replacement) {
            return Err(RelabelConfigError::InvalidReplacement {
                replacement: self.replacement.clone(),
                action,
            });
        }
        if action == HashMod && !scheme.is_valid_label_name(&self.target_label) {
            return Err(invalid_target());
        }
        if matches!(action, KeepEqual | DropEqual)
            && (!self.regex.is_default()
                || self.modulus != 0
                || self.separator != DEFAULT_SEPARATOR
                || self.replacement != DEFAULT_REPLACEMENT)
        {
            return Err(RelabelConfigError::OnlySourceAndTarget(action));
        }
        if matches!(action, LabelDrop | LabelKeep)
            && (!self.source_labels.is_empty()
                || !self.target_label.is_empty()
                || self.modulus != 0
                || self.separator != DEFAULT_SEPARATOR
                || self.replacement != DEFAULT_REPLACEMENT)
        {
            return Err(RelabelConfigError::OnlyRegex(action));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
