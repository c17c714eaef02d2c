//! Where PromQL's grammar first rejects a query, and how Prometheus says
//! so. Prometheus' parser (yacc) reports the first token that cannot
//! continue the query, as `unexpected <token>`, with the context and the
//! expectation of the innermost unfinished construct that has an error rule
//! of its own (an aggregation, grouping labels, label matchers, `offset`,
//! `@`, a range or subquery). This recognizer walks the same grammar by
//! recursive descent, keeping those constructs on a stack.

use super::SyntaxError;
use super::lex::{Keyword, Kind, Op, Preprocessor, Token, tokens};
use super::quote::go_quote_str;

/// A construct's context and what it expects, as Prometheus words them.
type Context = (&'static str, &'static str);

const AGGREGATION: Context = ("aggregation", "");
const OFFSET: Context = ("offset", "number, duration, step(), or range()");
const AT: Context = ("@", "timestamp");
const RANGE_OR_SUBQUERY: Context = ("subquery or range selector", "number, duration, step(), or range()");
const AFTER_RANGE: Context = ("subquery or range", "\":\" or \"]\"");
const SUBQUERY_STEP: Context = ("subquery selector", "number, duration, step(), range(), or \"]\"");
const SUBQUERY_END: Context = ("subquery selector", "\"]\"");
const GROUPING_OPEN: Context = ("grouping opts", "\"(\"");
const GROUPING_LABEL: Context = ("grouping opts", "label");
const GROUPING_NEXT: Context = ("grouping opts", "\",\" or \")\"");
const MATCHER: Context = ("label matching", "identifier or \"}\"");
const MATCH_OP: Context = ("label matching", "label matching operator");
const MATCH_VALUE: Context = ("label matching", "string");
const MATCHER_NEXT: Context = ("label matching", "\",\" or \"}\"");

/// The first lexer or grammar error in `query`, if any.
pub fn first_error(query: &str) -> Option<SyntaxError> {
    match recognize(query) {
        Recognized::Error(e) => Some(e),
        Recognized::Valid(_) | Recognized::TooDeep => None,
    }
}

/// The first lexer or grammar error in `selector`, read as a series
/// selector alone (`match[]`), as Prometheus reads those.
pub fn first_selector_error(selector: &str) -> Option<SyntaxError> {
    match Recognizer::new(selector).selector() {
        Err(Stop::Error(e)) => Some(e),
        Ok(()) | Err(Stop::TooDeep) => None,
    }
}

/// What the recognizer makes of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum Recognized {
    /// Sound syntax: its expressions, innermost first (the order in which
    /// Prometheus checks them).
    Valid(Vec<Node>),
    /// The first lexer or grammar error.
    Error(SyntaxError),
    /// Nested deeper than the recognizer follows.
    TooDeep,
}

pub fn recognize(query: &str) -> Recognized {
    let mut p = Recognizer::new(query);
    match p.query() {
        Ok(()) => Recognized::Valid(p.nodes),
        Err(Stop::Error(e)) => Recognized::Error(e),
        Err(Stop::TooDeep) => Recognized::TooDeep,
    }
}

/// How deep the recognizer follows nested expressions: each level is a few
/// stack frames, and a query's text may be megabytes.
const MAX_DEPTH: usize = 512;

/// Why recognition stopped.
enum Stop {
    Error(SyntaxError),
    TooDeep,
}

impl From<SyntaxError> for Stop {
    fn from(e: SyntaxError) -> Self {
        Stop::Error(e)
    }
}

/// An expression of the query: its byte range and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: NodeKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A binary operation; `op` is where its operator starts, `rhs` where
    /// its right-hand side does.
    Binary {
        op: usize,
        rhs: usize,
    },
    Unary,
    /// An aggregation or a function call.
    Call,
    Selector,
    /// `[range]` after an expression, at `bracket`.
    Range {
        bracket: usize,
    },
    /// `[range:step]` after an expression.
    Subquery,
    /// An `offset` or `@` modifier on the expression.
    Modifier,
    /// A number or duration inside a range or subquery.
    Duration,
    Other,
}

type R = Result<(), Stop>;

struct Recognizer {
    tokens: Vec<Token>,
    at: usize,
    contexts: Vec<Context>,
    /// An error Prometheus reports while the grammar goes on, and which
    /// therefore comes before any later one.
    noted: Option<SyntaxError>,
    nodes: Vec<Node>,
    depth: usize,
}

