//! `match[]` series selectors (`up{job="x"}`, `{__name__=~"node_.*"}`) parsed
//! with `promql-parser` and turned into Cairn matchers.

use cairn_model::{METRIC_NAME, MatchOp, Matcher};
use promql_parser::label::{MatchOp as PMatchOp, Matcher as PMatcher};
use promql_parser::parser::{self, Expr};

use crate::ApiError;

const NON_EMPTY: &str = "match[] must contain at least one non-empty matcher";

/// One selector as the union of its alternatives: a plain selector has one
/// matcher set; `{a="1" or b="2"}` has one per `or` branch.
pub fn parse_selector(s: &str) -> Result<Vec<Vec<Matcher>>, ApiError> {
    let invalid = |e: &str| ApiError::bad_data(format!("invalid parameter \"match[]\": {e}"));
    // Syntax errors in Prometheus' words; the parser crate's otherwise. Its
    // grammar is tried first: it also reads `or` between matchers.
    let syntax_error = |crate_message: String| match cairn_promql::selector_syntax_error(s) {
        Some(e) => invalid(&e),
        None if crate_message == "vector selector must contain at least one non-empty matcher" => invalid(NON_EMPTY),
        None => invalid(&crate_message),
    };
    let vs = match parser::parse(s) {
        Ok(Expr::VectorSelector(vs)) if vs.offset.is_none() && vs.at.is_none() => vs,
        Ok(_) => return Err(syntax_error(format!("invalid series selector {s:?}"))),
        Err(e) => return Err(syntax_error(e)),
    };
    let groups: Vec<Vec<PMatcher>> = if vs.matchers.or_matchers.is_empty() {
        vec![vs.matchers.matchers]
    } else {
        vs.matchers.or_matchers
    };
    let mut sets = Vec::with_capacity(groups.len());
    for group in groups {
        let mut set = Vec::with_capacity(group.len() + 1);
        if let Some(name) = &vs.name {
            set.push(Matcher::equal(METRIC_NAME, name.as_str()));
        }
        for m in group {
            set.push(convert(m)?);
        }
        if set.iter().all(Matcher::matches_empty) {
            return Err(invalid(NON_EMPTY));
        }
        sets.push(set);
    }
    Ok(sets)
}

fn convert(m: PMatcher) -> Result<Matcher, ApiError> {
    let op = match m.op {
        PMatchOp::Equal => MatchOp::Equal,
        PMatchOp::NotEqual => MatchOp::NotEqual,
        PMatchOp::Re(_) => MatchOp::RegexMatch,
        PMatchOp::NotRe(_) => MatchOp::RegexNoMatch,
    };
    Matcher::new(op, m.name, m.value).map_err(|e| ApiError::bad_data(e.to_string()))
}

/// All `match[]` values as one list of matcher sets whose results are to be
/// unioned. Every selector must parse and have a non-empty matcher.
pub fn parse_match_params(values: &[&str]) -> Result<Vec<Vec<Matcher>>, ApiError> {
    let mut sets = Vec::new();
    for s in values {
        sets.extend(parse_selector(s)?);
    }
    Ok(sets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(s: &str) -> Vec<String> {
        parse_selector(s)
            .unwrap()
            .into_iter()
            .map(|set| set.iter().map(ToString::to_string).collect::<Vec<_>>().join(","))
            .collect()
    }

    #[test]
    fn selectors_convert() {
        assert_eq!(render("up"), vec![r#"__name__="up""#]);
        assert_eq!(
            render(r#"up{job="x",instance=~"a.*"}"#),
            vec![r#"__name__="up",job="x",instance=~"a.*""#]
        );
        assert_eq!(
            render(r#"{__name__=~"node_.*", job!="a", x!~"b"}"#),
            vec![r#"__name__=~"node_.*",job!="a",x!~"b""#]
        );
        assert_eq!(render(r#"{a="1" or b="2"}"#), vec![r#"a="1""#, r#"b="2""#]);
    }

    #[test]
    fn bad_selectors_are_bad_data() {
        for s in [
            "",
            "up{",
            "rate(up[5m])",
            "up[5m]",
            "1 + 1",
            r#"{job=~".*"}"#,
            r#"{job=""}"#,
            "up offset 5m",
            r#"up{job=~"("}"#,
        ] {
            let err = parse_selector(s).unwrap_err();
            assert_eq!(err.kind, crate::ErrorType::BadData, "{s:?}: {err}");
        }
    }
}
