//! Secrets: strings that never appear in logs, errors or the effective configuration.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What a secret shows instead of its value, as Prometheus' `/api/v1/status/config` does.
pub const SECRET_PLACEHOLDER: &str = "<secret>";

/// A password, token or key. `Debug`, `Display` and serialization print
/// `<secret>`; only [`Secret::expose`] gives the value.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret value itself, for building requests.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SECRET_PLACEHOLDER)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SECRET_PLACEHOLDER)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(SECRET_PLACEHOLDER)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints_its_value() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s}"), "<secret>");
        assert_eq!(format!("{s:?}"), "<secret>");
        assert_eq!(serde_yaml_ng::to_string(&s).unwrap().trim(), "<secret>");
        assert_eq!(s.expose(), "hunter2");
    }
}
