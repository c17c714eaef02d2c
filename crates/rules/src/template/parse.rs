//! Parses lexed tokens into Go's template tree: text, actions, if/range/with
//! (with else and else-if chains), break/continue, define/template/block.

use std::collections::HashMap;

use super::lex::{Tok, Token};

#[derive(Debug, Clone)]
pub enum Node {
    Text(String),
    Action(Pipe),
    If(Branch),
    Range(Branch),
    With(Branch),
    Break,
    Continue,
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
}

#[derive(Debug, Clone)]
pub struct Branch {
    pub pipe: Pipe,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

#[derive(Debug, Clone)]
pub struct Pipe {
    pub pos: usize,
    pub decl: Vec<String>,
    /// `=` rather than `:=`.
    pub assign: bool,
    pub cmds: Vec<Cmd>,
}

#[derive(Debug, Clone)]
pub struct Cmd {
    pub pos: usize,
    /// Each operand with its position.
    pub args: Vec<(usize, Operand)>,
}

#[derive(Debug, Clone)]
pub enum Operand {
    Dot,
    Nil,
    Bool(bool),
    Int(i64),
    /// The value and its text (errors show the text).
    Float(f64, String),
    Str(String),
    /// `.A.B`: fields of dot.
    Field(Vec<String>),
    /// `$x.A.B`.
    Var(String, Vec<String>),
    /// A function name.
    Func(String),
    /// `(pipeline).A.B`.
    Chain(Box<Operand>, Vec<String>),
    Pipe(Box<Pipe>),
}

pub struct Tree {
    pub root: Vec<Node>,
    pub defines: HashMap<String, Vec<Node>>,
}

pub type ParseError = (usize, String);

/// Bounds parsing's recursion (rule files are trusted, but a stack overflow would end the server).
const MAX_NESTING: usize = 200;

pub fn parse(tokens: Vec<Token>, is_func: &dyn Fn(&str) -> bool) -> Result<Tree, ParseError> {
    let end = tokens.last().map(|t| t.pos).unwrap_or(0);
    let mut p = Parser {
        tokens,
        at: 0,
        vars: vec!["".to_string()],
        defines: HashMap::new(),
        is_func,
        range_depth: 0,
        nesting: 0,
        end,
    };
    let (root, stop) = p.list()?;
    match stop {
        Stop::Eof => Ok(Tree {
            root,
            defines: p.defines,
        }),
        Stop::End(pos) => Err((pos, "unexpected {{end}}".into())),
        Stop::Else(pos, _) => Err((pos, "unexpected {{else}}".into())),
    }
}

enum Stop {
    Eof,
    End(usize),
    /// `{{else}}`, or `{{else if ...}}` / `{{else with ...}}` (the keyword).
    Else(usize, Option<String>),
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    /// Variables in scope (Go checks them at parse time); "" is `$`.
    vars: Vec<String>,
    defines: HashMap<String, Vec<Node>>,
    is_func: &'a dyn Fn(&str) -> bool,
    range_depth: usize,
    /// Open branches and parentheses (bounded: parsing recurses on them).
    nesting: usize,
    end: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Result<Token, ParseError> {
        let t = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or((self.end, "unexpected EOF".to_string()))?;
        self.at += 1;
        Ok(t)
    }

    fn expect_close(&mut self, what: &str) -> Result<(), ParseError> {
        let t = self.next()?;
        if t.tok == Tok::Close {
            Ok(())
        } else {
            Err((t.pos, format!("unexpected {} in {what}", describe(&t.tok))))
        }
    }

