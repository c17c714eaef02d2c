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

/// A string written as any YAML scalar: Go's YAML decoder reads `9100`,
/// `1.5` or `true` into a string field as written, so Prometheus accepts
/// `job_name: 123` and `labels: {port: 9100}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ScalarString(pub String);

/// A [`ScalarString`] or `null`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NullableScalar(pub Option<String>);

impl<'de> Deserialize<'de> for NullableScalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self(Option::<ScalarString>::deserialize(deserializer)?.map(|s| s.0)))
    }
}

impl<'de> Deserialize<'de> for ScalarString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ScalarString;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ScalarString, E> {
                Ok(ScalarString(v.to_string()))
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ScalarString, E> {
                Ok(ScalarString(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ScalarString, E> {
                Ok(ScalarString(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ScalarString, E> {
                Ok(ScalarString(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ScalarString, E> {
                Ok(ScalarString(v.to_string()))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<ScalarString, E> {
                Ok(ScalarString::default())
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<ScalarString, E> {
                Ok(ScalarString::default())
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A string field that also takes numbers and booleans as written (see
/// [`ScalarString`]); `null` is empty.
pub fn scalar_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(ScalarString::deserialize(deserializer)?.0)
}

/// A boolean as Go's YAML 1.1 decoder reads one: besides `true`/`false`,
/// also `yes`/`no`, `on`/`off` and `y`/`n` in their usual capitalisations.
pub fn go_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a boolean")
        }
        fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<bool, E> {
            Ok(v)
        }
        /// Go leaves a field given as `null` at its zero value.
        fn visit_unit<E: serde::de::Error>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<bool, E> {
            match v {
                "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => Ok(true),
                "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => Ok(false),
                _ => Err(E::invalid_type(serde::de::Unexpected::Str(v), &self)),
            }
        }
    }
    deserializer.deserialize_any(Visitor)
}

/// An optional [`go_bool`]; `null` is unset.
pub fn go_opt_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    struct Wrapped(#[serde(deserialize_with = "go_bool")] bool);
    Ok(Option::<Wrapped>::deserialize(deserializer)?.map(|w| w.0))
}

/// An unsigned integer as Go's YAML decoder reads one: also from a float
/// with an exact integer value (`1e3`); `null` is zero.
pub fn go_uint<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a non-negative integer")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
        }
        fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
            // 2^64 itself is not representable; everything below with no fraction is.
            if (0.0..18_446_744_073_709_551_616.0).contains(&v) && v.fract() == 0.0 {
                Ok(v as u64)
            } else {
                Err(E::invalid_value(serde::de::Unexpected::Float(v), &self))
            }
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<u64, E> {
            Ok(0)
        }
    }
    deserializer.deserialize_any(Visitor)
}
