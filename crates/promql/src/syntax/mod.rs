//! PromQL's syntax as Prometheus 3.14 reads it, for its error messages:
//! the parser crate says only "invalid promql query" where Prometheus names
//! the token, the place and what it expected. Queries are parsed by the
//! parser crate; this finds the error Prometheus would report for one it
//! rejects, and bounds how deep a query may nest before it is parsed.

mod grammar;
mod lex;
mod quote;

pub use grammar::{Node, NodeKind, Recognized, first_error, first_selector_error, recognize};
pub(crate) use quote::{go_quote_bytes, go_quote_str};

/// The string literals of `query` as written, quotes included, in order.
pub(crate) fn string_literals(query: &str) -> Vec<&str> {
    let mut out = Vec::new();
    lex::lex(query, |kind, pos, text| {
        if kind == lex::Kind::String {
            out.push(&query[pos..pos + text.len()]);
        }
    });
    out
}

/// An upper bound of how deep `query`'s expression tree can be: its
/// operators, opening parentheses and brackets. Evaluating a tree is
/// recursive, so a query's depth is bounded before it is parsed.
pub fn depth_bound(query: &str) -> usize {
    let mut bound = 0;
    lex::lex(query, |kind, _, _| {
        if matches!(
            kind,
            lex::Kind::Operator(_) | lex::Kind::LeftParen | lex::Kind::LeftBracket
        ) {
            bound += 1;
        }
    });
    bound
}

/// The error Prometheus' lexer gives a colon in a range or subquery that
/// the parser crate reads fine: `x[step():]`, where no number or duration
/// was read in brackets yet (Prometheus keeps that across the whole query).
pub fn duration_colon_error(query: &str) -> Option<SyntaxError> {
    if !query.contains('[') || !query.contains(':') {
        return None;
    }
    let mut found = None;
    lex::lex(query, |kind, pos, text| {
        if kind == lex::Kind::Error && text.contains("colon") && text.ends_with("in duration expression") {
            found = Some(SyntaxError {
                pos,
                message: text.to_string(),
            });
        }
    });
    found
}

/// A lexer or grammar error at a byte offset of the query.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: usize,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::{depth_bound, duration_colon_error};

    /// Prometheus 3.14's answers, from a running server.
    #[test]
    fn a_colon_before_any_number_in_brackets_is_refused_as_prometheus_lexes_it() {
        for (query, pos) in [
            ("x[step():]", 9),
            ("x[step():5m]", 9),
            ("rate(x[step() :])", 15),
            ("x[(step()):1m]", 11),
        ] {
            let e = duration_colon_error(query).unwrap_or_else(|| panic!("{query}"));
            assert_eq!(
                (e.pos, e.message.as_str()),
                (pos, "unexpected colon before duration in duration expression"),
                "{query}"
            );
        }
        // A number or duration read in brackets before, anywhere in the
        // query, lets the colon through; so does one just before it.
        for query in [
            "x[5m:]",
            "x[step()+1m:]",
            "x[(5m):]",
            "x[1m] + y[step():]",
            "x[1m:step()]",
            "x{a=\":\"}",
        ] {
            assert_eq!(duration_colon_error(query), None, "{query}");
        }
    }

    #[test]
    fn the_depth_bound_counts_operators_and_openings_but_not_comments() {
        assert_eq!(depth_bound("sum(rate(x[5m])) + 1"), 4);
        assert_eq!(depth_bound("x{a=\"(\"}"), 0, "inside a string");
        assert_eq!(depth_bound("1 # + (((["), 0, "in a comment");
        assert_eq!(depth_bound("((1 +"), 3, "an unfinished query too");
    }
}
