use std::fmt;

use regex::Regex;

use crate::text_cache::TextCache;

/// The four PromQL matcher operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchOp {
    Equal,
    NotEqual,
    RegexMatch,
    RegexNoMatch,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatcherError {
    #[error("invalid regular expression {pattern:?}: {reason}")]
    InvalidRegex { pattern: String, reason: String },
}

/// A label matcher. Regexes are fully anchored, as in Prometheus.
///
/// Matching a missing label is matching the empty string, so `foo=""` selects
/// series without `foo` and `foo!=""` selects series that have it.
#[derive(Clone)]
pub struct Matcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
    kind: Kind,
}

/// How a matcher is evaluated; regexes get literal fast paths.
#[derive(Clone)]
enum Kind {
    Literal,
    /// `a|b|c` of plain literals: a sorted set.
    Alternation(Vec<String>),
    /// `prefix.*`: a literal prefix then anything.
    Prefix(String),
    /// `.*`: every value, including empty.
    Any,
    /// `.+`: every non-empty value.
    NonEmpty,
    Regex(Box<Regex>),
}

impl Matcher {
    pub fn new(op: MatchOp, name: impl Into<String>, value: impl Into<String>) -> Result<Self, MatcherError> {
        let name = name.into();
        let value = value.into();
        let kind = match op {
            MatchOp::Equal | MatchOp::NotEqual => Kind::Literal,
            MatchOp::RegexMatch | MatchOp::RegexNoMatch => compile(&value)?,
        };
        Ok(Self { name, op, value, kind })
    }

    /// `name="value"`, which cannot fail.
    pub fn equal(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            op: MatchOp::Equal,
            value: value.into(),
            kind: Kind::Literal,
        }
    }

    /// Whether `value` (the empty string for a missing label) satisfies the matcher.
    pub fn matches(&self, value: &str) -> bool {
        let positive = match &self.kind {
            Kind::Literal => value == self.value,
            Kind::Alternation(set) => set.binary_search_by(|s| s.as_str().cmp(value)).is_ok(),
            Kind::Prefix(p) => value.starts_with(p.as_str()),
            Kind::Any => true,
            Kind::NonEmpty => !value.is_empty(),
            Kind::Regex(re) => re.is_match(value),
        };
        match self.op {
            MatchOp::Equal | MatchOp::RegexMatch => positive,
            MatchOp::NotEqual | MatchOp::RegexNoMatch => !positive,
        }
    }

    /// True if the matcher accepts a series that lacks the label.
    pub fn matches_empty(&self) -> bool {
        self.matches("")
    }

    /// For a positive matcher, the exact finite set of values it accepts, if
    /// known without scanning (`=` and plain alternations). Lets an index look
    /// values up instead of iterating all of them.
    pub fn set_values(&self) -> Option<Vec<&str>> {
        match (&self.op, &self.kind) {
            (MatchOp::Equal, _) => Some(vec![self.value.as_str()]),
            (MatchOp::RegexMatch, Kind::Literal) => Some(vec![self.value.as_str()]),
            (MatchOp::RegexMatch, Kind::Alternation(set)) => Some(set.iter().map(String::as_str).collect()),
            _ => None,
        }
    }

    /// A literal prefix every accepted value starts with (positive matchers
    /// only), so an index can range-scan sorted values.
    pub fn literal_prefix(&self) -> Option<&str> {
        match (&self.op, &self.kind) {
            (MatchOp::RegexMatch, Kind::Prefix(p)) => Some(p),
            (MatchOp::RegexMatch, Kind::NonEmpty) => Some(""),
            _ => None,
        }
    }
}

/// Regex syntax characters; a pattern without them is a literal.
fn is_meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$'
    )
}

/// Patterns compiled before, by pattern: dashboards and alert rules send the
/// same regexes again and again, and compiling one (its NFA, literal
/// analysis) costs more than evaluating a small query.
static COMPILED: TextCache<Kind> = TextCache::new(256);
const MAX_COMPILED_PATTERN_LEN: usize = 1024;

/// Whether `text` may hold a counted repetition (`{3}`, `{2,}`, `{,5}`), the
/// one construct whose compiled size grows far beyond the text's: such
/// patterns (and queries holding them) are compiled every time rather than
/// kept in a cache. Label matcher braces are never followed by a digit or a
/// comma.
pub fn may_repeat_count(text: &str) -> bool {
    text.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'{' && (w[1].is_ascii_digit() || w[1] == b','))
}

fn compile(pattern: &str) -> Result<Kind, MatcherError> {
    let cacheable = pattern.len() <= MAX_COMPILED_PATTERN_LEN && !may_repeat_count(pattern);
    if cacheable && let Some(kind) = COMPILED.get(pattern) {
        return Ok(Kind::clone(&kind));
    }
    let kind = compile_uncached(pattern)?;
    if cacheable {
        COMPILED.insert(pattern, kind.clone());
    }
    Ok(kind)
}

