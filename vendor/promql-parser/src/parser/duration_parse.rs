//! Reading duration expressions. The lexer finds where one ends with
//! [`read_prefix`] and hands it to the grammar as one `DURATION_EXPR`
//! token, whose action reads it again with [`read_range`] or
//! [`read_offset`]: the grammar stays as it was, and the precedence rules
//! of Prometheus' `duration_expr` and `offset_duration_expr` live here.

use std::time::Duration;

use super::duration_expr::{DurationExpr, DurationOp};
use crate::util::{parse_duration, parse_str_radix};

/// Where a duration expression is written; an offset ends sooner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A range or subquery step, between `[`, `:` and `]`.
    Bracket,
    /// After `offset`.
    Offset,
}

/// The duration expression at the start of `text` and the length of its
/// text (trailing spaces not included).
pub(crate) fn read_prefix(text: &str, place: Place) -> Result<(DurationExpr, usize), String> {
    let mut r = Reader {
        s: text.as_bytes(),
        i: 0,
    };
    let e = match place {
        Place::Bracket => r.expr(0)?,
        Place::Offset => r.offset()?,
    };
    Ok((e, r.i))
}

fn read_all(text: &str, place: Place) -> Result<DurationExpr, String> {
    let (e, len) = read_prefix(text, place)?;
    match text[len..].trim_start().chars().next() {
        None => Ok(e),
        Some(c) => Err(format!(
            "unexpected character in duration expression: {c:?}"
        )),
    }
}

/// A range or subquery step: a fixed positive duration when written as a
/// (signed) literal, as Prometheus checks those when parsing, else the
/// expression to evaluate per query.
pub(crate) fn read_range(text: &str) -> Result<(Duration, Option<DurationExpr>), String> {
    match read_all(text, Place::Bracket)? {
        DurationExpr::Literal { secs, .. } if secs <= 0.0 => {
            Err("duration must be greater than 0".into())
        }
        DurationExpr::Literal { secs, .. } => Ok((Duration::from_secs_f64(secs), None)),
        e => Ok((Duration::ZERO, Some(e))),
    }
}

/// An offset written as an expression.
pub(crate) fn read_offset(text: &str) -> Result<DurationExpr, String> {
    read_all(text, Place::Offset)
}

/// Whether `rest`, the text after `offset`, starts an offset that the
/// lexer's ordinary tokens cannot express: a parenthesis, a duration
/// function, or a sign before either or before another sign.
pub(crate) fn starts_offset_expr(rest: &str) -> bool {
    let rest = rest.trim_start();
    let after_sign = match rest.strip_prefix(['+', '-']) {
        Some(after) => after.trim_start(),
        None => rest,
    };
    let signed = after_sign.len() != rest.len();
    let word_len = after_sign
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let word = after_sign[..word_len].to_ascii_lowercase();
    after_sign.starts_with('(')
        || (signed && after_sign.starts_with(['+', '-']))
        || (function(&word).is_some() && after_sign[word_len..].trim_start().starts_with('('))
}

#[derive(Clone, Copy)]
enum Function {
    Step,
    Range,
    MinOf,
    MaxOf,
}

fn function(word: &str) -> Option<Function> {
    Some(match word {
        "step" => Function::Step,
        "range" => Function::Range,
        "min_of" => Function::MinOf,
        "max_of" => Function::MaxOf,
        _ => return None,
    })
}

