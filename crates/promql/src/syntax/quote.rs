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

/// Bytes as Go's `%q` shows a string holding them: invalid UTF-8 as `\xNN`.
pub fn go_quote_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for chunk in b.utf8_chunks() {
        let valid = go_quote_str(chunk.valid());
        out.push_str(&valid[1..valid.len() - 1]);
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    out
}

/// A character as Go's `%#U` shows it: `U+0063 'c'`.
pub fn go_unicode(c: char) -> String {
    if is_print(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// Go's `strconv.IsPrint`, closely enough: not a control, not a format
/// character, and no space but U+0020.
fn is_print(c: char) -> bool {
    !(c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{AD}'
                | '\u{600}'..='\u{605}'
                | '\u{61C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        ))
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
        c if is_print(c) => c.to_string(),
        c if (c as u32) < 0x80 => format!("\\x{:02x}", c as u32),
        c if (c as u32) < 0x10000 => format!("\\u{:04x}", c as u32),
        c => format!("\\U{:08x}", c as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_shows_as_byte_escapes() {
        assert_eq!(go_quote_bytes(b"a\xc5z"), r#""a\xc5z""#);
        assert_eq!(go_quote_bytes("\"ÿ\n".as_bytes()), r#""\"ÿ\n""#);
    }

    #[test]
    fn as_go_quotes() {
        assert_eq!(go_quote_rune(Some('"')), r#"'"'"#);
        assert_eq!(go_quote_rune(Some('\'')), r"'\''");
        assert_eq!(go_quote_rune(Some('\n')), r"'\n'");
        assert_eq!(go_quote_str(r#"a"b\"#), r#""a\"b\\""#);
        assert_eq!(go_quote_str("\u{1}"), r#""\x01""#);
        assert_eq!(go_unicode('c'), "U+0063 'c'");
        assert_eq!(go_quote_rune(Some('\u{a0}')), r"'\u00a0'");
        assert_eq!(go_quote_rune(Some('é')), "'é'");
        assert_eq!(go_unicode('\u{feff}'), "U+FEFF");
    }
}
