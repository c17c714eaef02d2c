//! Go's quoting (`%q`, `%#U`), in which Prometheus' messages show
//! characters and texts.

/// A character as Go's `%q` shows a rune: `'x'`, `'\n'`. The end of the
/// input is Go's `-1`, shown as the replacement character.
pub fn go_quote_rune(c: Option<char>) -> String {
    match c {
        Some('\'') => r"'\''".into(),
        Some(c) => format!("'{}'", escaped(c)),
        None => "'\u{FFFD}'".into(),
    }
}

/// A text as Go's `%q` shows a string: `"a\"b"`.
pub fn go_quote_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            c => out.push_str(&escaped(c)),
        }
    }
    out.push('"');
    out
}

/// A character as Go's `%#U` shows it: `U+0063 'c'`.
pub fn go_unicode(c: char) -> String {
    if c.is_control() {
        format!("U+{:04X}", c as u32)
    } else {
        format!("U+{:04X} '{c}'", c as u32)
    }
}

fn escaped(c: char) -> String {
    match c {
        '\\' => r"\\".into(),
        '\u{7}' => r"\a".into(),
        '\u{8}' => r"\b".into(),
        '\u{c}' => r"\f".into(),
        '\n' => r"\n".into(),
        '\r' => r"\r".into(),
        '\t' => r"\t".into(),
        '\u{b}' => r"\v".into(),
        c if (c as u32) < 0x80 && c.is_control() => format!("\\x{:02x}", c as u32),
        c if c.is_control() && (c as u32) < 0x10000 => format!("\\u{:04x}", c as u32),
        c if c.is_control() => format!("\\U{:08x}", c as u32),
        c => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_go_quotes() {
        assert_eq!(go_quote_rune(Some('"')), r#"'"'"#);
        assert_eq!(go_quote_rune(Some('\'')), r"'\''");
        assert_eq!(go_quote_rune(Some('\n')), r"'\n'");
        assert_eq!(go_quote_str(r#"a"b\"#), r#""a\"b\\""#);
        assert_eq!(go_quote_str("\u{1}"), r#""\x01""#);
        assert_eq!(go_unicode('c'), "U+0063 'c'");
    }
}