impl Recognizer {
    fn new(text: &str) -> Self {
        Recognizer {
            tokens: tokens(text),
            at: 0,
            contexts: Vec::new(),
            noted: None,
            nodes: Vec::new(),
            depth: 0,
        }
    }

    fn kind(&self) -> Kind {
        self.kind_at(0)
    }

    fn kind_at(&self, ahead: usize) -> Kind {
        // The token list ends with Eof or Error, which is never passed.
        self.tokens
            .get(self.at + ahead)
            .or(self.tokens.last())
            .map_or(Kind::Eof, |t| t.kind)
    }

    fn advance(&mut self) {
        if !matches!(self.kind(), Kind::Eof | Kind::Error) {
            self.at += 1;
        }
    }

    /// Consumes the token if it is of `kind`.
    fn eat(&mut self, kind: Kind) -> bool {
        let found = self.kind() == kind;
        if found {
            self.advance();
        }
        found
    }

    fn expect(&mut self, kind: Kind, context: Option<Context>) -> R {
        if self.eat(kind) {
            Ok(())
        } else {
            Err(self.unexpected(context))
        }
    }

    /// The error at the current token: a lexer error as it is, else
    /// `unexpected <token>` in `context` or the innermost open construct's.
    fn unexpected(&mut self, context: Option<Context>) -> Stop {
        if let Some(noted) = self.noted.take() {
            return Stop::Error(noted);
        }
        let token = &self.tokens[self.at.min(self.tokens.len() - 1)];
        if token.kind == Kind::Error {
            return Stop::Error(SyntaxError {
                pos: token.pos,
                message: token.text.clone(),
            });
        }
        let (within, expected) = context.or(self.contexts.last().copied()).unwrap_or(("", ""));
        let mut message = format!("unexpected {}", token.describe());
        if !within.is_empty() {
            message.push_str(" in ");
            message.push_str(within);
        }
        if !expected.is_empty() {
            message.push_str(", expected ");
            message.push_str(expected);
        }
        Stop::Error(SyntaxError {
            pos: token.pos,
            message,
        })
    }

    /// Runs `f` with `context` open.
    fn within(&mut self, context: Context, f: impl FnOnce(&mut Self) -> R) -> R {
        self.contexts.push(context);
        let r = f(self);
        self.contexts.pop();
        r
    }

    fn query(&mut self) -> R {
        if self.kind() == Kind::Eof {
            return Err(SyntaxError {
                pos: 0,
                message: "no expression found in input".into(),
            }
            .into());
        }
        self.expr()?;
        if self.kind() != Kind::Eof {
            return Err(self.unexpected(None));
        }
        match self.noted.take() {
            Some(noted) => Err(noted.into()),
            None => Ok(()),
        }
    }

    fn expr(&mut self) -> R {
        self.binary(0)
    }

    fn selector(&mut self) -> R {
        if self.kind() != Kind::LeftBrace && !is_metric_identifier(self.kind()) {
            return Err(self.unexpected(None));
        }
        self.vector_selector()?;
        if self.kind() != Kind::Eof {
            return Err(self.unexpected(None));
        }
        Ok(())
    }

    /// Where the current token starts.
    fn pos(&self) -> usize {
        self.tokens[self.at.min(self.tokens.len() - 1)].pos
    }

    /// Where the last consumed token ends.
    fn end(&self) -> usize {
        self.at
            .checked_sub(1)
            .map_or(0, |i| self.tokens[i].pos + self.tokens[i].text.len())
    }

    fn node(&mut self, start: usize, kind: NodeKind) {
        let end = self.end();
        self.nodes.push(Node { start, end, kind });
    }