    fn list(&mut self) -> Result<(Vec<Node>, Stop), ParseError> {
        let mut nodes = Vec::new();
        while let Some(t) = self.peek().cloned() {
            self.at += 1;
            match t.tok {
                Tok::Text(s) => nodes.push(Node::Text(s)),
                Tok::Open => {
                    let kw = match self.peek() {
                        Some(Token {
                            tok: Tok::Ident(name), ..
                        }) => Some(name.clone()),
                        _ => None,
                    };
                    match kw.as_deref() {
                        Some("end") => {
                            self.at += 1;
                            self.expect_close("end")?;
                            return Ok((nodes, Stop::End(t.pos)));
                        }
                        Some("else") => {
                            self.at += 1;
                            let chained = match self.peek() {
                                Some(Token { tok: Tok::Ident(k), .. }) if k == "if" || k == "with" => Some(k.clone()),
                                _ => None,
                            };
                            if chained.is_none() {
                                self.expect_close("else")?;
                            }
                            return Ok((nodes, Stop::Else(t.pos, chained)));
                        }
                        Some(k @ ("if" | "range" | "with")) => {
                            let k = k.to_string();
                            self.at += 1;
                            nodes.push(self.branch(&k)?);
                        }
                        Some(k @ ("break" | "continue")) => {
                            let k = k.to_string();
                            self.at += 1;
                            if self.range_depth == 0 {
                                return Err((t.pos, format!("{{{{{k}}}}} outside {{{{range}}}}")));
                            }
                            self.expect_close(&k)?;
                            nodes.push(if k == "break" { Node::Break } else { Node::Continue });
                        }
                        Some("define") => {
                            self.at += 1;
                            let name = self.template_name("define")?;
                            self.expect_close("define clause")?;
                            let saved = std::mem::replace(&mut self.vars, vec![String::new()]);
                            let (body, stop) = self.list()?;
                            self.vars = saved;
                            match stop {
                                Stop::End(_) => {}
                                _ => return Err((t.pos, "unexpected EOF".into())),
                            }
                            self.defines.insert(name, body);
                        }
                        Some(k @ ("template" | "block")) => {
                            let is_block = k == "block";
                            self.at += 1;
                            let name = self.template_name(if is_block { "block clause" } else { "template clause" })?;
                            let pipe = if matches!(self.peek(), Some(Token { tok: Tok::Close, .. })) {
                                self.at += 1;
                                None
                            } else {
                                Some(self.pipeline("template", false, Tok::Close)?)
                            };
                            if is_block {
                                let saved = std::mem::replace(&mut self.vars, vec![String::new()]);
                                let (body, stop) = self.list()?;
                                self.vars = saved;
                                if !matches!(stop, Stop::End(_)) {
                                    return Err((t.pos, "unexpected EOF".into()));
                                }
                                self.defines.insert(name.clone(), body);
                            }
                            nodes.push(Node::Template { pos: t.pos, name, pipe });
                        }
                        _ => {
                            let pipe = self.pipeline("command", true, Tok::Close)?;
                            nodes.push(Node::Action(pipe));
                        }
                    }
                }
                other => return Err((t.pos, format!("unexpected {}", describe(&other)))),
            }
        }
        Ok((nodes, Stop::Eof))
    }

