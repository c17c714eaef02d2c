//! Label name validity under Prometheus' two name validation schemes.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which label and metric names are valid: Prometheus 3 accepts any
/// non-empty UTF-8 name by default (`utf8`); `legacy` restricts them to
/// `[a-zA-Z_][a-zA-Z0-9_]*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NameValidationScheme {
    #[default]
    Utf8,
    Legacy,
}

/// A legacy label name in which `$1`, `$name` or `${name}` stand for parts
/// still to be filled in.
static LEGACY_TEMPLATED_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$").expect("the templated label name regex compiles")
});

impl NameValidationScheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Utf8 => "utf8",
            Self::Legacy => "legacy",
        }
    }

    pub fn is_valid_label_name(self, name: &str) -> bool {
        match self {
            Self::Utf8 => !name.is_empty(),
            Self::Legacy => is_legacy_label_name(name),
        }
    }

    /// Whether `name` is valid once its `$` references are filled in, as far
    /// as can be told before: a relabelling target label or `labelmap` replacement.
    pub fn is_valid_templated_label_name(self, name: &str) -> bool {
        match self {
            Self::Utf8 => !name.is_empty(),
            Self::Legacy => LEGACY_TEMPLATED_NAME.is_match(name),
        }
    }
}

pub fn is_legacy_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z' | b'A'..=b'Z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A job's scheme, where an empty string means "as in `global`".
pub(crate) fn deserialize_optional_scheme<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<NameValidationScheme>, D::Error> {
    match Option::<String>::deserialize(deserializer)?.as_deref() {
        None | Some("") => Ok(None),
        Some(text) => {
            NameValidationScheme::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(text)).map(Some)
        }
    }
}

impl fmt::Display for NameValidationScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for NameValidationScheme {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for NameValidationScheme {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            // Left empty, Prometheus uses its default.
            "utf8" | "" => Ok(Self::Utf8),
            "legacy" => Ok(Self::Legacy),
            _ => Err(serde::de::Error::custom(format!(
                "unknown name validation method specified, must be either '', 'legacy' or 'utf8', got {text}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_valid_per_scheme() {
        assert!(NameValidationScheme::Utf8.is_valid_label_name("foo.bar/baz"));
        assert!(!NameValidationScheme::Utf8.is_valid_label_name(""));
        assert!(NameValidationScheme::Legacy.is_valid_label_name("_foo9"));
        assert!(!NameValidationScheme::Legacy.is_valid_label_name("9foo"));
        assert!(!NameValidationScheme::Legacy.is_valid_label_name("foo.bar"));
        assert!(NameValidationScheme::Legacy.is_valid_templated_label_name("${1}_x"));
        assert!(NameValidationScheme::Legacy.is_valid_templated_label_name("$1"));
        assert!(NameValidationScheme::Legacy.is_valid_templated_label_name("foo_$name"));
        assert!(!NameValidationScheme::Legacy.is_valid_templated_label_name("foo-$1"));
        assert!(!NameValidationScheme::Legacy.is_valid_templated_label_name("$"));
    }
}
