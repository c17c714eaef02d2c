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

/// A lexer or grammar error at a byte offset of the query.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: usize,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::depth_bound;

    #[test]
    fn the_depth_bound_counts_operators_and_openings_but_not_comments() {
        assert_eq!(depth_bound("sum(rate(x[5m])) + 1"), 4);
        assert_eq!(depth_bound("x{a=\"(\"}"), 0, "inside a string");
        assert_eq!(depth_bound("1 # + (((["), 0, "in a comment");
        assert_eq!(depth_bound("((1 +"), 3, "an unfinished query too");
    }
}
