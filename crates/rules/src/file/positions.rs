//! Where the `record`, `alert` and `expr` values of each rule sit in a
//! block-style YAML rule file, so errors carry Prometheus' `line:column:`
//! prefixes. Unusual layouts (flow style, quoted keys) give no positions (0:0).

/// A value's 1-based line and column; (0, 0) when unknown, as Prometheus prints absent nodes.
pub type Pos = (usize, usize);

#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RulePositions {
    pub record: Pos,
    pub alert: Pos,
    pub expr: Pos,
}

/// Positions by group, then rule.
pub fn rule_positions(text: &str) -> Vec<Vec<RulePositions>> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect();
    let mut groups = Vec::new();
    let Some(start) = lines.iter().position(|(_, l)| l.trim_end() == "groups:") else {
        return groups;
    };
    let Some(group_indent) = lines.get(start + 1).and_then(|(_, l)| item_indent(l)) else {
        return groups;
    };
    let mut i = start + 1;
    while i < lines.len() {
        let (_, line) = lines[i];
        if indent(line) < group_indent || (indent(line) == group_indent && item_indent(line).is_none()) {
            break;
        }
        if item_indent(line) == Some(group_indent) {
            let end = next_item(&lines, i + 1, group_indent);
            groups.push(group_rules(&lines[i..end], group_indent + 2));
            i = end;
        } else {
            i += 1;
        }
    }
    groups
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The indent of a `- ` list item line.
fn item_indent(line: &str) -> Option<usize> {
    let trimmed = line.trim_start_matches(' ');
    (trimmed.starts_with("- ") || trimmed == "-").then(|| indent(line))
}

/// The next line (from `from`) that starts a sibling item or leaves the list.
fn next_item(lines: &[(usize, &str)], from: usize, item: usize) -> usize {
    (from..lines.len())
        .find(|&k| indent(lines[k].1) < item || item_indent(lines[k].1) == Some(item))
        .unwrap_or(lines.len())
}

/// The key and value column of `key: value` at `key_indent`, allowing the item's `- `.
fn key_value(line: &str, key_indent: usize, key: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let mut at = indent(line);
    if at + 2 == key_indent && line[at..].starts_with("- ") {
        at += 2;
        while at < bytes.len() && bytes[at] == b' ' {
            at += 1;
        }
    }
    if at != key_indent {
        return None;
    }
    let rest = line[at..].strip_prefix(key)?.strip_prefix(':')?;
    let value_offset = rest.len() - rest.trim_start().len();
    if rest.trim().is_empty() {
        return None;
    }
    Some(at + key.len() + 1 + value_offset + 1)
}

fn group_rules(lines: &[(usize, &str)], key_indent: usize) -> Vec<RulePositions> {
    let mut rules = Vec::new();
    let Some(k) = lines.iter().position(|(_, l)| {
        let t = l.trim_start_matches([' ', '-']).trim_start();
        t.trim_end() == "rules:" && (indent(l) == key_indent || item_indent(l).is_some_and(|i| i + 2 == key_indent))
    }) else {
        return rules;
    };
    let Some(rule_indent) = lines.get(k + 1).and_then(|(_, l)| item_indent(l)) else {
        return rules;
    };
    let mut i = k + 1;
    while i < lines.len() {
        let (_, line) = lines[i];
        if indent(line) < rule_indent || (indent(line) == rule_indent && item_indent(line).is_none()) {
            break;
        }
        let end = next_item(lines, i + 1, rule_indent);
        let mut pos = RulePositions::default();
        for &(n, l) in &lines[i..end] {
            for (key, slot) in [
                ("record", &mut pos.record),
                ("alert", &mut pos.alert),
                ("expr", &mut pos.expr),
            ] {
                if let Some(col) = key_value(l, rule_indent + 2, key) {
                    *slot = (n, col);
                }
            }
        }
        rules.push(pos);
        i = end;
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_values_in_block_yaml() {
        let text = "groups:\n  - name: a\n    rules:\n      - record: x\n        alert: y\n        expr: up\n\n      # c\n      - expr: |\n          sum(x)\n        record: r\n  - name: b\n    rules:\n    - alert: A\n      expr: up\n";
        let p = rule_positions(text);
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0][0],
            RulePositions {
                record: (4, 17),
                alert: (5, 16),
                expr: (6, 15)
            }
        );
        assert_eq!(
            p[0][1],
            RulePositions {
                record: (11, 17),
                alert: (0, 0),
                expr: (9, 15)
            }
        );
        assert_eq!(
            p[1][0],
            RulePositions {
                record: (0, 0),
                alert: (14, 14),
                expr: (15, 13)
            }
        );
    }
}
