//! Byte escapes in PromQL string literals, as Go reads them.
//!
//! In PromQL (Go), `"\xff"` and `"\377"` are single *bytes*: `"\xc3\xbf"` is
//! the UTF-8 of `ÿ`, and a lone `"\xff"` is invalid UTF-8, which Prometheus
//! rejects where a label name is required (`label_replace(x, "\xff", ...)`).
//! `promql-parser` turns each such escape into the char with that code point
//! instead (`\xff` → `ÿ`). Before parsing, runs of byte escapes above 0x7f are
//! therefore rewritten into the characters their bytes spell, with invalid
//! UTF-8 replaced by U+FFFD as Go's string conversion does, so the parser
//! sees what Go would.

/// `query` with every run of byte escapes (`\xNN`, `\NNN`) that contains a
/// byte above 0x7f, inside `"..."` or `'...'`, rewritten as `\u`/`\U`
/// escapes of the characters those bytes spell (U+FFFD for invalid UTF-8).
/// Everything else is left as it is.
pub(crate) fn normalize_byte_escapes(query: &str) -> std::borrow::Cow<'_, str> {
    if !query.contains('\\') {
        return std::borrow::Cow::Borrowed(query);
    }
    let b = query.as_bytes();
    let mut out = String::with_capacity(query.len());
    let mut changed = false;
    let mut i = 0;
    // Start of the text not yet copied to `out`.
    let mut copied = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        match quote {
            None => {
                match c {
                    b'"' | b'\'' | b'`' => quote = Some(c),
                    b'#' => {
                        // A comment runs to the end of the line.
                        while i < b.len() && b[i] != b'\n' {
                            i += 1;
                        }
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
            Some(q) if c == q => {
                quote = None;
                i += 1;
            }
            Some(b'`') => i += 1,
            Some(_) if c == b'\\' => {
                let start = i;
                let mut bytes = Vec::new();
                while let Some((byte, len)) = byte_escape(&b[i..]) {
                    bytes.push(byte);
                    i += len;
                }
                if bytes.is_empty() {
                    // Another escape: skip the backslash and the escaped char.
                    i += 2;
                    continue;
                }
                if bytes.iter().all(u8::is_ascii) {
                    continue;
                }
                out.push_str(&query[copied..start]);
                for ch in String::from_utf8_lossy(&bytes).chars() {
                    let cp = ch as u32;
                    if cp <= 0xffff {
                        out.push_str(&format!("\\u{cp:04x}"));
                    } else {
                        out.push_str(&format!("\\U{cp:08x}"));
                    }
                }
                copied = i;
                changed = true;
            }
            Some(_) => i += 1,
        }
    }
    if !changed {
        return std::borrow::Cow::Borrowed(query);
    }
    out.push_str(&query[copied.min(query.len())..]);
    std::borrow::Cow::Owned(out)
}

/// The bytes Go reads from `literal`, a string literal as written (quotes
/// included; a raw one is its text): escapes decoded, byte escapes as the
/// bytes they are, valid UTF-8 or not.
pub(crate) fn literal_bytes(literal: &str) -> Vec<u8> {
    let body = literal.get(1..literal.len().saturating_sub(1)).unwrap_or("");
    if literal.starts_with('`') {
        return body.as_bytes().to_vec();
    }
    let b = body.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        if let Some((byte, len)) = byte_escape(&b[i..]) {
            out.push(byte);
            i += len;
            continue;
        }
        let simple = match b.get(i + 1) {
            Some(b'a') => Some(0x07),
            Some(b'b') => Some(0x08),
            Some(b'f') => Some(0x0c),
            Some(b'n') => Some(b'\n'),
            Some(b'r') => Some(b'\r'),
            Some(b't') => Some(b'\t'),
            Some(b'v') => Some(0x0b),
            Some(&c @ (b'\\' | b'"' | b'\'')) => Some(c),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
            continue;
        }
        let digits = match b.get(i + 1) {
            Some(b'u') => 4,
            Some(b'U') => 8,
            _ => 0,
        };
        let ch = body
            .get(i + 2..i + 2 + digits)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32);
        match ch {
            Some(ch) if digits > 0 => {
                out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                i += 2 + digits;
            }
            // Not an escape the lexer lets through: kept as written.
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// The byte of a `\xNN` or `\NNN` (octal) escape at the start of `s`, and
/// the escape's length.
fn byte_escape(s: &[u8]) -> Option<(u8, usize)> {
    match s {
        [b'\\', b'x', h, l, ..] => {
            let v = (*h as char).to_digit(16)? * 16 + (*l as char).to_digit(16)?;
            Some((v as u8, 4))
        }
        [b'\\', a @ b'0'..=b'7', m @ b'0'..=b'7', l @ b'0'..=b'7', ..] => {
            let v = u32::from(a - b'0') * 64 + u32::from(m - b'0') * 8 + u32::from(l - b'0');
            u8::try_from(v).ok().map(|v| (v, 4))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::normalize_byte_escapes as n;

    #[test]
    fn byte_escapes_become_the_characters_their_bytes_spell() {
        // Invalid UTF-8 becomes U+FFFD, as Go's string conversion does.
        assert_eq!(
            n(r#"label_replace(m, "\xff", "", "src", "(.*)")"#),
            r#"label_replace(m, "\ufffd", "", "src", "(.*)")"#
        );
        // A valid UTF-8 sequence of byte escapes is one character.
        assert_eq!(n(r#"m{a="\xc3\xbf"}"#), r#"m{a="\u00ff"}"#);
        assert_eq!(n(r#"m{a='\303\277x'}"#), r#"m{a='\u00ffx'}"#);
        // ASCII byte escapes, other escapes, raw strings and comments stay.
        for q in [
            r#"m{a="\x41\n\"\\"}"#,
            r#"m{a=`\xff`}"#,
            "m # \"\\xff\"",
            r#"m{a="\u00ff"}"#,
        ] {
            assert_eq!(n(q), q);
        }
    }

    #[test]
    fn literals_read_as_the_bytes_go_reads() {
        use super::literal_bytes as b;
        assert_eq!(b(r#""a\xc5z""#), b"a\xc5z");
        assert_eq!(b(r#"'\303\277\n\'\u00e9'"#), "ÿ\n'é".as_bytes());
        assert_eq!(b(r#""\U0001F600\"\\""#), "😀\"\\".as_bytes());
        assert_eq!(b(r"`\xc5`"), br"\xc5");
    }

    #[test]
    fn invalid_destination_label_name_fails() {
        use cairn_model::{Labels, Sample};
        use cairn_storage::{Appendable, MemStorage};
        let s = MemStorage::new();
        let mut app = s.appender();
        app.append(
            &Labels::from_pairs([("__name__", "m"), ("src", "a")]),
            &[Sample::new(0, 1.0)],
        )
        .unwrap();
        app.commit().unwrap();
        let e = crate::Engine::default();
        // functions.test:523 upstream.
        assert!(
            e.instant(&s, r#"label_replace(m, "\xff", "", "src", "(.*)")"#, 0)
                .is_err()
        );
        // The same character written as UTF-8 bytes is a valid name.
        let r = e
            .instant(&s, r#"label_replace(m, "\xc3\xbf", "x", "src", "(.*)")"#, 0)
            .unwrap();
        let crate::Value::Vector(v) = r.value else {
            panic!("not a vector")
        };
        assert_eq!(v[0].metric.get("ÿ"), Some("x"));
    }
}
