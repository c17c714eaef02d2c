//! PromQL's lexer as Prometheus 3.14 runs it: the same tokens at the same
//! byte offsets, and the same errors, worded as Prometheus words them. The
//! lexer is context-sensitive (inside `{}` every word is a label name;
//! inside `[]` only durations, numbers and duration functions are tokens),
//! so its state mirrors Prometheus' own.

use super::quote::{go_quote_rune, go_quote_str, go_unicode};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Identifier,
    MetricIdentifier,
    Number,
    Duration,
    String,
    Comma,
    Colon,
    LeftParen,
    RightParen,
    LeftBrace,
    RightBrace,
    LeftBracket,
    RightBracket,
    /// `=`: a label matcher's, or misplaced.
    Eql,
    /// Binary and unary operators, `@`, the word operators (`and`, `or`,
    /// `unless`, `atan2`), and `=~`/`!~` of label matchers.
    Operator(Op),
    Aggregator,
    Keyword(Keyword),
    /// `start`, `end`, `step`, `range`, `max_of`, `min_of`.
    Preprocessor(Preprocessor),
    Eof,
    /// A lexer error: the token's text is the message.
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Eqlc,
    Neq,
    EqlRegex,
    NeqRegex,
    Lte,
    Lss,
    Gte,
    Gtr,
    TrimUpper,
    TrimLower,
    At,
    And,
    Or,
    Unless,
    Atan2,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    Bool,
    By,
    GroupLeft,
    GroupRight,
    Fill,
    FillLeft,
    FillRight,
    Ignoring,
    Offset,
    Smoothed,
    Anchored,
    On,
    Without,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preprocessor {
    Start,
    End,
    Step,
    Range,
    MaxOf,
    MinOf,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: Kind,
    /// Byte offset in the query.
    pub pos: usize,
    /// The token's text; for [`Kind::Error`], the message.
    pub text: String,
}

impl Token {
    /// How Prometheus names the token in "unexpected ..." messages.
    pub fn describe(&self) -> String {
        let shown = || match self.kind {
            Kind::Identifier | Kind::MetricIdentifier => go_quote_str(&self.text),
            Kind::Operator(_) => format!("<op:{}>", self.text),
            Kind::Keyword(_) => format!("<{}>", self.text),
            Kind::Aggregator => format!("<aggr:{}>", self.text),
            // Go counts bytes here, and cuts runes.
            _ if self.text.len() > 10 => {
                let head: String = self.text.chars().take(10).collect();
                format!("{}...", go_quote_str(&head))
            }
            _ => go_quote_str(&self.text),
        };
        let class = match self.kind {
            Kind::Eof => return "end of input".into(),
            Kind::Identifier => "identifier",
            Kind::MetricIdentifier => "metric identifier",
            Kind::String => "string",
            Kind::Number => "number",
            Kind::Duration => "duration",
            _ => return shown(),
        };
        format!("{class} {}", shown())
    }
}

fn word_kind(word: &str) -> Option<Kind> {
    let lower = word.to_ascii_lowercase();
    Some(match lower.as_str() {
        "and" => Kind::Operator(Op::And),
        "or" => Kind::Operator(Op::Or),
        "unless" => Kind::Operator(Op::Unless),
        "atan2" => Kind::Operator(Op::Atan2),
        "sum" | "avg" | "count" | "min" | "max" | "group" | "stddev" | "stdvar" | "topk" | "bottomk"
        | "count_values" | "quantile" | "limitk" | "limit_ratio" => Kind::Aggregator,
        "offset" => Kind::Keyword(Keyword::Offset),
        "smoothed" => Kind::Keyword(Keyword::Smoothed),
        "anchored" => Kind::Keyword(Keyword::Anchored),
        "by" => Kind::Keyword(Keyword::By),
        "without" => Kind::Keyword(Keyword::Without),
        "on" => Kind::Keyword(Keyword::On),
        "ignoring" => Kind::Keyword(Keyword::Ignoring),
        "group_left" => Kind::Keyword(Keyword::GroupLeft),
        "group_right" => Kind::Keyword(Keyword::GroupRight),
        "fill" => Kind::Keyword(Keyword::Fill),
        "fill_left" => Kind::Keyword(Keyword::FillLeft),
        "fill_right" => Kind::Keyword(Keyword::FillRight),
        "bool" => Kind::Keyword(Keyword::Bool),
        "start" => Kind::Preprocessor(Preprocessor::Start),
        "end" => Kind::Preprocessor(Preprocessor::End),
        "step" => Kind::Preprocessor(Preprocessor::Step),
        "range" => Kind::Preprocessor(Preprocessor::Range),
        "max_of" => Kind::Preprocessor(Preprocessor::MaxOf),
        "min_of" => Kind::Preprocessor(Preprocessor::MinOf),
        "inf" | "nan" => Kind::Number,
        _ => return None,
    })
}

