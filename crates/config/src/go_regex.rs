//! Rewrites Go (RE2) regex syntax into the `regex` crate's where the two
//! disagree, so a relabelling regex matches exactly what Prometheus' does.
//!
//! Differences handled: Perl classes and word boundaries (`\d \w \s \b`) are
//! ASCII-only in Go but Unicode in Rust; `\Q...\E` quotes literally in Go and
//! does not exist in Rust; inside a bracket class, `[`, `&&`, `--` and `~~`
//! are plain characters in Go but nesting and set operators in Rust.

const DIGIT: &str = "0-9";
const WORD: &str = "0-9A-Za-z_";
const SPACE: &str = r"\t\n\x0C\r ";

/// The `regex` crate pattern that matches what the Go pattern `pattern` matches.
/// Invalid patterns come out invalid too, so the compile error still surfaces.
pub fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    // Whether we are inside `[...]`, and whether the class has any member yet
    // (a `]` right after `[` or `[^` is a literal in both dialects).
    let mut in_class = false;
    let mut class_empty = false;
    while let Some(c) = chars.next() {
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
    out
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
        Regex::new(&format!("^(?s:{})$", translate(go_pattern)))
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
        assert_eq!(translate("(?i)foo|bar(baz)?"), "(?i)foo|bar(baz)?");
        assert_eq!(translate(r"\.\$\p{L}"), r"\.\$\p{L}");
        assert!(Regex::new(&translate("(")).is_err());
    }
}