    /// An operand and the binary operations binding at least as tightly
    /// as `min`, by precedence climbing.
    fn binary(&mut self, min: u8) -> R {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Stop::TooDeep);
        }
        let r = self.binary_within(min);
        self.depth -= 1;
        r
    }

    fn binary_within(&mut self, min: u8) -> R {
        let start = self.pos();
        self.operand()?;
        while let Kind::Operator(op) = self.kind() {
            let Some(precedence) = precedence(op).filter(|&p| p >= min) else {
                break;
            };
            let op_at = self.pos();
            self.advance();
            self.binary_modifiers()?;
            let rhs = self.pos();
            // `^` is right-associative, the rest left.
            self.binary(if op == Op::Pow { precedence } else { precedence + 1 })?;
            self.node(start, NodeKind::Binary { op: op_at, rhs });
        }
        Ok(())
    }

    /// A signed operand: unary `+`/`-` bind like `*`, below `^`.
    fn operand(&mut self) -> R {
        let start = self.pos();
        if matches!(self.kind(), Kind::Operator(Op::Add | Op::Sub)) {
            self.advance();
            self.binary(UNARY_OPERAND)?;
            self.node(start, NodeKind::Unary);
            return Ok(());
        }
        self.primary()?;
        self.modifiers(start)
    }

    fn primary(&mut self) -> R {
        match self.kind() {
            Kind::Number | Kind::Duration | Kind::String => {
                let start = self.pos();
                self.advance();
                self.node(start, NodeKind::Other);
                Ok(())
            }
            Kind::LeftParen => {
                let start = self.pos();
                self.advance();
                self.expr()?;
                self.expect(Kind::RightParen, None)?;
                self.node(start, NodeKind::Other);
                Ok(())
            }
            Kind::LeftBrace => self.vector_selector(),
            Kind::Aggregator
                if matches!(
                    self.kind_at(1),
                    Kind::LeftParen | Kind::Keyword(Keyword::By | Keyword::Without)
                ) =>
            {
                self.aggregation()
            }
            Kind::Identifier | Kind::Preprocessor(_) if self.kind_at(1) == Kind::LeftParen => {
                let start = self.pos();
                let name = &self.tokens[self.at].text;
                // Reported as soon as the call is read, before later errors.
                if self.kind() == Kind::Identifier && !is_function(name) {
                    let message = format!("unknown function with name {}", go_quote_str(name));
                    self.noted.get_or_insert(SyntaxError { pos: start, message });
                }
                self.advance();
                self.call_arguments()?;
                self.node(start, NodeKind::Call);
                Ok(())
            }
            kind if is_metric_identifier(kind) => self.vector_selector(),
            _ => Err(self.unexpected(None)),
        }
    }

    /// `name`, `name{...}` or `{...}`.
    fn vector_selector(&mut self) -> R {
        let start = self.pos();
        if self.kind() != Kind::LeftBrace {
            self.advance();
        }
        if self.kind() == Kind::LeftBrace {
            self.label_matchers()?;
        }
        self.node(start, NodeKind::Selector);
        Ok(())
    }

    /// `offset`, `@`, ranges, subqueries, `anchored` and `smoothed` after
    /// the operand that starts at `start`.
    fn modifiers(&mut self, start: usize) -> R {
        loop {
            match self.kind() {
                Kind::LeftBracket => {
                    let bracket = self.pos();
                    self.advance();
                    let kind = self.range_or_subquery(bracket)?;
                    self.node(start, kind);
                }
                Kind::Keyword(Keyword::Offset) => {
                    self.advance();
                    self.within(OFFSET, Self::offset_duration)?;
                    self.node(start, NodeKind::Modifier);
                }
                Kind::Operator(Op::At) => {
                    self.advance();
                    self.within(AT, Self::at_time)?;
                    self.node(start, NodeKind::Modifier);
                }
                Kind::Keyword(Keyword::Anchored | Keyword::Smoothed) => self.advance(),
                _ => return Ok(()),
            }
        }
    }

    fn range_or_subquery(&mut self, bracket: usize) -> Result<NodeKind, Stop> {
        self.within(RANGE_OR_SUBQUERY, Self::duration_expr)?;
        match self.kind() {
            Kind::RightBracket => {
                self.advance();
                return Ok(NodeKind::Range { bracket });
            }
            Kind::Colon => self.advance(),
            _ => return Err(self.unexpected(Some(AFTER_RANGE))),
        }
        if self.eat(Kind::RightBracket) {
            return Ok(NodeKind::Subquery);
        }
        if !starts_duration(self.kind()) {
            return Err(self.unexpected(Some(SUBQUERY_STEP)));
        }
        self.within(SUBQUERY_STEP, Self::duration_expr)?;
        self.expect(Kind::RightBracket, Some(SUBQUERY_END))?;
        Ok(NodeKind::Subquery)
    }

    /// An offset. A number, duration or duration function, signed or not,
    /// ends it: operators after it belong to the enclosing expression. A
    /// parenthesised expression, or one after two signs, is a duration
    /// expression that goes on through operators, as Prometheus reads it.
    fn offset_duration(&mut self) -> R {
        let signed = matches!(self.kind(), Kind::Operator(Op::Add | Op::Sub));
        if signed {
            self.advance();
        }
        match self.kind() {
            Kind::LeftParen if !signed => self.duration_expr(),
            Kind::Operator(Op::Add | Op::Sub) if signed => self.duration_expr(),
            _ => self.duration_operand(),
        }
    }

    fn at_time(&mut self) -> R {
        match self.kind() {
            Kind::Preprocessor(Preprocessor::Start | Preprocessor::End) => {
                self.advance();
                self.expect(Kind::LeftParen, None)?;
                self.expect(Kind::RightParen, None)
            }
            _ => {
                if matches!(self.kind(), Kind::Operator(Op::Add | Op::Sub)) {
                    self.advance();
                }
                match self.kind() {
                    Kind::Number | Kind::Duration => {
                        self.advance();
                        Ok(())
                    }
                    _ => Err(self.unexpected(None)),
                }
            }
        }
    }

    fn duration_expr(&mut self) -> R {
        loop {
            while matches!(self.kind(), Kind::Operator(Op::Add | Op::Sub)) {
                self.advance();
            }
            self.duration_operand()?;
            match self.kind() {
                Kind::Operator(Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Mod | Op::Pow) => self.advance(),
                _ => return Ok(()),
            }
        }
    }

    fn duration_operand(&mut self) -> R {
        match self.kind() {
            Kind::Number | Kind::Duration => {
                let start = self.pos();
                self.advance();
                if matches!(self.contexts.last(), Some(&RANGE_OR_SUBQUERY | &SUBQUERY_STEP)) {
                    self.node(start, NodeKind::Duration);
                }
                Ok(())
            }
            Kind::Preprocessor(Preprocessor::Step | Preprocessor::Range) => {
                self.advance();
                self.expect(Kind::LeftParen, None)?;
                self.expect(Kind::RightParen, None)
            }
            Kind::Preprocessor(Preprocessor::MaxOf | Preprocessor::MinOf) => {
                self.advance();
                self.expect(Kind::LeftParen, None)?;
                self.duration_expr()?;
                self.expect(Kind::Comma, None)?;
                self.duration_expr()?;
                self.expect(Kind::RightParen, None)
            }
            Kind::LeftParen => {
                self.advance();
                self.duration_expr()?;
                self.expect(Kind::RightParen, None)
            }
            _ => Err(self.unexpected(None)),
        }
    }

    fn aggregation(&mut self) -> R {
        let start = self.pos();
        self.advance();
        self.within(AGGREGATION, |p| {
            let grouped_first = p.grouping_clause()?;
            p.call_arguments()?;
            if !grouped_first {
                p.grouping_clause()?;
            }
            Ok(())
        })?;
        self.node(start, NodeKind::Call);
        Ok(())
    }

    /// An aggregation's `by (...)` or `without (...)`, if there is one.
    fn grouping_clause(&mut self) -> Result<bool, Stop> {
        if !matches!(self.kind(), Kind::Keyword(Keyword::By | Keyword::Without)) {
            return Ok(false);
        }
        self.advance();
        self.grouping_labels()?;
        Ok(true)
    }

    fn grouping_labels(&mut self) -> R {
        self.expect(Kind::LeftParen, Some(GROUPING_OPEN))?;
        self.comma_list(Kind::RightParen, GROUPING_NEXT, |p| {
            if !is_label(p.kind()) {
                return Err(p.unexpected(Some(GROUPING_LABEL)));
            }
            p.advance();
            Ok(())
        })
    }

    /// Items separated by commas up to and including `close`, a trailing
    /// comma allowed; `next` is what an error after an item says was expected.
    fn comma_list(&mut self, close: Kind, next: Context, mut item: impl FnMut(&mut Self) -> R) -> R {
        if self.eat(close) {
            return Ok(());
        }
        loop {
            item(self)?;
            if self.eat(close) {
                return Ok(());
            }
            if !self.eat(Kind::Comma) {
                return Err(self.unexpected(Some(next)));
            }
            if self.eat(close) {
                return Ok(());
            }
        }
    }

    /// `(arg, ...)` of a call or an aggregation.
    fn call_arguments(&mut self) -> R {
        self.expect(Kind::LeftParen, None)?;
        if self.eat(Kind::RightParen) {
            return Ok(());
        }
        loop {
            self.expr()?;
            match self.kind() {
                Kind::RightParen => {
                    self.advance();
                    return Ok(());
                }
                Kind::Comma => {
                    let comma = self.tokens[self.at].pos;
                    self.advance();
                    if self.kind() == Kind::RightParen {
                        self.noted.get_or_insert(SyntaxError {
                            pos: comma,
                            message: "trailing commas not allowed in function call args".into(),
                        });
                        self.advance();
                        return Ok(());
                    }
                }
                _ => return Err(self.unexpected(None)),
            }
        }
    }

    /// `bool`, `on (...)`/`ignoring (...)`, `group_left`/`group_right`
    /// with optional labels, and `fill` values, after a binary operator.
    fn binary_modifiers(&mut self) -> R {
        self.eat(Kind::Keyword(Keyword::Bool));
        if matches!(self.kind(), Kind::Keyword(Keyword::On | Keyword::Ignoring)) {
            self.advance();
            self.grouping_labels()?;
            if matches!(self.kind(), Kind::Keyword(Keyword::GroupLeft | Keyword::GroupRight)) {
                self.advance();
                if self.kind() == Kind::LeftParen {
                    self.grouping_labels()?;
                }
            }
        }
        match self.kind() {
            Kind::Keyword(Keyword::Fill) => {
                self.advance();
                self.fill_value()
            }
            Kind::Keyword(first @ (Keyword::FillLeft | Keyword::FillRight)) => {
                self.advance();
                self.fill_value()?;
                let other = if first == Keyword::FillLeft {
                    Keyword::FillRight
                } else {
                    Keyword::FillLeft
                };
                if self.eat(Kind::Keyword(other)) {
                    self.fill_value()?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn fill_value(&mut self) -> R {
        self.expect(Kind::LeftParen, None)?;
        if matches!(self.kind(), Kind::Operator(Op::Add | Op::Sub)) {
            self.advance();
        }
        match self.kind() {
            Kind::Number | Kind::Duration => self.advance(),
            _ => return Err(self.unexpected(None)),
        }
        self.expect(Kind::RightParen, None)
    }

    fn label_matchers(&mut self) -> R {
        self.advance();
        self.comma_list(Kind::RightBrace, MATCHER_NEXT, Self::label_matcher)
    }

    fn label_matcher(&mut self) -> R {
        match self.kind() {
            Kind::Identifier => {
                self.advance();
                if !is_match_op(self.kind()) {
                    return Err(self.unexpected(Some(MATCH_OP)));
                }
            }
            // A quoted name alone matches the metric name.
            Kind::String => {
                self.advance();
                if !is_match_op(self.kind()) {
                    return Ok(());
                }
            }
            _ => return Err(self.unexpected(Some(MATCHER))),
        }
        self.advance();
        self.expect(Kind::String, Some(MATCH_VALUE))
    }
}

/// Whether PromQL knows a function of this name, by the parser crate's
/// table.
fn is_function(name: &str) -> bool {
    promql_parser::parser::parse(&format!("{name}()"))
        .err()
        .is_none_or(|e| !e.starts_with("unknown function"))
}

/// What a unary `+`/`-` takes: operations that bind tighter than `*`.
const UNARY_OPERAND: u8 = 6;

/// How tightly a binary operator binds; `None` for `@` and the matchers'.
fn precedence(op: Op) -> Option<u8> {
    Some(match op {
        Op::Or => 1,
        Op::And | Op::Unless => 2,
        Op::Eqlc | Op::Neq | Op::Lte | Op::Lss | Op::Gte | Op::Gtr | Op::TrimUpper | Op::TrimLower => 3,
        Op::Add | Op::Sub => 4,
        Op::Mul | Op::Div | Op::Mod | Op::Atan2 => 5,
        Op::Pow => 6,
        Op::At | Op::EqlRegex | Op::NeqRegex => return None,
    })
}

fn is_match_op(kind: Kind) -> bool {
    matches!(kind, Kind::Eql | Kind::Operator(Op::Neq | Op::EqlRegex | Op::NeqRegex))
}

fn starts_duration(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Number | Kind::Duration | Kind::LeftParen | Kind::Preprocessor(_) | Kind::Operator(Op::Add | Op::Sub)
    )
}

/// Words that name a metric where an expression starts.
fn is_metric_identifier(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Identifier
            | Kind::MetricIdentifier
            | Kind::Aggregator
            | Kind::Preprocessor(_)
            | Kind::Operator(Op::And | Op::Or | Op::Unless)
            | Kind::Keyword(
                Keyword::By
                    | Keyword::Without
                    | Keyword::Fill
                    | Keyword::FillLeft
                    | Keyword::FillRight
                    | Keyword::Offset
                    | Keyword::Anchored
                    | Keyword::Smoothed
            )
    )
}

/// Words that may name a label in grouping clauses.
fn is_label(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Identifier
            | Kind::MetricIdentifier
            | Kind::String
            | Kind::Aggregator
            | Kind::Preprocessor(_)
            | Kind::Operator(Op::And | Op::Or | Op::Unless | Op::Atan2)
    ) || matches!(kind, Kind::Keyword(k) if k != Keyword::Without)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prometheus 3.14's answers, from a running server.
    #[test]
    fn the_first_unexpected_token_with_prometheus_context() {
        for (query, pos, message) in [
            ("*1", 0, "unexpected <op:*>"),
            ("1 +* 2", 3, "unexpected <op:*>"),
            ("-=", 1, "unexpected \"=\""),
            (
                "sum by (a b) (up)",
                10,
                "unexpected identifier \"b\" in grouping opts, expected \",\" or \")\"",
            ),
            (
                "sum without(==)(x)",
                12,
                "unexpected <op:==> in grouping opts, expected label",
            ),
            (
                "sum without(foo,,)(x)",
                16,
                "unexpected \",\" in grouping opts, expected label",
            ),
            (
                "sum (x) by test",
                11,
                "unexpected identifier \"test\" in grouping opts, expected \"(\"",
            ),
            ("sum x by (test)", 4, "unexpected identifier \"x\""),
            ("sum(a) b", 7, "unexpected identifier \"b\""),
            ("sum(a b)", 6, "unexpected identifier \"b\" in aggregation"),
            ("sum(rate(a b))", 11, "unexpected identifier \"b\" in aggregation"),
            ("sum by (a) x", 11, "unexpected identifier \"x\" in aggregation"),
            ("sum (x) without (t) by (t)", 20, "unexpected <by>"),
            ("rate(a b)", 7, "unexpected identifier \"b\""),
            ("a - on(b) ignoring(c) d", 10, "unexpected <ignoring>"),
            ("foo + group_left(baz) bar", 6, "unexpected <group_left>"),
            ("up{job=}", 7, "unexpected \"}\" in label matching, expected string"),
            (
                "foo{gibberish}",
                13,
                "unexpected \"}\" in label matching, expected label matching operator",
            ),
            (
                "foo{,}",
                4,
                "unexpected \",\" in label matching, expected identifier or \"}\"",
            ),
            (
                "foo{a=\"b\" lol}",
                10,
                "unexpected identifier \"lol\" in label matching, expected \",\" or \"}\"",
            ),
            (
                "foo{__name__ == \"bar\"}",
                14,
                "unexpected \"=\" in label matching, expected string",
            ),
            (
                "foo[]",
                4,
                "unexpected \"]\" in subquery or range selector, expected number, duration, step(), or range()",
            ),
            (
                "foo[step]",
                8,
                "unexpected \"]\" in subquery or range selector, expected number, duration, step(), or range()",
            ),
            (
                "rate(foo[5m)",
                11,
                "unexpected \")\" in subquery or range, expected \":\" or \"]\"",
            ),
            (
                "x[5m] offset",
                12,
                "unexpected end of input in offset, expected number, duration, step(), or range()",
            ),
            (
                "foo offset -",
                12,
                "unexpected end of input in offset, expected number, duration, step(), or range()",
            ),
            ("up @ foo", 5, "unexpected identifier \"foo\" in @, expected timestamp"),
            ("foo @ start", 11, "unexpected end of input in @, expected timestamp"),
            ("topk(x,)", 6, "trailing commas not allowed in function call args"),
            ("{} 1+1", 3, "unexpected number \"1\""),
            ("", 0, "no expression found in input"),
            ("# only a comment\n", 0, "no expression found in input"),
            ("foo[5m", 6, "unclosed left bracket"),
            ("x[:1m]", 3, "unexpected colon before duration in duration expression"),
            (
                "foo{=~\"a\"}",
                4,
                "unexpected <op:=~> in label matching, expected identifier or \"}\"",
            ),
            ("sum(rat(x[5m])", 4, "unknown function with name \"rat\""),
            (
                "x offset (1h) + y",
                16,
                "unexpected identifier \"y\" in offset, expected number, duration, step(), or range()",
            ),
        ] {
            let e = first_error(query).unwrap_or_else(|| panic!("{query} was accepted"));
            assert_eq!((e.pos, e.message.as_str()), (pos, message), "{query}");
        }
    }

    #[test]
    fn selectors_alone() {
        for (selector, pos, message) in [
            ("up[5m]", 2, "unexpected \"[\""),
            ("up offset 5m", 3, "unexpected <offset>"),
            ("rate(up[5m])", 4, "unexpected \"(\""),
            ("{__name__=\"a\"} b", 15, "unexpected identifier \"b\""),
            ("up{", 3, "unexpected end of input inside braces"),
        ] {
            let e = first_selector_error(selector).unwrap_or_else(|| panic!("{selector} was accepted"));
            assert_eq!((e.pos, e.message.as_str()), (pos, message), "{selector}");
        }
        for selector in ["up", "{job=\"a\"}", "a:b{c!~\"d\",}", "sum"] {
            assert_eq!(first_selector_error(selector), None, "{selector}");
        }
    }

    #[test]
    fn valid_queries_pass() {
        for query in [
            "sum by (job) (rate(http_requests_total{code=~\"5..\"}[5m])) / on (job) group_left sum by (job) (up)",
            "topk(3, x) without (a, b,)",
            "x offset -5m @ start() [1h:1m] anchored",
            "x[5m + step():min_of(1m, range())]",
            "a + fill_left(0) fill_right(-1) b",
            "-1 ^ 2 > bool 3",
            "{\"a.b\", c!~\"d\",}",
            "sum(by)",
            "foo offset 5m + bar",
            "step()",
            "(1)",
            "x @ -1.5",
            "rate(x[5m]) # comment",
            "x offset --5m",
            "x offset -5m + y",
        ] {
            assert_eq!(first_error(query), None, "{query}");
        }
    }

    #[test]
    fn deep_nesting_is_given_up_not_followed() {
        for query in ["(".repeat(100_000), "-".repeat(100_000) + "1", "sum(".repeat(50_000)] {
            assert_eq!(recognize(&query), Recognized::TooDeep);
        }
        let nested = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert!(matches!(recognize(&nested), Recognized::Valid(_)));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;

    /// Texts made of PromQL's pieces, well-formed or not.
    fn promql_like() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "sum",
            "rate",
            "up",
            "by",
            "offset",
            "@",
            "(",
            ")",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "=",
            "=~",
            "!=",
            "+",
            "-",
            "*",
            "/",
            "^",
            "==",
            "and",
            "5m",
            "1",
            "0x1f",
            "1e3",
            "\"a\"",
            "'b\\n'",
            "`c`",
            " ",
            "#x\n",
            "step()",
            "group_left",
            "fill(0)",
            "on",
            "é",
            "\\",
            "\"",
            "\n",
        ]);
        prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn never_panics_and_stays_inside_the_text(text in promql_like()) {
            match recognize(&text) {
                Recognized::Valid(nodes) => {
                    for n in nodes {
                        prop_assert!(n.start <= n.end && text.get(n.start..n.end).is_some());
                    }
                }
                Recognized::Error(e) => prop_assert!(e.pos <= text.len() && text.is_char_boundary(e.pos)),
                Recognized::TooDeep => {}
            }
            if let Some(e) = first_selector_error(&text) {
                prop_assert!(e.pos <= text.len());
            }
        }

        /// A query the parser crate reads is never rejected.
        #[test]
        fn accepts_what_the_parser_crate_reads(text in promql_like()) {
            if promql_parser::parser::parse(&text).is_ok() {
                prop_assert_eq!(first_error(&text), None);
            }
        }
    }
}
