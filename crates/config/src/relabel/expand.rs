//! `$` references in a replacement, expanded as Go's `Regexp.Expand` does.

use regex::Captures;

/// Appends `template` to `dst` with `$1`, `${1}`, `$name` and `${name}`
/// replaced by the groups of `captures` (empty when the group did not take
/// part or does not exist) and `$$` by `$`. A name is the longest run of
/// letters, digits and `_`, so `$1x` names the group `1x`; a `$` that starts
/// no valid reference is kept as written.
pub fn expand(dst: &mut String, template: &str, captures: &Captures<'_>) {
    let mut rest = template;
    while let Some(dollar) = rest.find('$') {
        dst.push_str(&rest[..dollar]);
        rest = &rest[dollar + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            dst.push('$');
            rest = after;
            continue;
        }
        let Some((name, after)) = reference(rest) else {
            dst.push('$');
            continue;
        };
        rest = after;
        let group = match group_number(name) {
            Some(n) => captures.get(n),
            None => captures.name(name),
        };
        if let Some(m) = group {
            dst.push_str(m.as_str());
        }
    }
    dst.push_str(rest);
}

/// Splits a reference name off the text after a `$`: `name` or `{name}`.
fn reference(text: &str) -> Option<(&str, &str)> {
    let (braced, body) = match text.strip_prefix('{') {
        Some(body) => (true, body),
        None => (false, text),
    };
    let name_len: usize = body
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .map(char::len_utf8)
        .sum();
    if name_len == 0 {
        return None;
    }
    let (name, after) = body.split_at(name_len);
    if braced {
        let after = after.strip_prefix('}')?;
        return Some((name, after));
    }
    Some((name, after))
}

/// The group number a name stands for: all ASCII digits, no leading zero,
/// and small enough (Go gives up at 10^8); otherwise it names a group.
fn group_number(name: &str) -> Option<usize> {
    if !name.bytes().all(|b| b.is_ascii_digit()) || (name.len() > 1 && name.starts_with('0')) || name.len() > 8 {
        return None;
    }
    name.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    fn expanded(pattern: &str, text: &str, template: &str) -> String {
        let re = Regex::new(pattern).unwrap();
        let caps = re.captures(text).unwrap();
        let mut out = String::new();
        expand(&mut out, template, &caps);
        out
    }

    #[test]
    fn expand_numbered_and_named_groups() {
        assert_eq!(expanded("(a)(b)", "ab", "$2$1"), "ba");
        assert_eq!(expanded("(a)(b)", "ab", "${2}x${1}"), "bxa");
        assert_eq!(expanded("(?P<first>a)(b)", "ab", "$first-${first}"), "a-a");
        assert_eq!(expanded("(a)", "a", "$0"), "a");
    }

    #[test]
    fn expand_longest_name_wins() {
        // `$1x` is the (missing) group named `1x`, not group 1 then `x`.
        assert_eq!(expanded("(a)", "a", "$1x"), "");
        assert_eq!(expanded("(a)", "a", "${1}x"), "ax");
        assert_eq!(expanded("(a)", "a", "$1_$1"), "a");
        assert_eq!(expanded("(a)", "a", "$1-$1"), "a-a");
    }

    #[test]
    fn expand_literal_dollars() {
        assert_eq!(expanded("(a)", "a", "$$1"), "$1");
        assert_eq!(expanded("(a)", "a", "cost: $"), "cost: $");
        assert_eq!(expanded("(a)", "a", "${1"), "${1");
        assert_eq!(expanded("(a)", "a", "$-"), "$-");
        assert_eq!(expanded("(a)", "a", "${}"), "${}");
    }

    #[test]
    fn expand_missing_or_unmatched_groups_are_empty() {
        assert_eq!(expanded("(a)|(b)", "a", "[$2]"), "[]");
        assert_eq!(expanded("(a)", "a", "[$7]"), "[]");
        assert_eq!(expanded("(a)", "a", "[$01]"), "[]");
        assert_eq!(expanded("(a)", "a", "[$nosuch]"), "[]");
    }
}