/// Binding strength of the binary operators; a sign binds like `*` (its
/// operand is an expression of `^` only), as in Prometheus.
fn binary_op(b: u8) -> Option<(DurationOp, u8)> {
    Some(match b {
        b'+' => (DurationOp::Add, 1),
        b'-' => (DurationOp::Sub, 1),
        b'*' => (DurationOp::Mul, 2),
        b'/' => (DurationOp::Div, 2),
        b'%' => (DurationOp::Mod, 2),
        b'^' => (DurationOp::Pow, 3),
        _ => return None,
    })
}
const POW_STRENGTH: u8 = 3;

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn peek(&mut self) -> Option<u8> {
        while self.s.get(self.i).is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, want: u8) -> Result<(), String> {
        match self.peek() {
            Some(b) if b == want => {
                self.i += 1;
                Ok(())
            }
            Some(b) => Err(format!(
                "unexpected character in duration expression: {:?}, expected {:?}",
                b as char, want as char
            )),
            None => Err("unexpected end of input in duration expression".into()),
        }
    }

    /// Binary operations binding at least as strongly as `min`.
    fn expr(&mut self, min: u8) -> Result<DurationExpr, String> {
        let lhs = self.unary()?;
        self.continue_from(lhs, min)
    }

    fn continue_from(&mut self, mut lhs: DurationExpr, min: u8) -> Result<DurationExpr, String> {
        loop {
            let end = self.i;
            let Some((op, strength)) = self.peek().and_then(binary_op) else {
                self.i = end;
                return Ok(lhs);
            };
            if strength < min {
                self.i = end;
                return Ok(lhs);
            }
            self.i += 1;
            let next = if op == DurationOp::Pow {
                strength
            } else {
                strength + 1
            };
            let rhs = self.expr(next)?;
            if let (DurationOp::Div | DurationOp::Mod, DurationExpr::Literal { secs, .. }) =
                (op, &rhs)
            {
                if *secs == 0.0 {
                    let what = if op == DurationOp::Div {
                        "division"
                    } else {
                        "modulo"
                    };
                    return Err(format!("{what} by zero"));
                }
            }
            lhs = DurationExpr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
    }

    /// A signed operand: the sign takes an expression of `^` only.
    fn unary(&mut self) -> Result<DurationExpr, String> {
        match self.peek() {
            Some(sign @ (b'+' | b'-')) => {
                self.i += 1;
                let operand = self.expr(POW_STRENGTH)?;
                Ok(signed(sign, operand))
            }
            _ => self.primary(),
        }
    }

    /// An offset, as Prometheus' `offset_duration_expr`: one signed operand,
    /// unless it starts with a parenthesis or two signs, which go on as a
    /// whole expression.
    fn offset(&mut self) -> Result<DurationExpr, String> {
        let start = self.i;
        match self.peek() {
            Some(b'(') => self.expr(0),
            Some(sign @ (b'+' | b'-')) => {
                self.i += 1;
                if matches!(self.peek(), Some(b'+' | b'-')) {
                    self.i = start;
                    return self.expr(0);
                }
                let operand = self.primary()?;
                Ok(signed(sign, operand))
            }
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<DurationExpr, String> {
        match self.peek() {
            Some(b'(') => {
                self.i += 1;
                let e = self.expr(0)?;
                self.expect(b')')?;
                Ok(DurationExpr::Paren(Box::new(e)))
            }
            Some(b) if b.is_ascii_digit() || b == b'.' => self.literal(),
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => self.call(),
            Some(b) => Err(format!(
                "unexpected character in duration expression: {:?}",
                b as char
            )),
            None => Err("unexpected end of input in duration expression".into()),
        }
    }

    fn word(&mut self) -> &str {
        let start = self.i;
        while let Some(&b) = self.s.get(self.i) {
            // A number's exponent takes a sign (`2.5e-3`); a duration's
            // units never end in `e`.
            let exponent_sign = (b == b'-' || b == b'+')
                && self.i > start
                && matches!(self.s[self.i - 1], b'e' | b'E')
                && self.s[start..self.i - 1].iter().all(|c| c.is_ascii_digit() || *c == b'.' || *c == b'_')
                && self.s.get(self.i + 1).is_some_and(u8::is_ascii_digit);
            if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || exponent_sign) {
                break;
            }
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default()
    }

    fn literal(&mut self) -> Result<DurationExpr, String> {
        let text = self.word().to_string();
        if let Some(secs) = number(&text) {
            return Ok(DurationExpr::Literal {
                secs,
                duration: false,
            });
        }
        let secs = match parse_duration(&text) {
            Ok(d) => d.as_secs_f64(),
            // A zero duration is a fine operand (`30m + 0s`).
            Err(e) if e == "duration must be greater than 0" => 0.0,
            Err(_) => return Err(format!("bad number or duration syntax: {text}")),
        };
        Ok(DurationExpr::Literal {
            secs,
            duration: true,
        })
    }

    fn call(&mut self) -> Result<DurationExpr, String> {
        let word = self.word().to_ascii_lowercase();
        let Some(f) = function(&word) else {
            return Err(format!(
                "unexpected identifier {word:?} in duration expression"
            ));
        };
        self.expect(b'(')?;
        let e = match f {
            Function::Step => DurationExpr::Step,
            Function::Range => DurationExpr::Range,
            Function::MinOf | Function::MaxOf => {
                let a = Box::new(self.expr(0)?);
                self.expect(b',')?;
                let b = Box::new(self.expr(0)?);
                if matches!(f, Function::MinOf) {
                    DurationExpr::MinOf(a, b)
                } else {
                    DurationExpr::MaxOf(a, b)
                }
            }
        };
        self.expect(b')')?;
        Ok(e)
    }
}

/// A number as PromQL reads one (`0x10` and `010` are integers in base 16
/// and 8), or `None` for a duration.
fn number(text: &str) -> Option<f64> {
    // Underscores between digits only separate them (`1_000`).
    if text.contains('_') {
        let ok = !text.contains("__") && !text.ends_with('_') && !text.contains("_.") && !text.contains("._");
        return if ok { number(&text.replace('_', "")) } else { None };
    }
    let hex = text.starts_with("0x") || text.starts_with("0X");
    if hex || text.bytes().all(|b| b.is_ascii_digit()) {
        return parse_str_radix(text).ok();
    }
    if text
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
    {
        return text.parse().ok();
    }
    None
}

/// A sign applied: a literal takes it into its value, as in Prometheus.
fn signed(sign: u8, e: DurationExpr) -> DurationExpr {
    match (sign, e) {
        (b'-', DurationExpr::Literal { secs, duration }) => DurationExpr::Literal {
            secs: -secs,
            duration,
        },
        (b'-', e) => DurationExpr::Neg(Box::new(e)),
        (_, e) => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bracket(text: &str) -> String {
        read_all(text, Place::Bracket)
            .map(|e| e.to_string())
            .unwrap_or_else(|e| e)
    }

    fn offset_prefix(text: &str) -> (String, usize) {
        let (e, len) = read_prefix(text, Place::Offset).unwrap();
        (e.to_string(), len)
    }

    #[test]
    fn precedence_and_printing_follow_prometheus() {
        assert_eq!(bracket("5m+1m"), "5m + 1m");
        assert_eq!(bracket("30m1s-30m1s % 1m"), "30m1s - 30m1s % 1m");
        assert_eq!(bracket("24m+((1.5*2m)+2m)"), "24m + ((1.5 * 2m) + 2m)");
        assert_eq!(bracket("-5m+35m"), "-5m + 35m");
        assert_eq!(bracket("2^3^2"), "2 ^ 3 ^ 2");
        assert_eq!(bracket("1+(STep()-5)*2"), "1 + (step() - 5) * 2");
        assert_eq!(
            bracket("max_of(min_of(step()+1,1h),1ms)"),
            "max_of(min_of(step() + 1, 1h), 1ms)"
        );
        let e = read_all("-2^2", Place::Bracket).unwrap();
        assert_eq!(e.eval(0.0, 0.0), Ok(-4.0), "a sign binds looser than ^");
        let e = read_all("2-1-1", Place::Bracket).unwrap();
        assert_eq!(e.eval(0.0, 0.0), Ok(0.0), "left to right");
        let e = read_all("2^3^2", Place::Bracket).unwrap();
        assert_eq!(e.eval(0.0, 0.0), Ok(512.0), "^ right to left");
    }

    #[test]
    fn an_offset_is_one_operand_unless_parenthesised() {
        assert_eq!(offset_prefix("-step()*2"), ("-step()".into(), 7));
        assert_eq!(
            offset_prefix("min_of(step(), 1s)+8000"),
            ("min_of(step(), 1s)".into(), 18)
        );
        assert_eq!(
            offset_prefix("-(min_of(step(), 1s))+8000").0,
            "-(min_of(step(), 1s))"
        );
        assert_eq!(offset_prefix("(1) + 2 * 3"), ("(1) + 2 * 3".into(), 11));
        assert_eq!(offset_prefix("--5m + 1"), ("5m + 1".into(), 8));
    }

    #[test]
    fn numbers_in_duration_expressions_take_exponents_and_underscores() {
        assert_eq!(offset_prefix("(1h / 2) * 2.5e-3").0, "(1h / 2) * 0.0025");
        assert_eq!(bracket("2.5e-3 * 1000"), "0.0025 * 1000");
        assert_eq!(bracket("1_000 / 10"), "1000 / 10");
        assert_eq!(read_range("1_000").map(|r| r.0), Ok(Duration::from_secs(1000)));
        assert_eq!(read_range("1e+3").map(|r| r.0), Ok(Duration::from_secs(1000)));
        // A duration is not a number with an exponent: `5m-1m` subtracts.
        assert_eq!(bracket("5m-1m"), "5m - 1m");
    }

    #[test]
    fn literal_ranges_are_checked_when_read() {
        assert_eq!(read_range("5m"), Ok((Duration::from_secs(300), None)));
        assert_eq!(read_range("1800"), Ok((Duration::from_secs(1800), None)));
        assert_eq!(
            read_range("-5m"),
            Err("duration must be greater than 0".into())
        );
        assert_eq!(
            read_range("0s"),
            Err("duration must be greater than 0".into())
        );
        assert!(read_range("30m+0s").unwrap().1.is_some());
        assert_eq!(bracket("1/0"), "division by zero");
        assert_eq!(
            bracket("1%(0)"),
            "1 % (0)",
            "only a literal zero is refused when read"
        );
        assert_eq!(bracket("1%0"), "modulo by zero");
        assert_eq!(bracket("5x"), "bad number or duration syntax: 5x");
        assert_eq!(bracket("0x10+010+1.5e1"), "16 + 8 + 15");
        assert_eq!(
            bracket("foo()"),
            "unexpected identifier \"foo\" in duration expression"
        );
    }

    #[test]
    fn offsets_the_ordinary_tokens_cannot_express_are_recognised() {
        for rest in [
            " (1)",
            "step()",
            " -STEP ()",
            "min_of(1, 2)",
            "- -5m",
            "+(2)",
        ] {
            assert!(starts_offset_expr(rest), "{rest}");
        }
        for rest in [" 5m", "-5m", " - 5", "step", "-rate(x)", ""] {
            assert!(!starts_offset_expr(rest), "{rest}");
        }
    }
}