    fn template_name(&mut self, context: &str) -> Result<String, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Str(s) => Ok(s),
            other => Err((t.pos, format!("unexpected {} in {context}", describe(&other)))),
        }
    }

    /// After `{{if`, `{{range` or `{{with`: the pipeline, the body, an else part, `{{end}}`.
    fn branch(&mut self, keyword: &str) -> Result<Node, ParseError> {
        let pos = self.peek().map(|t| t.pos).unwrap_or(self.end);
        self.enter(pos)?;
        let node = self.branch_body(keyword);
        self.nesting -= 1;
        node
    }

    fn enter(&mut self, pos: usize) -> Result<(), ParseError> {
        if self.nesting >= MAX_NESTING {
            return Err((pos, format!("more than {MAX_NESTING} nested actions or parentheses")));
        }
        self.nesting += 1;
        Ok(())
    }

    fn branch_body(&mut self, keyword: &str) -> Result<Node, ParseError> {
        let scope = self.vars.len();
        let pipe = self.pipeline(keyword, true, Tok::Close)?;
        if keyword == "range" {
            self.range_depth += 1;
        }
        let body = self.list();
        if keyword == "range" {
            self.range_depth -= 1;
        }
        let (list, stop) = body?;
        let else_list = match stop {
            Stop::End(_) => None,
            Stop::Else(_, None) => {
                let (else_list, stop) = self.list()?;
                match stop {
                    Stop::End(_) => Some(else_list),
                    Stop::Else(pos, _) => return Err((pos, "expected end; found {{else}}".into())),
                    Stop::Eof => return Err((self.end, "unexpected EOF".into())),
                }
            }
            Stop::Else(_, Some(chained)) => {
                // `{{else if x}}`: a nested branch that shares the outer `{{end}}`.
                self.at += 1;
                Some(vec![self.branch(&chained)?])
            }
            Stop::Eof => return Err((self.end, "unexpected EOF".into())),
        };
        self.vars.truncate(scope);
        let b = Branch { pipe, list, else_list };
        Ok(match keyword {
            "if" => Node::If(b),
            "range" => Node::Range(b),
            _ => Node::With(b),
        })
    }

    /// A pipeline up to `end` (`}}` or `)`), with an optional declaration.
    fn pipeline(&mut self, context: &str, allow_decl: bool, end: Tok) -> Result<Pipe, ParseError> {
        let pos = self.peek().map(|t| t.pos).unwrap_or(self.end);
        let mut decl = Vec::new();
        let mut assign = false;
        if allow_decl {
            let mut k = self.at;
            let mut names = Vec::new();
            loop {
                match (
                    self.tokens.get(k).map(|t| &t.tok),
                    self.tokens.get(k + 1).map(|t| &t.tok),
                ) {
                    (Some(Tok::Var(v)), Some(Tok::Comma)) if names.is_empty() => {
                        names.push(v.clone());
                        k += 2;
                    }
                    (Some(Tok::Var(v)), Some(op @ (Tok::Declare | Tok::Assign))) => {
                        names.push(v.clone());
                        assign = *op == Tok::Assign;
                        k += 2;
                        break;
                    }
                    _ => {
                        names.clear();
                        break;
                    }
                }
            }
            if !names.is_empty() {
                self.at = k;
                if assign {
                    for n in &names {
                        if !self.vars.contains(n) {
                            return Err((pos, format!("undefined variable \"${n}\"")));
                        }
                    }
                }
                decl = names;
            }
        }
        let mut cmds = Vec::new();
        loop {
            let cmd = self.command(&end, if cmds.is_empty() { context } else { "command" })?;
            cmds.push(cmd);
            let t = self.next()?;
            if t.tok == Tok::Pipe {
                continue;
            }
            if t.tok == end {
                break;
            }
            return Err((t.pos, format!("unexpected {} in operand", describe(&t.tok))));
        }
        if !assign {
            self.vars.extend(decl.iter().cloned());
        }
        Ok(Pipe {
            pos,
            decl,
            assign,
            cmds,
        })
    }

    fn command(&mut self, end: &Tok, context: &str) -> Result<Cmd, ParseError> {
        let pos = self.peek().map(|t| t.pos).unwrap_or(self.end);
        let mut args = Vec::new();
        while let Some(t) = self.peek() {
            if t.tok == Tok::Pipe || t.tok == *end || t.tok == Tok::Close || t.tok == Tok::RParen {
                break;
            }
            let pos = t.pos;
            args.push(self.operand(pos)?);
        }
        if args.is_empty() {
            return Err((pos, format!("missing value for {context}")));
        }
        Ok(Cmd { pos, args })
    }

    /// An operand and its position: Go places a field chain at its first chained field.
    fn operand(&mut self, mut pos: usize) -> Result<(usize, Operand), ParseError> {
        let t = self.next()?;
        let mut op = match t.tok {
            Tok::Dot => Operand::Dot,
            Tok::Ident(n) => match n.as_str() {
                "nil" => Operand::Nil,
                "true" => Operand::Bool(true),
                "false" => Operand::Bool(false),
                _ if (self.is_func)(&n) => Operand::Func(n),
                _ => return Err((t.pos, format!("function {n:?} not defined"))),
            },
            Tok::Number(s) => parse_number(&s).ok_or((t.pos, format!("illegal number syntax: {s:?}")))?,

            Tok::Char(c) => Operand::Int(c as i64),
            Tok::Str(s) => Operand::Str(s),
            Tok::Field(f) => Operand::Field(vec![f]),
            Tok::Var(v) => {
                if !self.vars.contains(&v) {
                    return Err((t.pos, format!("undefined variable \"${v}\"")));
                }
                Operand::Var(v, Vec::new())
            }
            Tok::LParen => {
                self.enter(t.pos)?;
                let pipe = self.pipeline("parenthesized pipeline", false, Tok::RParen);
                self.nesting -= 1;
                Operand::Pipe(Box::new(pipe?))
            }
            other => return Err((t.pos, format!("unexpected {} in operand", describe(&other)))),
        };
        let mut chained = false;
        while let Some(Token {
            tok: Tok::Field(f),
            spaced: false,
            pos: field_pos,
        }) = self.peek()
        {
            if !chained {
                pos = *field_pos;
                chained = true;
            }
            let f = f.clone();
            self.at += 1;
            op = match op {
                Operand::Field(mut fs) => {
                    fs.push(f);
                    Operand::Field(fs)
                }
                Operand::Var(v, mut fs) => {
                    fs.push(f);
                    Operand::Var(v, fs)
                }
                Operand::Chain(inner, mut fs) => {
                    fs.push(f);
                    Operand::Chain(inner, fs)
                }
                Operand::Dot => Operand::Field(vec![f]),
                other => Operand::Chain(Box::new(other), vec![f]),
            };
        }
        Ok((pos, op))
    }
}

