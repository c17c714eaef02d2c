//! Small serde helpers for YAML as Prometheus reads it.

use serde::{Deserialize, Deserializer};

/// Reads an explicit `null` (`key:` with nothing after it) as the type's
/// default, as Go's YAML decoder does, instead of failing.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
