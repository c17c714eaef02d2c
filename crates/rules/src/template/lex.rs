//! Splits a Go template into text and the tokens of its actions, with Go's
//! trim markers (`{{- ` and ` -}}`) and comments (`{{/* */}}`).

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Text(String),
    /// `{{`; the trim of preceding text is already applied.
    Open,
    /// `}}`.
    Close,
    Ident(String),
    /// `.Name` (a field); `.` alone is `Dot`.
    Field(String),
    Dot,
    /// `$name` (`$` alone has the empty name).
    Var(String),
    Str(String),
    Number(String),
    Char(char),
    LParen,
    RParen,
    Pipe,
    Declare,
    Assign,
    Comma,
}

#[derive(Debug, Clone)]
pub struct Token {
    pub tok: Tok,
    /// Byte offset in the template text (for error positions).
    pub pos: usize,
    /// Whether white space came right before (Go separates operands by it).
    pub spaced: bool,
}

pub fn lex(text: &str) -> Result<Vec<Token>, (usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    let bytes = text.as_bytes();
    let mut trim_next_text = false;
    while i < text.len() {
        let open = text[i..].find("{{").map(|o| i + o);
        let text_end = open.unwrap_or(text.len());
        let mut chunk = &text[i..text_end];
        if trim_next_text {
            chunk = chunk.trim_start_matches(is_space);
            trim_next_text = false;
        }
        let Some(open) = open else {
            push_text(&mut out, chunk, i);
            break;
        };
        let trims_left = text[open + 2..].starts_with("- ")
            || text[open + 2..].starts_with("-\t")
            || text[open + 2..].starts_with("-\n")
            || text[open + 2..].starts_with("-\r");
        if trims_left {
            chunk = chunk.trim_end_matches(is_space);
        }
        push_text(&mut out, chunk, i);
        let mut j = open + 2 + if trims_left { 2 } else { 0 };
        // A comment: `{{/*` ... `*/}}`, optionally trimmed.
        let after_space = skip_spaces(text, j);
        if text[if trims_left { after_space } else { j }..].starts_with("/*") {
            let start = if trims_left { after_space } else { j };
            let Some(end) = text[start + 2..].find("*/").map(|e| start + 2 + e + 2) else {
                return Err((open, "unclosed comment".into()));
            };
            let mut k = end;
            let trims_right = text[k..].starts_with(" -}}");
            if trims_right {
                k += 1;
            }
            if text[k..].starts_with("-}}") && trims_right {
                trim_next_text = true;
                i = k + 3;
            } else if text[k..].starts_with("}}") {
                i = k + 2;
            } else {
                return Err((open, "comment ends before closing delimiter".into()));
            }
            continue;
        }
        out.push(Token {
            tok: Tok::Open,
            pos: open,
            spaced: false,
        });
        // Tokens of the action up to `}}` or ` -}}`.
        loop {
            let start = j;
            j = skip_spaces(text, j);
            let spaced = j > start;
            if j >= text.len() {
                return Err((open, "unclosed action".into()));
            }
            if spaced && text[j..].starts_with("-}}") {
                trim_next_text = true;
                out.push(Token {
                    tok: Tok::Close,
                    pos: j,
                    spaced,
                });
                j += 3;
                break;
            }
            if text[j..].starts_with("}}") {
                out.push(Token {
                    tok: Tok::Close,
                    pos: j,
                    spaced,
                });
                j += 2;
                break;
            }
            let c = bytes[j];
            let pos = j;
            let tok = match c {
                b'(' => {
                    j += 1;
                    Tok::LParen
                }
                b')' => {
                    j += 1;
                    Tok::RParen
                }
                b'|' => {
                    j += 1;
                    Tok::Pipe
                }
                b',' => {
                    j += 1;
                    Tok::Comma
                }
                b'=' => {
                    j += 1;
                    Tok::Assign
                }
                b':' => {
                    if text[j..].starts_with(":=") {
                        j += 2;
                        Tok::Declare
                    } else {
                        return Err((pos, "expected :=".into()));
                    }
                }
                b'"' => {
                    let (s, end) = quoted(text, j)?;
                    j = end;
                    Tok::Str(s)
                }
                b'`' => {
                    let Some(end) = text[j + 1..].find('`') else {
                        return Err((pos, "unterminated raw quoted string".into()));
                    };
                    let s = text[j + 1..j + 1 + end].to_string();
                    j = j + 1 + end + 1;
                    Tok::Str(s)
                }
                b'\'' => {
                    let (s, end) = quoted(text, j)?;
                    j = end;
                    let mut chars = s.chars();
                    match (chars.next(), chars.next()) {
                        (Some(ch), None) => Tok::Char(ch),
                        _ => return Err((pos, "malformed character constant".into())),
                    }
                }
                b'$' => {
                    let end = ident_end(text, j + 1);
                    let name = text[j + 1..end].to_string();
                    j = end;
                    Tok::Var(name)
                }
                b'.' if j + 1 < text.len() && bytes[j + 1].is_ascii_digit() => {
                    let end = number_end(text, j);
                    let n = text[j..end].to_string();
                    j = end;
                    Tok::Number(n)
                }
                b'.' => {
                    let end = ident_end(text, j + 1);
                    if end == j + 1 {
                        j += 1;
                        Tok::Dot
                    } else {
                        let name = text[j + 1..end].to_string();
                        j = end;
                        Tok::Field(name)
                    }
                }
                b'0'..=b'9' | b'-' | b'+' => {
                    let end = number_end(text, j);
                    if end == j {
                        return Err((pos, format!("bad character {:?}", c as char)));
                    }
                    let n = text[j..end].to_string();
                    j = end;
                    Tok::Number(n)
                }
                _ if c == b'_' || c.is_ascii_alphabetic() || c >= 0x80 => {
                    let end = ident_end(text, j);
                    let name = text[j..end].to_string();
                    j = end;
                    Tok::Ident(name)
                }
                _ => return Err((pos, format!("bad character {:?}", c as char))),
            };
            out.push(Token { tok, pos, spaced });
        }
        i = j;
    }
    Ok(out)
}

