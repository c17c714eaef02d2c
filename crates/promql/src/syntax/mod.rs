//! PromQL's syntax as Prometheus 3.14 reads it, for its error messages:
//! the parser crate says only "invalid promql query" where Prometheus names
//! the token, the place and what it expected. Queries are parsed by the
//! parser crate; this finds the error Prometheus would report for one it
//! rejects, and bounds how deep a query may nest before it is parsed.

mod grammar;
mod lex;
mod quote;

pub use grammar::{Node, NodeKind, Recognized, first_error, first_selector_error, recognize};

/// An upper bound of how deep `query`'s expression tree can be: its
/// operators, opening parentheses and brackets. Evaluating a tree is
/// recursive, so a query's depth is bounded before it is parsed.
pub fn depth_bound(query: &str) -> usize {
    lex::tokens(query)
        .iter()
        .filter(|t| {
            matches!(
                t.kind,
                lex::Kind::Operator(_) | lex::Kind::LeftParen | lex::Kind::LeftBracket
            )
        })
        .count()
}

/// A lexer or grammar error at a byte offset of the query.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: usize,
    pub message: String,
}