fn compile_uncached(pattern: &str) -> Result<Kind, MatcherError> {
    // Compile even when a fast path applies, so invalid patterns are always rejected.
    let re = Regex::new(&format!("^(?s:{pattern})$")).map_err(|e| MatcherError::InvalidRegex {
        pattern: pattern.to_string(),
        reason: e.to_string(),
    })?;
    if pattern == ".*" {
        return Ok(Kind::Any);
    }
    if pattern == ".+" {
        return Ok(Kind::NonEmpty);
    }
    if !pattern.chars().any(is_meta) {
        return Ok(Kind::Literal);
    }
    if let Some(prefix) = pattern.strip_suffix(".*")
        && !prefix.chars().any(is_meta)
    {
        return Ok(Kind::Prefix(prefix.to_string()));
    }
    if pattern.contains('|') && pattern.split('|').all(|alt| !alt.chars().any(is_meta)) {
        let mut set: Vec<String> = pattern.split('|').map(str::to_string).collect();
        set.sort_unstable();
        set.dedup();
        return Ok(Kind::Alternation(set));
    }
    Ok(Kind::Regex(Box::new(re)))
}

impl fmt::Debug for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            MatchOp::Equal => "=",
            MatchOp::NotEqual => "!=",
            MatchOp::RegexMatch => "=~",
            MatchOp::RegexNoMatch => "!~",
        };
        write!(f, "{}{}{:?}", self.name, op, self.value)
    }
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.op == other.op && self.value == other.value
    }
}
impl Eq for Matcher {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(op: MatchOp, pattern: &str, value: &str, expected: bool) {
        let m = Matcher::new(op, "l", pattern).unwrap();
        assert_eq!(m.matches(value), expected, "{m} on {value:?}");
    }

    #[test]
    fn matcher_semantics() {
        use MatchOp::*;
        check(Equal, "a", "a", true);
        check(Equal, "a", "b", false);
        check(Equal, "", "", true);
        check(NotEqual, "a", "", true);
        check(RegexMatch, "a|b", "b", true);
        check(RegexMatch, "a|b", "ab", false);
        check(RegexMatch, "a.*", "abc", true);
        check(RegexMatch, "a.*", "ba", false);
        check(RegexMatch, ".*", "", true);
        check(RegexMatch, ".+", "", false);
        check(RegexMatch, "b", "abc", false); // anchored
        check(RegexMatch, "(a|b)c", "bc", true);
        check(RegexMatch, "a.", "a\n", true); // dot matches newline, as in Prometheus
        check(RegexNoMatch, "a|b", "c", true);
        check(RegexNoMatch, ".*", "x", false);
        check(RegexMatch, "a\\.b", "a.b", true);
        check(RegexMatch, "a\\.b", "axb", false);
    }

    #[test]
    fn matcher_fast_paths_report_their_values() {
        let m = Matcher::new(MatchOp::RegexMatch, "l", "b|a|b").unwrap();
        assert_eq!(m.set_values(), Some(vec!["a", "b"]));
        let m = Matcher::new(MatchOp::RegexMatch, "l", "node_.*").unwrap();
        assert_eq!(m.literal_prefix(), Some("node_"));
        assert!(Matcher::new(MatchOp::RegexMatch, "l", "(").is_err());
    }

    #[test]
    fn counted_repetitions_are_spotted_and_label_braces_are_not() {
        assert!(may_repeat_count(r#"up{a=~"x{3}"}"#));
        assert!(may_repeat_count("a{2,}"));
        assert!(may_repeat_count("a{,5}"));
        assert!(!may_repeat_count(r#"rate(up{job="x", device=~"sd.+"}[5m])"#));
        assert!(!may_repeat_count("{__name__=~\"up\"}"));
        // Cached and uncached compilation give the same matcher.
        for _ in 0..2 {
            for p in ["sd.+|nvme.+", "a{2}", "x|y"] {
                let m = Matcher::new(MatchOp::RegexMatch, "l", p).unwrap();
                assert_eq!(m.matches("aa"), p == "a{2}");
            }
        }
    }

    proptest! {
        // Every fast path must agree with the real regex engine.
        #[test]
        fn matcher_fast_paths_agree_with_regex(
            pattern in "(a|b|ab|\\.\\*|\\.\\+|\\||c){0,5}",
            value in "[abc]{0,4}",
        ) {
            if let Ok(re) = Regex::new(&format!("^(?s:{pattern})$")) {
                let m = Matcher::new(MatchOp::RegexMatch, "l", pattern.clone()).unwrap();
                prop_assert_eq!(m.matches(&value), re.is_match(&value), "{} on {:?}", pattern, value);
            }
        }
    }
}