/// Go's number constants: an integer when the text has no fraction or exponent.
fn parse_number(text: &str) -> Option<Operand> {
    let clean: String = text.chars().filter(|&c| c != '_').collect();
    let (neg, digits) = match clean.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let lower = digits.to_ascii_lowercase();
    let radix_int = if let Some(h) = lower.strip_prefix("0x") {
        if h.contains(['.', 'p']) {
            None
        } else {
            Some(i64::from_str_radix(h, 16).ok()?)
        }
    } else if let Some(o) = lower.strip_prefix("0o") {
        Some(i64::from_str_radix(o, 8).ok()?)
    } else if let Some(b) = lower.strip_prefix("0b") {
        Some(i64::from_str_radix(b, 2).ok()?)
    } else if !lower.contains(['.', 'e']) {
        if lower.len() > 1 && lower.starts_with('0') {
            Some(i64::from_str_radix(&lower[1..], 8).ok()?)
        } else {
            lower.parse::<i64>().ok()
        }
    } else {
        None
    };
    match radix_int {
        Some(i) => Some(Operand::Int(if neg { -i } else { i })),
        None => {
            let f: f64 = lower.parse().ok()?;
            Some(Operand::Float(if neg { -f } else { f }, text.to_string()))
        }
    }
}

fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Text(_) => "text".into(),
        Tok::Open => "\"{{\"".into(),
        Tok::Close => "\"}}\"".into(),
        Tok::Ident(s) => format!("{s:?}"),
        Tok::Field(s) => format!("\".{s}\""),
        Tok::Dot => "\".\"".into(),
        Tok::Var(s) => format!("\"${s}\""),
        Tok::Str(s) => format!("{s:?}"),
        Tok::Number(s) => format!("{s:?}"),
        Tok::Char(c) => format!("{c:?}"),
        Tok::LParen => "\"(\"".into(),
        Tok::RParen => "\")\"".into(),
        Tok::Pipe => "\"|\"".into(),
        Tok::Declare => "\":=\"".into(),
        Tok::Assign => "\"=\"".into(),
        Tok::Comma => "\",\"".into(),
    }
}
