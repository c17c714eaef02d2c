//! PromQL's syntax as Prometheus 3.14 reads it, for its error messages:
//! the parser crate says only "invalid promql query" where Prometheus names
//! the token, the place and what it expected. Queries are parsed by the
//! parser crate; this finds the error Prometheus would report for one it
//! rejects.

mod grammar;
mod lex;
mod quote;

pub use grammar::{Node, NodeKind, first_error, first_selector_error, recognize};

/// A lexer or grammar error at a byte offset of the query.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: usize,
    pub message: String,
}
