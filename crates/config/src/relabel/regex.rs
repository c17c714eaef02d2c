//! The regular expression of a relabelling rule: always anchored at both ends.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

const DEFAULT_PATTERN: &str = "(.*)";

static DEFAULT_REGEX: LazyLock<Regex> =
    LazyLock::new(|| compile(DEFAULT_PATTERN).expect("the default relabel regex compiles"));

/// A relabelling regex as written, and compiled as `^(?s:<pattern>)$` so it
/// must match the whole value, `.` included newlines, as in Prometheus.
#[derive(Clone)]
pub struct RelabelRegex {
    pattern: String,
    compiled: Regex,
    /// Whether the rule left `regex` out, which some actions require.
    is_default: bool,
}

/// Go's regexp has no size limit; long alternations of names are common in
/// relabelling rules, so allow far more than the `regex` crate's default.
const COMPILED_SIZE_LIMIT_BYTES: usize = 256 << 20;

/// Why a relabelling regex does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RegexError(String);

fn compile(pattern: &str) -> Result<Regex, RegexError> {
    // Anchor first, then translate, as Prometheus anchors before Go parses:
    // an unclosed `\Q` then swallows the anchors, as it does in Prometheus.
    let translated = crate::go_regex::translate(&format!("^(?s:{pattern})$")).map_err(RegexError)?;
    regex::RegexBuilder::new(&translated)
        .size_limit(COMPILED_SIZE_LIMIT_BYTES)
        .build()
        .map_err(|e| RegexError(one_line(&e)))
}

impl RelabelRegex {
    /// Compiles `pattern` (RE2 syntax, matched in full).
    pub fn new(pattern: &str) -> Result<Self, RegexError> {
        Ok(Self {
            pattern: pattern.to_string(),
            compiled: compile(pattern)?,
            is_default: false,
        })
    }

    /// The pattern as written, without the anchors.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// The anchored compiled form.
    pub fn regex(&self) -> &Regex {
        &self.compiled
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.compiled.is_match(text)
    }

    /// Whether this is the default `(.*)` of a rule that left `regex` out.
    pub fn is_default(&self) -> bool {
        self.is_default
    }
}

impl Default for RelabelRegex {
    fn default() -> Self {
        Self {
            pattern: DEFAULT_PATTERN.to_string(),
            compiled: DEFAULT_REGEX.clone(),
            is_default: true,
        }
    }
}

impl PartialEq for RelabelRegex {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern && self.is_default == other.is_default
    }
}

impl fmt::Debug for RelabelRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.pattern)
    }
}

impl fmt::Display for RelabelRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

impl Serialize for RelabelRegex {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.pattern)
    }
}

impl<'de> Deserialize<'de> for RelabelRegex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // An explicit null is the empty pattern, as in Prometheus.
        let pattern = crate::serde_util::scalar_string(deserializer)?;
        Self::new(&pattern).map_err(|e| serde::de::Error::custom(format!("invalid regex {pattern:?}: {e}")))
    }
}

/// The regex crate's errors span several lines with a caret diagram; a
/// configuration error fits on one.
fn one_line(error: &regex::Error) -> String {
    match error {
        regex::Error::Syntax(text) => text
            .lines()
            .filter_map(|l| l.strip_prefix("error: "))
            .next()
            .unwrap_or(text)
            .to_string(),
        other => other.to_string(),
    }
}