/// The functions a duration expression may call.
fn duration_keyword(word: &str) -> Option<Preprocessor> {
    match word.to_ascii_lowercase().as_str() {
        "step" => Some(Preprocessor::Step),
        "range" => Some(Preprocessor::Range),
        "max_of" => Some(Preprocessor::MaxOf),
        "min_of" => Some(Preprocessor::MinOf),
        _ => None,
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn is_alpha(c: char) -> bool {
    c == '_' || c.is_ascii_alphabetic()
}

fn is_alnum(c: char) -> bool {
    is_alpha(c) || c.is_ascii_digit()
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Statements,
    InsideBraces,
    DurationExpr,
}

/// The tokens of `query`, comments left out, ending with [`Kind::Eof`] or,
/// where the lexer fails, with one [`Kind::Error`].
pub fn tokens(query: &str) -> Vec<Token> {
    let mut out = Vec::new();
    lex(query, |kind, pos, text| {
        out.push(Token {
            kind,
            pos,
            text: text.to_string(),
        })
    });
    out
}

/// Runs the lexer over `query`, handing each token's kind, byte offset and
/// text (for [`Kind::Error`], the message) to `sink`, as [`tokens`] lists
/// them, without keeping them.
pub fn lex(query: &str, sink: impl FnMut(Kind, usize, &str)) {
    let mut lexer = Lexer {
        input: query,
        pos: 0,
        start: 0,
        mode: Mode::Statements,
        paren_depth: 0,
        bracket_open: false,
        got_colon: false,
        got_duration: false,
        done: false,
        sink,
    };
    while !lexer.done {
        lexer.step();
    }
}

struct Lexer<'a, S> {
    input: &'a str,
    pos: usize,
    start: usize,
    mode: Mode,
    paren_depth: i32,
    bracket_open: bool,
    got_colon: bool,
    got_duration: bool,
    /// [`Kind::Eof`] or [`Kind::Error`] was emitted.
    done: bool,
    sink: S,
}

impl<S: FnMut(Kind, usize, &str)> Lexer<'_, S> {
    fn peek(&self) -> Option<char> {
        self.input[self.pos..].chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.pos += c.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn emit(&mut self, kind: Kind) {
        self.done = kind == Kind::Eof;
        (self.sink)(kind, self.start, &self.input[self.start..self.pos]);
        self.start = self.pos;
    }

    fn error(&mut self, message: String) {
        self.done = true;
        (self.sink)(Kind::Error, self.start, &message);
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(is_space) {
            self.pos += 1;
        }
        self.start = self.pos;
    }

    fn step(&mut self) {
        match self.mode {
            Mode::Statements => self.statements(),
            Mode::InsideBraces => self.inside_braces(),
            Mode::DurationExpr => self.duration_expr(),
        }
    }

    fn line_comment(&mut self) -> bool {
        if !self.input[self.pos..].starts_with('#') {
            return false;
        }
        let end = self.input[self.pos..]
            .find(['\n', '\r'])
            .map_or(self.input.len(), |n| self.pos + n);
        self.pos = end;
        self.start = end;
        true
    }

    fn statements(&mut self) {
        if self.line_comment() {
            return;
        }
        let Some(c) = self.next() else {
            if self.paren_depth != 0 {
                return self.error("unclosed left parenthesis".into());
            }
            if self.bracket_open {
                return self.error("unclosed left bracket".into());
            }
            return self.emit(Kind::Eof);
        };
        match c {
            ',' => self.emit(Kind::Comma),
            c if is_space(c) => self.skip_spaces(),
            '*' => self.emit(Kind::Operator(Op::Mul)),
            '/' => self.emit(Kind::Operator(Op::Div)),
            '%' => self.emit(Kind::Operator(Op::Mod)),
            '+' => self.emit(Kind::Operator(Op::Add)),
            '-' => self.emit(Kind::Operator(Op::Sub)),
            '^' => self.emit(Kind::Operator(Op::Pow)),
            '@' => self.emit(Kind::Operator(Op::At)),
            '=' => match self.peek() {
                Some('=') => {
                    self.pos += 1;
                    self.emit(Kind::Operator(Op::Eqlc));
                }
                Some('~') => self.error("unexpected character after '=': '~'".into()),
                _ => self.emit(Kind::Eql),
            },
            '!' => match self.next() {
                Some('=') => self.emit(Kind::Operator(Op::Neq)),
                other => self.error(format!("unexpected character after '!': {}", go_quote_rune(other))),
            },
            '<' | '>' => {
                let (eq, trim, plain) = if c == '<' {
                    (Op::Lte, Op::TrimUpper, Op::Lss)
                } else {
                    (Op::Gte, Op::TrimLower, Op::Gtr)
                };
                let op = if self.accept("=") {
                    eq
                } else if self.accept("/") {
                    trim
                } else {
                    plain
                };
                self.emit(Kind::Operator(op));
            }
            c if c.is_ascii_digit() || (c == '.' && self.peek().is_some_and(|d| d.is_ascii_digit())) => {
                self.pos -= 1;
                self.number_or_duration();
            }
            '"' | '\'' => self.string(c),
            '`' => self.raw_string(),
            c if is_alpha(c) || c == ':' => {
                if !self.bracket_open {
                    self.pos -= 1;
                    return self.keyword_or_identifier();
                }
                if c == ':' {
                    if self.got_colon {
                        return self.error("unexpected colon ':'".into());
                    }
                    self.emit(Kind::Colon);
                    self.got_colon = true;
                    return;
                }
                if self.scan_duration_keyword() {
                    return;
                }
                self.error(format!(
                    "unexpected character: {}, expected ':'",
                    go_quote_rune(Some(c))
                ));
            }
            '(' => {
                self.emit(Kind::LeftParen);
                self.paren_depth += 1;
            }
            ')' => self.right_paren(),
            '{' => {
                self.emit(Kind::LeftBrace);
                self.mode = Mode::InsideBraces;
            }
            '[' => {
                if self.bracket_open {
                    return self.error("unexpected left bracket '['".into());
                }
                self.got_colon = false;
                self.emit(Kind::LeftBracket);
                self.skip_spaces();
                self.bracket_open = true;
                self.mode = Mode::DurationExpr;
            }
            ']' => {
                if !self.bracket_open {
                    return self.error("unexpected right bracket ']'".into());
                }
                self.emit(Kind::RightBracket);
                self.bracket_open = false;
            }
            c => self.error(format!("unexpected character: {}", go_quote_rune(Some(c)))),
        }
    }

    fn inside_braces(&mut self) {
        if self.line_comment() {
            return;
        }
        let Some(c) = self.next() else {
            return self.error("unexpected end of input inside braces".into());
        };
        match c {
            c if is_space(c) => self.skip_spaces(),
            c if is_alpha(c) => {
                while self.peek().is_some_and(is_alnum) {
                    self.pos += 1;
                }
                self.emit(Kind::Identifier);
            }
            ',' => self.emit(Kind::Comma),
            '"' | '\'' => self.string(c),
            '`' => self.raw_string(),
            '=' => {
                let kind = if self.accept("~") {
                    Kind::Operator(Op::EqlRegex)
                } else {
                    Kind::Eql
                };
                self.emit(kind);
            }
            '!' => match self.next() {
                Some('~') => self.emit(Kind::Operator(Op::NeqRegex)),
                Some('=') => self.emit(Kind::Operator(Op::Neq)),
                other => self.error(format!(
                    "unexpected character after '!' inside braces: {}",
                    go_quote_rune(other)
                )),
            },
            '{' => self.error("unexpected left brace '{'".into()),
            '}' => {
                self.emit(Kind::RightBrace);
                self.mode = Mode::Statements;
            }
            c => self.error(format!(
                "unexpected character inside braces: {}",
                go_quote_rune(Some(c))
            )),
        }
    }

    fn duration_expr(&mut self) {
        let Some(c) = self.next() else {
            return self.error("unexpected end of input in duration expression".into());
        };
        match c {
            ']' => {
                self.emit(Kind::RightBracket);
                self.bracket_open = false;
                self.got_colon = false;
                self.mode = Mode::Statements;
            }
            ':' => {
                // Prometheus reports these after the colon, in its place.
                if !self.got_duration {
                    self.start = self.pos;
                    return self.error("unexpected colon before duration in duration expression".into());
                }
                if self.got_colon {
                    self.start = self.pos;
                    return self.error("unexpected repeated colon in duration expression".into());
                }
                self.emit(Kind::Colon);
                self.got_colon = true;
            }
            '(' => {
                self.emit(Kind::LeftParen);
                self.paren_depth += 1;
            }
            ')' => self.right_paren(),
            c if is_space(c) => self.skip_spaces(),
            '+' => self.emit(Kind::Operator(Op::Add)),
            '-' => self.emit(Kind::Operator(Op::Sub)),
            '*' => self.emit(Kind::Operator(Op::Mul)),
            '/' => self.emit(Kind::Operator(Op::Div)),
            '%' => self.emit(Kind::Operator(Op::Mod)),
            '^' => self.emit(Kind::Operator(Op::Pow)),
            ',' => self.emit(Kind::Comma),
            c if duration_keyword_start(c) && self.scan_duration_keyword() => {}
            c if c.is_ascii_digit() || (c == '.' && self.peek().is_some_and(|d| d.is_ascii_digit())) => {
                self.pos -= 1;
                self.got_duration = true;
                self.number_or_duration();
                self.mode = Mode::Statements;
            }
            c => self.error(format!(
                "unexpected character in duration expression: {}",
                go_quote_rune(Some(c))
            )),
        }
    }

    fn right_paren(&mut self) {
        self.paren_depth -= 1;
        if self.paren_depth < 0 {
            // Reported after the parenthesis, in its place.
            self.start = self.pos;
            return self.error("unexpected right parenthesis ')'".into());
        }
        self.emit(Kind::RightParen);
    }

    /// After the first letter of a word inside brackets: a duration
    /// function's name, emitted, or nothing.
    fn scan_duration_keyword(&mut self) -> bool {
        while self.peek().is_some_and(is_alpha) {
            self.pos += 1;
        }
        let Some(p) = duration_keyword(&self.input[self.start..self.pos]) else {
            return false;
        };
        self.emit(Kind::Preprocessor(p));
        true
    }

    fn keyword_or_identifier(&mut self) {
        while self.peek().is_some_and(|c| is_alnum(c) || c == ':') {
            self.pos += 1;
        }
        let word = &self.input[self.start..self.pos];
        let kind = match word_kind(word) {
            // `fill` and its kin are keywords only before their `(`.
            Some(Kind::Keyword(Keyword::Fill | Keyword::FillLeft | Keyword::FillRight))
                if !self.input[self.pos..].trim_start_matches(is_space).starts_with('(') =>
            {
                Kind::Identifier
            }
            Some(kind) => kind,
            None if word.contains(':') => Kind::MetricIdentifier,
            None => Kind::Identifier,
        };
        self.emit(kind);
    }

    fn number_or_duration(&mut self) {
        if self.scan_number() {
            return self.emit(Kind::Number);
        }
        if self.remaining_duration() {
            return self.emit(Kind::Duration);
        }
        let text = go_quote_str(&self.input[self.start..self.pos]);
        self.error(format!("bad number or duration syntax: {text}"));
    }

    /// The units and further parts of a duration after its first number.
    /// A failure's text runs to the character that ended it.
    fn remaining_duration(&mut self) -> bool {
        if !self.accept("smhdwy") {
            return false;
        }
        self.accept("s");
        while self.accept("0123456789") {
            while self.accept("0123456789") {}
            if !self.accept("smhdw") {
                return false;
            }
            self.accept("s");
        }
        match self.peek() {
            Some(c) if is_alnum(c) => {
                self.pos += 1;
                false
            }
            _ => true,
        }
    }

    fn scan_number(&mut self) -> bool {
        let initial = self.pos;
        let mut digits = "0123456789";
        if self.accept("0") && self.accept("xX") {
            self.accept("_");
            digits = "0123456789abcdefABCDEF";
        }
        self.accept(".");
        self.accept(digits);
        let (mut dot, mut exponent) = (false, false);
        loop {
            let c = match self.peek() {
                Some(c) if digits.contains(c) || "._eE".contains(c) => c,
                _ => break,
            };
            if c == '.' && dot || "eE".contains(c) && exponent {
                self.pos += 1;
                return false;
            }
            if self.accept(".") {
                dot = true;
                if self.accept("_.") || digits.len() > 10 {
                    return false;
                }
                continue;
            }
            if self.accept("eE") {
                exponent = true;
                self.accept("+-");
                if self.accept("._eE") || self.peek().is_none() {
                    return false;
                }
                continue;
            }
            if self.accept("_") {
                if self.accept("._eE") || self.peek().is_none() {
                    return false;
                }
                continue;
            }
            while self.accept(digits) {}
        }
        self.pos != initial && !self.peek().is_some_and(is_alnum)
    }

    fn string(&mut self, quote: char) {
        loop {
            match self.next() {
                Some('\\') => {
                    if let Err(message) = self.escape(quote) {
                        return self.error(message);
                    }
                }
                Some('\u{FFFD}') => return self.error("invalid UTF-8 rune".into()),
                None | Some('\n') => return self.error("unterminated quoted string".into()),
                Some(c) if c == quote => break,
                Some(_) => {}
            }
        }
        self.emit(Kind::String);
    }

    fn raw_string(&mut self) {
        loop {
            match self.next() {
                Some('\u{FFFD}') => return self.error("invalid UTF-8 rune".into()),
                None => return self.error("unterminated raw string".into()),
                Some('`') => break,
                Some(_) => {}
            }
        }
        self.emit(Kind::String);
    }

    /// One escape sequence after its backslash.
    fn escape(&mut self, quote: char) -> Result<(), String> {
        let c = self.next();
        let (mut n, base, max) = match c {
            Some('a' | 'b' | 'f' | 'n' | 'r' | 't' | 'v' | '\\') => return Ok(()),
            Some(c) if c == quote => return Ok(()),
            Some('0'..='7') => (3, 8, 255),
            Some('x') => (2, 16, 255),
            Some('u') => (4, 16, char::MAX as u32),
            Some('U') => (8, 16, char::MAX as u32),
            None => return Err("escape sequence not terminated".into()),
            Some(c) => return Err(format!("unknown escape sequence {}", go_unicode(c))),
        };
        let mut c = if matches!(c, Some('x' | 'u' | 'U')) {
            self.next()
        } else {
            c
        };
        let mut value = 0u32;
        while n > 0 {
            match c.and_then(|c| c.to_digit(16)).filter(|&d| d < base) {
                Some(d) => value = value * base + d,
                None => {
                    return Err(match c {
                        None => "escape sequence not terminated".into(),
                        Some(c) => format!("illegal character {} in escape sequence", go_unicode(c)),
                    });
                }
            }
            n -= 1;
            if n > 0 {
                c = self.next();
            }
        }
        if value > max || (0xD800..0xE000).contains(&value) {
            return Err("escape sequence is an invalid Unicode code point".into());
        }
        Ok(())
    }
}

fn duration_keyword_start(c: char) -> bool {
    matches!(c.to_ascii_lowercase(), 's' | 'r' | 'm')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(q: &str) -> Vec<(Kind, usize, String)> {
        tokens(q).into_iter().map(|t| (t.kind, t.pos, t.text)).collect()
    }

    #[test]
    fn words_are_keywords_outside_braces_and_label_names_inside() {
        let t = kinds(r#"sum by (le) (rate(x{by="a"}[5m]))"#);
        let k: Vec<Kind> = t.iter().map(|t| t.0).collect();
        assert_eq!(k[0], Kind::Aggregator);
        assert_eq!(k[1], Kind::Keyword(Keyword::By));
        assert_eq!(t[10], (Kind::Identifier, 20, "by".into()));
        assert_eq!(t[15], (Kind::Duration, 28, "5m".into()));
        assert_eq!(*k.last().unwrap(), Kind::Eof);
        assert_eq!(kinds("fill_left")[0].0, Kind::Identifier, "no ( follows");
        assert_eq!(kinds("a:b")[0].0, Kind::MetricIdentifier);
        assert_eq!(kinds("Inf")[0].0, Kind::Number);
    }

    #[test]
    fn numbers_and_durations() {
        for (q, kind) in [
            ("1", Kind::Number),
            ("1.5e3", Kind::Number),
            ("0x1F", Kind::Number),
            ("1_000", Kind::Number),
            (".5", Kind::Number),
            ("1h30m", Kind::Duration),
            ("5ms", Kind::Duration),
        ] {
            let t = kinds(q);
            assert_eq!((t[0].0, t[0].2.as_str(), t[1].0), (kind, q, Kind::Eof), "{q}");
        }
    }

    #[test]
    fn errors_carry_prometheus_words_and_where_the_token_starts() {
        for (q, pos, message) in [
            (".", 0, "unexpected character: '.'"),
            ("2.5.", 0, r#"bad number or duration syntax: "2.5.""#),
            ("0deadbeef", 0, r#"bad number or duration syntax: "0de""#),
            ("(1))", 4, "unexpected right parenthesis ')'"),
            ("1 =~ 1", 2, "unexpected character after '=': '~'"),
            ("some}", 4, "unexpected character: '}'"),
            (r#"foo{a:b="b"}"#, 5, "unexpected character inside braces: ':'"),
            (r#"foo["5m"]"#, 4, r#"unexpected character in duration expression: '"'"#),
            ("foo[5m1]", 4, r#"bad number or duration syntax: "5m1""#),
            ("foo[5s x 5s]", 7, "unexpected character: 'x', expected ':'"),
            (r#"sum by ("foo)(x)"#, 8, "unterminated quoted string"),
            ("`\\``", 3, "unterminated raw string"),
            (r#""\c""#, 0, "unknown escape sequence U+0063 'c'"),
            (r#""\x.""#, 0, "illegal character U+002E '.' in escape sequence"),
            (
                "foo{bar=\"baz\"}[",
                15,
                "unexpected end of input in duration expression",
            ),
            ("rate(up[5m]", 11, "unclosed left parenthesis"),
            ("x{a=\"b\"", 7, "unexpected end of input inside braces"),
        ] {
            let last = tokens(q).pop().unwrap();
            assert_eq!(
                (last.kind, last.pos, last.text.as_str()),
                (Kind::Error, pos, message),
                "{q}"
            );
        }
    }

    #[test]
    fn descriptions_as_prometheus_gives_them() {
        let d = |q: &str, i: usize| tokens(q)[i].describe();
        assert_eq!(d("a b", 1), r#"identifier "b""#);
        assert_eq!(d("1 * 2", 1), "<op:*>");
        assert_eq!(d("a and b", 1), "<op:and>");
        assert_eq!(d("sum by", 1), "<by>");
        assert_eq!(d("sum", 0), "<aggr:sum>");
        assert_eq!(d("x,", 1), r#"",""#);
        assert_eq!(d("x", 1), "end of input");
        assert_eq!(d(r#"x "abc""#, 1), r#"string "\"abc\"""#);
        assert_eq!(d("1 12345678901", 1), r#"number "1234567890"..."#);
        assert_eq!(d("1 some_metric", 1), r#"identifier "some_metric""#);
        assert_eq!(d("x{=~", 2), "<op:=~>");
        assert_eq!(d("x{a!=", 3), "<op:!=>");
        // Eleven bytes, five runes: all shown, and cut.
        assert_eq!(d("x \"日本語\"", 1), r#"string "\"日本語\""..."#);
    }
}
