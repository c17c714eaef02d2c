//! Rewrites Go (RE2) regex syntax into the `regex` crate's where the two
//! disagree, so a relabelling regex matches exactly what Prometheus' does.
//!
//! Differences handled: Perl classes and word boundaries (`\d \w \s \b`) are
//! ASCII-only in Go but Unicode in Rust; `\Q...\E` quotes literally in Go and
//! does not exist in Rust; inside a bracket class, `[`, `&&`, `--` and `~~`
//! are plain characters in Go but nesting and set operators in Rust; a `{`
//! that starts no repetition is a literal in Go; Go refuses nested
//! repetitions (`a++`, `a**`) and counts above 1000, which Rust accepts.

const DIGIT: &str = "0-9";
const WORD: &str = "0-9A-Za-z_";
const SPACE: &str = r"\t\n\x0C\r ";

/// Go's largest repetition count.
const MAX_REPEAT: u32 = 1000;

/// What the last piece of the pattern was, to spot repetitions of repetitions.
#[derive(Clone, Copy, PartialEq)]
enum Last {
    Nothing,
    Atom,
    Repeat,
    LazyRepeat,
}

/// The `regex` crate pattern that matches what the Go pattern `pattern`
/// matches, or Go's reason for refusing it where Rust would accept it.
/// Other invalid patterns come out invalid too, so the compile error surfaces.
pub fn translate(pattern: &str) -> Result<String, String> {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    // Whether we are inside `[...]`, and whether the class has any member yet
    // (a `]` right after `[` or `[^` is a literal in both dialects).
    let mut in_class = false;
    let mut class_empty = false;
    let mut last = Last::Nothing;
    // Where the bare flag groups just emitted start, while nothing followed them.
    let mut flags_start: Option<usize> = None;
    while let Some(c) = chars.next() {
        let after_flags = flags_start;
        flags_start = None;
        if !in_class {
            if c == '(' {
                flags_start = after_flags;
            }
            match c {
                '*' | '+' | '?' => {
                    last = repeat(last, c == '?', &c.to_string())?;
                    flags_start = insert_before_flags(&mut out, after_flags, &c.to_string());
                    continue;
                }
                '{' => {
                    let rest: String = chars.clone().collect();
                    if let Some((body, min, max)) = repeat_count(&rest) {
                        if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT) {
                            return Err(format!("invalid repeat count: `{{{body}`"));
                        }
                        last = repeat(last, false, &format!("{{{body}"))?;
                        flags_start = insert_before_flags(&mut out, after_flags, &format!("{{{body}"));
                        for _ in 0..body.chars().count() {
                            chars.next();
                        }
                    } else {
                        out.push_str(r"\{");
                        last = Last::Atom;
                    }
                    continue;
                }
                '(' => {
                    let start = out.len();
                    out.push('(');
                    if chars.peek() == Some(&'?') {
                        // A flag group or named group header, not a repetition.
                        for h in chars.by_ref() {
                            out.push(h);
                            if matches!(h, ':' | ')' | '>') {
                                break;
                            }
                        }
                    }
                    if out.ends_with(')') {
                        // A bare flag group such as `(?i)` is no operand in Go:
                        // a repetition after it applies to what came before,
                        // and is not taken for a repetition of a repetition.
                        flags_start.get_or_insert(start);
                        if last != Last::Nothing {
                            last = Last::Atom;
                        }
                    } else {
                        flags_start = None;
                        last = Last::Nothing;
                    }
                    continue;
                }
                '|' => {
                    out.push('|');
                    last = Last::Nothing;
                    continue;
                }
                '[' | '\\' => {}
                _ => {
                    out.push(c);
                    last = Last::Atom;
                    continue;
                }
            }
        }
        last = Last::Atom;
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                if e == 'Q' {
                    let mut literal = String::new();
                    while let Some(q) = chars.next() {
                        if q == '\\' && chars.peek() == Some(&'E') {
                            chars.next();
                            break;
                        }
                        literal.push(q);
                    }
                    if in_class {
                        for q in literal.chars() {
                            push_class_literal(&mut out, q);
                        }
                    } else {
                        out.push_str(&regex::escape(&literal));
                    }
                    class_empty = false;
                    continue;
                }
                if let Some(first) = e.to_digit(8)
                    && (first == 0 || chars.peek().is_some_and(|d| d.is_digit(8)))
                {
                    // Go's octal escape: `\0` or two or three octal digits (`\11` is a tab).
                    let mut code = first;
                    for _ in 0..2 {
                        match chars.peek().and_then(|d| d.to_digit(8)) {
                            Some(d) => {
                                code = code * 8 + d;
                                chars.next();
                            }
                            None => break,
                        }
                    }
                    out.push_str(&format!("\\x{{{code:X}}}"));
                    class_empty = false;
                    continue;
                }
                if e == 'a' {
                    // Go's bell escape; Rust spells it by code.
                    out.push_str(r"\x07");
                    class_empty = false;
                    continue;
                }
                let set = match e {
                    'd' | 'D' => Some(DIGIT),
                    'w' | 'W' => Some(WORD),
                    's' | 'S' => Some(SPACE),
                    _ => None,
                };
                match (set, in_class) {
                    (Some(set), false) => {
                        let negate = if e.is_ascii_uppercase() { "^" } else { "" };
                        out.push_str(&format!("[{negate}{set}]"));
                    }
                    (Some(set), true) if e.is_ascii_uppercase() => out.push_str(&format!("[^{set}]")),
                    (Some(set), true) => out.push_str(set),
                    (None, false) if e == 'b' || e == 'B' => out.push_str(&format!("(?-u:\\{e})")),
                    (None, _) => {
                        out.push('\\');
                        out.push(e);
                        // `\p{Greek}` and `\x{263a}` carry their argument in braces;
                        // Go negates `\p{^Greek}` inside them, Rust by `\P`.
                        if matches!(e, 'p' | 'P' | 'x') && chars.peek() == Some(&'{') {
                            let mut argument = String::new();
                            for b in chars.by_ref() {
                                argument.push(b);
                                if b == '}' {
                                    break;
                                }
                            }
                            if let Some(name) = argument.strip_prefix("{^") {
                                out.pop();
                                out.push(if e == 'p' { 'P' } else { 'p' });
                                out.push('{');
                                out.push_str(name);
                            } else {
                                out.push_str(&argument);
                            }
                        }
                    }
                }
                class_empty = false;
            }
            '[' if !in_class => {
                out.push('[');
                in_class = true;
                class_empty = true;
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class such as `[:alpha:]`: the same in both dialects.
                out.push('[');
                for p in chars.by_ref() {
                    out.push(p);
                    if p == ']' {
                        break;
                    }
                }
                class_empty = false;
            }
            ']' if in_class && !class_empty => {
                out.push(']');
                in_class = false;
            }
            c if in_class => {
                if c == ']' || c == '[' || ((c == '&' || c == '~') && !class_empty) {
                    push_class_literal(&mut out, c);
                } else if c == '-' && out.ends_with('-') {
                    out.push_str(r"\-");
                } else {
                    out.push(c);
                }
                class_empty = false;
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Appends a repetition operator, or puts it before the bare flag groups
/// that directly precede it (Go applies it to the operand before them);
/// returns where those flag groups now start.
fn insert_before_flags(out: &mut String, flags_start: Option<usize>, operator: &str) -> Option<usize> {
    match flags_start {
        Some(start) => {
            out.insert_str(start, operator);
            Some(start + operator.len())
        }
        None => {
            out.push_str(operator);
            None
        }
    }
}

/// The state after a repetition operator (`?` may make the previous one lazy).
fn repeat(last: Last, is_question: bool, operator: &str) -> Result<Last, String> {
    match last {
        Last::Repeat if is_question => Ok(Last::LazyRepeat),
        Last::Repeat | Last::LazyRepeat => Err(format!("invalid nested repetition operator: `{operator}`")),
        // A leading operator is left for the regex crate to refuse.
        Last::Nothing | Last::Atom => Ok(Last::Repeat),
    }
}

/// The text after `{` up to and including `}` when it is a repetition count
/// (`n}`, `n,}` or `n,m}`), with its bounds.
fn repeat_count(rest: &str) -> Option<(String, u32, Option<u32>)> {
    let end = rest.find('}')?;
    let inner = &rest[..end];
    let (min, max) = match inner.split_once(',') {
        Some((min, "")) => (min, None),
        Some((min, max)) => (min, Some(max)),
        None => (inner, Some(inner)),
    };
    let number = |s: &str| {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(s.parse::<u32>().unwrap_or(u32::MAX))
    };
    let min = number(min)?;
    let max = match max {
        Some(m) => Some(number(m)?),
        None => None,
    };
    Some((rest[..=end].to_string(), min, max))
}

fn push_class_literal(out: &mut String, c: char) {
    if matches!(c, '[' | ']' | '\\' | '&' | '~' | '-' | '^') {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::translate;
    use regex::Regex;

    fn full_match(go_pattern: &str, text: &str) -> bool {
        Regex::new(&format!("^(?s:{})$", translate(go_pattern).unwrap()))
            .unwrap()
            .is_match(text)
    }

    #[test]
    fn go_regex_perl_classes_are_ascii() {
        assert!(full_match(r"\d+", "123"));
        assert!(!full_match(r"\d+", "١٢٣"));
        assert!(!full_match(r"\w+", "héllo"));
        assert!(full_match(r"\W", "é"));
        assert!(full_match(r"[\d.]+", "1.5"));
        assert!(!full_match(r"[\d]", "٣"));
        assert!(full_match(r"[\D]", "٣"));
        assert!(full_match(r"a\sb", "a\tb"));
        assert!(!full_match(r"a\sb", "a\u{a0}b"));
        assert!(full_match(r".*\bfoo\b.*", "a foo b"));
    }

    #[test]
    fn go_regex_class_punctuation_is_literal() {
        assert!(full_match(r"[[]", "["));
        assert!(full_match(r"[]a]+", "]a"));
        assert!(full_match(r"[a&&b]+", "a&b"));
        assert!(full_match(r"[a~~b]+", "~"));
        assert!(full_match(r"[[:alpha:]]+", "abc"));
        assert!(full_match(r"[^]]", "a"));
    }

    #[test]
    fn go_regex_quoted_literals() {
        assert!(full_match(r"\Qa.b*\E+", "a.b***"));
        assert!(!full_match(r"\Qa.b\E", "axb"));
        assert!(full_match(r"x\Q(y", "x(y"));
    }

    #[test]
    fn go_regex_other_syntax_passes_through() {
        assert_eq!(translate("(?i)foo|bar(baz)?").unwrap(), "(?i)foo|bar(baz)?");
        assert_eq!(translate(r"\.\$\p{L}").unwrap(), r"\.\$\p{L}");
        assert_eq!(translate("(?P<n>a)+?(?:b)*").unwrap(), "(?P<n>a)+?(?:b)*");
        assert!(Regex::new(&translate("(").unwrap()).is_err());
    }

    #[test]
    fn go_regex_braces_without_count_are_literal() {
        assert!(full_match("a{,3}", "a{,3}"));
        assert!(full_match("a{x}", "a{x}"));
        assert!(full_match("{}", "{}"));
        assert!(full_match("a{2,3}", "aaa"));
        assert!(full_match("a{2,}?", "aaaa"));
        assert!(full_match("a{2}", "aa"));
    }

    #[test]
    fn go_regex_flag_groups_are_no_operand() {
        assert!(full_match("a(?i)*b", "aaB"));
        assert!(full_match("a(?i)+", "aa"));
        assert!(full_match("(?i)a", "A"));
        assert!(full_match("x(?i)(?s)+y", "xxY"));
        assert!(full_match("a(?i)+?b", "aaB"));
        assert!(full_match("a{0,1}(?U){1,}", "aa"));
    }

    #[test]
    fn go_regex_negated_property_and_bell() {
        assert!(full_match(r"\p{^Greek}+", "ab"));
        assert!(!full_match(r"\p{^Greek}", "α"));
        assert!(full_match(r"\P{^Greek}", "α"));
        assert!(full_match(r"\a", "\u{7}"));
    }

    #[test]
    fn go_regex_octal_escapes() {
        assert!(full_match(r"a\11b", "a\tb"));
        assert!(full_match(r"\0", "\0"));
        assert!(full_match(r"\101\0102", "A\u{8}2"));
        assert!(full_match(r"[\101-\103]+", "ABC"));
    }

    #[test]
    fn go_regex_refuses_what_go_refuses() {
        for bad in [
            "a++",
            "a**",
            "a*+",
            "a??*",
            "a{2}{3}",
            "a{2}*",
            "(a)*+",
            "a{1001}",
            "a{1,1001}",
        ] {
            assert!(translate(bad).is_err(), "{bad} should be refused");
        }
        for good in ["a+?", "a*?", "a??", "a{2}?", "(a+)+", "[+*]+", r"\++", "(?i)a*"] {
            assert!(translate(good).is_ok(), "{good} should be accepted");
        }
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn go_regex_translate_never_panics(pattern in r"[ab\\\\(){}\[\]^$*+?|:,0-9PpQEdwsx<>é-]{0,16}") {
            if let Ok(translated) = super::translate(&pattern) {
                let _ = regex::Regex::new(&translated);
            }
        }
    }
}