fn push_text(out: &mut Vec<Token>, chunk: &str, pos: usize) {
    if !chunk.is_empty() {
        out.push(Token {
            tok: Tok::Text(chunk.to_string()),
            pos,
            spaced: false,
        });
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn skip_spaces(text: &str, mut j: usize) -> usize {
    while j < text.len() && matches!(text.as_bytes()[j], b' ' | b'\t' | b'\r' | b'\n') {
        j += 1;
    }
    j
}

fn ident_end(text: &str, mut j: usize) -> usize {
    while let Some(c) = text[j..].chars().next() {
        if c == '_' || c.is_alphanumeric() {
            j += c.len_utf8();
        } else {
            break;
        }
    }
    j
}

fn number_end(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let mut j = start;
    if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
        j += 1;
    }
    let digits_start = j;
    while j < bytes.len() {
        let c = bytes[j];
        let exponent_sign = (c == b'+' || c == b'-') && matches!(bytes[j - 1], b'e' | b'E' | b'p' | b'P');
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || exponent_sign {
            j += 1;
        } else {
            break;
        }
    }
    if j == digits_start { start } else { j }
}

/// A Go interpreted string (or char) literal starting at the quote at `start`.
fn quoted(text: &str, start: usize) -> Result<(String, usize), (usize, String)> {
    let quote = text.as_bytes()[start] as char;
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'a' => out.push('\x07'),
                    'b' => out.push('\x08'),
                    'f' => out.push('\x0c'),
                    'v' => out.push('\x0b'),
                    '\\' | '"' | '\'' => out.push(e),
                    'x' | 'u' | 'U' => {
                        let len = match e {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let mut code = 0u32;
                        for _ in 0..len {
                            let Some((_, h)) = chars.next() else {
                                return Err((start, "unterminated quoted string".into()));
                            };
                            code = code * 16 + h.to_digit(16).ok_or((start, "invalid syntax".to_string()))?;
                        }
                        out.push(char::from_u32(code).ok_or((start, "invalid syntax".to_string()))?);
                    }
                    _ => return Err((start, "invalid syntax".into())),
                }
            }
            '\n' => return Err((start, "unterminated quoted string".into())),
            _ if c == quote => return Ok((out, start + 1 + k + 1)),
            _ => out.push(c),
        }
    }
    Err((start, "unterminated quoted string".into()))
}
