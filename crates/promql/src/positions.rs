//! Error and annotation texts as Prometheus writes them, which tools match
//! on: a parse error is `<line>:<column>: parse error: <what>` in
//! Prometheus' words, an annotation ends with ` (<line>:<column>)`. The
//! parser crate gives neither positions nor Prometheus' wording. Syntax
//! errors come from `crate::syntax`; for the parser crate's checks of a
//! well-formed query, the position is found here: the call, argument or
//! expression the message is about.

use promql_parser::parser::value::ValueType;

use crate::syntax::{Node, NodeKind, Recognized};

/// The parse error Prometheus gives for the parser crate's `message` about
/// `query`.
pub fn parse_error(query: &str, message: &str) -> String {
    // Lexer and grammar errors come first, as in Prometheus' parser.
    let nodes = match crate::syntax::recognize(query) {
        Recognized::Error(e) => return located(query, e.pos, &e.message),
        Recognized::Valid(nodes) => nodes,
        Recognized::TooDeep => Vec::new(),
    };
    let words = prometheus_words(message);
    match position_of(query, &words).or_else(|| culprit(query, &nodes, message)) {
        Some(at) => located(query, at, &words),
        None => format!("parse error: {words}"),
    }
}

/// Where Prometheus places the parser crate's `message` about a query
/// whose syntax is sound: at the innermost expression that fails alone
/// with the same message (Prometheus checks expressions innermost first),
/// at the part of it the message is about.
fn culprit(query: &str, nodes: &[Node], message: &str) -> Option<usize> {
    if query.len() > MAX_CULPRIT_QUERY_LEN {
        return None;
    }
    let parse = |text: &str| promql_parser::parser::parse(&crate::escapes::normalize_byte_escapes(text));
    let fails_alone = |text: &str| parse(text).err().as_deref() == Some(message);
    if message == "duration must be greater than 0" {
        let zero = |text: &str| text.bytes().all(|b| !b.is_ascii_digit() || b == b'0');
        let node = nodes
            .iter()
            .find(|n| n.kind == NodeKind::Duration && zero(&query[n.start..n.end]))?;
        return Some(node.start);
    }
    let node = nodes
        .iter()
        .take(MAX_CULPRIT_NODES)
        .find(|n| fails_alone(&query[n.start..n.end]))?;
    Some(match node.kind {
        NodeKind::Binary { op, rhs } => {
            let bad_side = |text: &str| {
                parse(text).is_ok_and(|e| !matches!(e.value_type(), ValueType::Scalar | ValueType::Vector))
            };
            if message.starts_with("comparisons between scalars")
                || message.starts_with("bool modifier")
                || message.ends_with("in ON and GROUP clause at once")
            {
                op
            } else if message.starts_with("binary expression must contain only")
                && !bad_side(&query[node.start..op])
                && bad_side(&query[rhs..node.end])
            {
                rhs
            } else {
                node.start
            }
        }
        NodeKind::Range { bracket } => bracket,
        // `info`'s second argument is what is not a label selector.
        NodeKind::Call if message.starts_with("expected label selectors only") => {
            second_argument(query, node.start).unwrap_or(node.start)
        }
        _ => node.start,
    })
}

/// Where the second argument of the call written at `call` starts.
fn second_argument(query: &str, call: usize) -> Option<usize> {
    let open = call + query[call..].find('(')?;
    let (mut depth, mut quote) = (0i32, None::<char>);
    let mut chars = query[open + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') if depth == 0 => return None,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                let rest = &query[open + 1 + i + 1..];
                return Some(open + 1 + i + 1 + (rest.len() - rest.trim_start().len()));
            }
            _ => {}
        }
    }
    None
}

/// Queries are short; these bound the work of the error path (a parse of
/// each expression) for a long one.
const MAX_CULPRIT_NODES: usize = 256;
const MAX_CULPRIT_QUERY_LEN: usize = 16 * 1024;

/// The parse error Prometheus gives for a series selector (`match[]`) of
/// bad syntax, or `None` for one whose syntax is sound.
pub fn selector_error(selector: &str) -> Option<String> {
    crate::syntax::first_selector_error(selector).map(|e| located(selector, e.pos, &e.message))
}

/// `message` at byte `at` of `query`, as Prometheus writes a parse error.
pub(crate) fn located(query: &str, at: usize, message: &str) -> String {
    if query.is_empty() {
        return format!("unknown position: parse error: {message}");
    }
    let (line, col) = line_col(query, at);
    format!("{line}:{col}: parse error: {message}")
}

/// `annotation` with the position Prometheus appends to it, when the query
/// shows what it is about.
pub fn annotation(query: &str, annotation: &str) -> String {
    let at = if annotation.contains("might not be a counter")
        || annotation.contains("might not be a histogram")
        || annotation.contains("native histogram metric is not a")
        || annotation.contains("mix of histograms and floats for metric name")
    {
        // About the selector of the metric named last in the text.
        quoted_tail(annotation).and_then(|name| find_word(query, &name))
    } else if annotation.contains("mix of histograms with exponential and custom buckets schemas") {
        // A function's selector, or where the name is not written, the
        // expression a `sum` or `avg` aggregates.
        quoted_tail(annotation)
            .and_then(|name| find_word(query, &name))
            .or_else(|| aggregated_expression(query, &["sum", "avg"]))
    } else if annotation.contains("reconciled during aggregation")
        || annotation.contains("conflicting counter resets during histogram aggregation")
    {
        aggregated_expression(query, &["sum", "avg"])
    } else if let Some(op) = annotation
        .strip_prefix("PromQL info: ignored histogram in ")
        .and_then(|rest| rest.strip_suffix(" aggregation"))
    {
        // About the aggregated expression, but `topk` and `bottomk` name
        // the aggregation itself.
        if matches!(op, "topk" | "bottomk") {
            find_call(query, op)
        } else {
            aggregated_expression(query, &[op])
        }
    } else if annotation.contains("encountered for binary operator") {
        binary_with_operator(query, annotation)
    } else if annotation.contains("sort is ineffective for range queries") {
        ["sort", "sort_desc", "sort_by_label", "sort_by_label_desc"]
            .iter()
            .filter_map(|f| find_call(query, f))
            .min()
    } else if annotation.contains("bucket label \"le\" is missing")
        || annotation.contains("needed to be fixed for monotonicity")
    {
        call_args(query, "histogram_quantile").and_then(|args| args.get(1).copied())
    } else if annotation.contains("quantile value should be between 0 and 1") {
        ["quantile_over_time", "histogram_quantile", "quantile"]
            .iter()
            .filter_map(|f| call_args(query, f).and_then(|a| a.first().copied()))
            .min()
    } else if annotation.contains("ratio value should be between -1 and 1") {
        call_args(query, "limit_ratio").and_then(|a| a.first().copied())
    } else {
        None
    };
    match at {
        Some(at) => {
            let (line, col) = line_col(query, at);
            format!("{annotation} ({line}:{col})")
        }
        None => annotation.to_string(),
    }
}

/// The parser crate's wording in Prometheus': its type names, double quotes
/// around names, and the aggregation parameter.
fn prometheus_words(message: &str) -> String {
    let mut out = message
        .replace("in aggregation expression", "in aggregation parameter")
        .replace(
            "an vector selector or matrix selector",
            "an instant vector selector or range vector selector",
        )
        .replace(
            "subquery is only allowed on vector,",
            "subquery is only allowed on instant vector,",
        )
        .replace("only allowed between vectors", "only allowed between instant vectors");
    if let Some(got) = out.strip_prefix("unary expression only allowed on expressions of type scalar or vector, got: ")
    {
        out = format!(
            "unary expression only allowed on expressions of type scalar or instant vector, got \"{}\"",
            documented_type(got)
        );
    }
    if out.starts_with("no arguments for aggregate expression ") {
        out = "no arguments for aggregate expression provided".into();
    }
    if let Some(ts) = out.strip_prefix("timestamp out of bounds for @ modifier: ") {
        // Go's words for the infinities.
        let go = match ts {
            "inf" => "+Inf",
            "-inf" => "-Inf",
            other => other,
        };
        out = format!("timestamp out of bounds for @ modifier: {go}");
    }
    if let Some(d) = out.strip_prefix("not a valid duration string: ") {
        out = format!("not a valid duration string: \"{d}\"");
    }
    if out.starts_with("expected type ") {
        out = out
            .replacen("expected type matrix", "expected type range vector", 1)
            .replacen("expected type vector", "expected type instant vector", 1)
            .replace("got matrix", "got range vector")
            .replace("got vector", "got instant vector");
    }
    // 'name' → "name" (function names, metric names).
    let quoted: Vec<&str> = out.split('\'').collect();
    if quoted.len() >= 3 && quoted.len() % 2 == 1 {
        out = quoted.join("\"");
    }
    out
}

/// Prometheus' name for a type the parser crate calls by its own.
fn documented_type(t: &str) -> &str {
    match t {
        "matrix" => "range vector",
        "vector" => "instant vector",
        other => other,
    }
}

/// Where the error `message` (in Prometheus' words) is about in `query`.
fn position_of(query: &str, message: &str) -> Option<usize> {
    if let Some(name) = after(message, "unknown function with name ") {
        return find_call(query, &name);
    }
    if let Some(name) = after(message, "in call to function ") {
        // The first argument of a type other than the one expected.
        let want = message.strip_prefix("expected type ")?.split(" in call").next()?;
        let args = call_args(query, &name)?;
        return args
            .iter()
            .copied()
            .find(|&a| arg_type(query, a).is_some_and(|t| t != want))
            .or(args.first().copied());
    }
    if let Some(name) = after(message, "argument(s) in call to ") {
        return find_call(query, &name);
    }
    if message.contains("in aggregation parameter") {
        // The first parameter of an aggregation that takes the type expected
        // and is given another.
        let want = message
            .strip_prefix("expected type ")?
            .split(" in aggregation")
            .next()?;
        let takes: &[&str] = if want == "string" {
            &["count_values"]
        } else {
            &["topk", "bottomk", "quantile", "limitk", "limit_ratio"]
        };
        let params: Vec<usize> = takes
            .iter()
            .filter_map(|f| call_args(query, f).and_then(|a| a.first().copied()))
            .collect();
        return params
            .iter()
            .copied()
            .filter(|&p| arg_type(query, p).is_none_or(|t| t != want))
            .min()
            .or(params.iter().copied().min());
    }
    None
}

/// The double-quoted name at the end of `s` after `prefix`: `"foo"` → `foo`.
fn after(s: &str, prefix: &str) -> Option<String> {
    let rest = s.split(prefix).nth(1)?;
    let rest = rest.strip_prefix('"')?;
    Some(rest.split('"').next()?.to_string())
}

/// The last double-quoted text of `s`.
fn quoted_tail(s: &str) -> Option<String> {
    let end = s.rfind('"')?;
    let start = s.get(..end)?.rfind('"')?;
    Some(s.get(start + 1..end)?.to_string())
}

/// The 1-based line and column (in bytes, as Prometheus counts) of `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = at - before.rfind('\n').map_or(0, |n| n + 1) + 1;
    (line, col)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

/// The bytes of `text` from `from` on that lie outside string literals,
/// with their offsets (a literal's quotes and contents are left out;
/// backquoted ones are raw, without escapes).
fn code(text: &str, from: usize) -> impl Iterator<Item = (usize, u8)> + '_ {
    let (mut quote, mut escaped) = (None, false);
    text.bytes().enumerate().skip(from).filter(move |&(_, b)| match quote {
        Some(_) if escaped => {
            escaped = false;
            false
        }
        Some(q) if b == b'\\' && q != b'`' => {
            escaped = true;
            false
        }
        Some(q) => {
            if b == q {
                quote = None;
            }
            false
        }
        None if matches!(b, b'"' | b'\'' | b'`') => {
            quote = Some(b);
            false
        }
        None => true,
    })
}

/// Where `word` first appears in `text` as a whole identifier, outside
/// strings.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    code(text, 0)
        .find(|&(i, _)| {
            let starts = i == 0 || !is_ident(bytes[i - 1]);
            let ends = bytes.get(i + word.len()).is_none_or(|&n| !is_ident(n));
            starts && ends && text.get(i..i + word.len()) == Some(word)
        })
        .map(|(i, _)| i)
}

/// Where the first call of `name` starts.
fn find_call(text: &str, name: &str) -> Option<usize> {
    call_at(text, name).map(|(start, _)| start)
}

/// The first call of `name`: where it starts and where its argument list
/// opens, after an aggregation's `by (...)` or `without (...)` if any.
fn call_at(text: &str, name: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(found) = find_word(text.get(from..)?, name) {
        let at = from + found;
        let mut open = at + name.len();
        let blank = |i: usize| text.get(i..).map_or(0, |t| t.len() - t.trim_start().len());
        open += blank(open);
        for clause in ["by", "without"] {
            let rest = text.get(open..).unwrap_or_default();
            if rest.starts_with(clause) && rest.get(clause.len()..)?.trim_start().starts_with('(') {
                open += clause.len();
                open += blank(open);
                open += text.get(open..)?.find(')')? + 1;
                open += blank(open);
            }
        }
        if text.get(open..)?.starts_with('(') {
            return Some((at, open));
        }
        from = at + name.len();
    }
    None
}

/// Where each argument of the first call of `name` starts (its first
/// non-blank byte).
fn call_args(text: &str, name: &str) -> Option<Vec<usize>> {
    let (_, open) = call_at(text, name)?;
    let (mut depth, mut args, mut start) = (0usize, Vec::new(), open + 1);
    for (i, b) in code(text, open) {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            b',' if depth == 1 => {
                args.push(start);
                start = i + 1;
            }
            _ => {}
        }
    }
    // The last argument, ended by the call's `)` or by the end of the text.
    args.push(start);
    let skip_blank = |a: usize| a + text.get(a..).map_or(0, |t| t.len() - t.trim_start().len());
    Some(args.into_iter().map(skip_blank).collect())
}

/// Where the expression an aggregation of one of `ops` aggregates starts
/// (its last argument), for the first such aggregation in the query.
fn aggregated_expression(query: &str, ops: &[&str]) -> Option<usize> {
    ops.iter()
        .filter_map(|op| call_at(query, op).map(|(start, _)| (start, op)))
        .min()
        .and_then(|(_, op)| call_args(query, op)?.last().copied())
}

/// Where the binary operation whose operator the annotation names starts
/// (the innermost one, as Prometheus evaluates it first).
fn binary_with_operator(query: &str, annotation: &str) -> Option<usize> {
    // `... binary operator "+": ...` or `... binary operator + (...)`.
    let rest = annotation.split("binary operator ").nth(1)?;
    let op = rest.trim_start_matches('"').split(['"', ' ', ':']).next()?;
    let crate::syntax::Recognized::Valid(nodes) = crate::syntax::recognize(query) else {
        return None;
    };
    nodes
        .iter()
        .filter_map(|n| match n.kind {
            NodeKind::Binary { op: at, .. } => {
                let text = query.get(at..)?;
                let matches = text.starts_with(op) && !text[op.len()..].starts_with(['=', '~', '/']);
                matches.then_some((n.end - n.start, n.start))
            }
            _ => None,
        })
        .min()
        .map(|(_, start)| start)
}

/// The PromQL type of the argument starting at `at`, when it parses alone.
fn arg_type(text: &str, at: usize) -> Option<&'static str> {
    let rest = text.get(at..)?;
    // The argument runs to the next comma or closing parenthesis at its depth.
    let mut depth = 0i32;
    let end = code(rest, 0)
        .find(|&(_, b)| match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                false
            }
            b')' | b']' | b'}' if depth == 0 => true,
            b')' | b']' | b'}' => {
                depth -= 1;
                false
            }
            b',' => depth == 0,
            _ => false,
        })
        .map_or(rest.len(), |(i, _)| i);
    let expr = promql_parser::parser::parse(rest.get(..end)?).ok()?;
    Some(match expr.value_type() {
        promql_parser::parser::value::ValueType::Vector => "instant vector",
        promql_parser::parser::value::ValueType::Matrix => "range vector",
        promql_parser::parser::value::ValueType::Scalar => "scalar",
        promql_parser::parser::value::ValueType::String => "string",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prometheus 3.14's answers, from a running server.
    #[test]
    fn parse_errors_carry_prometheus_positions_and_words() {
        for (query, parser_message, want) in [
            (
                "rate(up[5m]",
                "unclosed left parenthesis",
                "1:12: parse error: unclosed left parenthesis",
            ),
            (
                r#"up{job="a""#,
                "unexpected end of input inside braces",
                "1:11: parse error: unexpected end of input inside braces",
            ),
            (
                "rate(up)",
                "expected type matrix in call to function 'rate', got vector",
                r#"1:6: parse error: expected type range vector in call to function "rate", got instant vector"#,
            ),
            (
                "min_over_time(rate(up[5m]))",
                "expected type matrix in call to function 'min_over_time', got vector",
                r#"1:15: parse error: expected type range vector in call to function "min_over_time", got instant vector"#,
            ),
            (
                "abs(1)",
                "expected type vector in call to function 'abs', got scalar",
                r#"1:5: parse error: expected type instant vector in call to function "abs", got scalar"#,
            ),
            (
                "foo(up)",
                "unknown function with name 'foo'",
                r#"1:1: parse error: unknown function with name "foo""#,
            ),
            (
                "histogram_quantile(up)",
                "expected 2 argument(s) in call to 'histogram_quantile', got 1",
                r#"1:1: parse error: expected 2 argument(s) in call to "histogram_quantile", got 1"#,
            ),
            (
                "topk(up, up)",
                "expected type scalar in aggregation expression, got vector",
                "1:6: parse error: expected type scalar in aggregation parameter, got instant vector",
            ),
            (
                r#"count_values("", limit_ratio(up, up))"#,
                "expected type scalar in aggregation expression, got vector",
                "1:30: parse error: expected type scalar in aggregation parameter, got instant vector",
            ),
            (
                "topk(1, up) + limitk(up, up)",
                "expected type scalar in aggregation expression, got vector",
                "1:22: parse error: expected type scalar in aggregation parameter, got instant vector",
            ),
            (
                "info(up, foo)",
                "expected label selectors only, got vector selector instead",
                "1:10: parse error: expected label selectors only, got vector selector instead",
            ),
            (
                r#"info(up,   +{a="b"})"#,
                "expected label selectors only",
                "1:12: parse error: expected label selectors only",
            ),
            (
                r#"info(label_replace(up, "a", ",", "b", ""), ({a="b"}))"#,
                "expected label selectors only",
                "1:44: parse error: expected label selectors only",
            ),
            (
                "count_values(up, up)",
                "expected type string in aggregation expression, got vector",
                "1:14: parse error: expected type string in aggregation parameter, got instant vector",
            ),
            (
                "up[5m] + 1",
                "binary expression must contain only scalar and instant vector types",
                "1:1: parse error: binary expression must contain only scalar and instant vector types",
            ),
            (
                "up +",
                "unexpected end of input",
                "1:5: parse error: unexpected end of input",
            ),
            (
                "sum without () (up",
                "unclosed left parenthesis",
                "1:19: parse error: unclosed left parenthesis",
            ),
            (
                "foo </ bool 1",
                "bool modifier can only be used on comparison operators",
                "1:5: parse error: bool modifier can only be used on comparison operators",
            ),
            (
                "foo >/",
                "invalid promql query",
                "1:7: parse error: unexpected end of input",
            ),
            (
                "foo < / 1",
                "invalid promql query",
                "1:7: parse error: unexpected <op:/>",
            ),
        ] {
            assert_eq!(parse_error(query, parser_message), want, "{query}");
        }
        assert_eq!(
            parse_error(
                "topk by (job) (up, up)",
                "expected type scalar in aggregation expression, got vector"
            ),
            "1:16: parse error: expected type scalar in aggregation parameter, got instant vector"
        );
        // Lines count from 1; columns restart after a newline.
        assert_eq!(
            parse_error(
                "sum(\n  rate(up)\n)",
                "expected type matrix in call to function 'rate', got vector"
            ),
            r#"2:8: parse error: expected type range vector in call to function "rate", got instant vector"#
        );
        assert_eq!(
            parse_error("up /  ", "invalid promql query"),
            "1:7: parse error: unexpected end of input"
        );
        assert_eq!(
            parse_error("1 +* 2", "invalid promql query"),
            "1:4: parse error: unexpected <op:*>"
        );
        assert_eq!(
            parse_error("", "no expression found in input"),
            "unknown position: parse error: no expression found in input"
        );
    }

    #[test]
    fn strings_hide_their_calls_commas_and_brackets() {
        let q = r#"label_join(x{a="rate(y)"}, "d,(", `\`, "s\")", "e")"#;
        let args = call_args(q, "label_join").unwrap();
        let starts: Vec<&str> = args.iter().map(|&a| &q[a..a + 3]).collect();
        assert_eq!(starts, [r#"x{a"#, r#""d,"#, r#"`\`"#, r#""s\"#, r#""e""#]);
        assert_eq!(find_call(q, "rate"), None, "a call inside a string is none");
        assert_eq!(find_word("a_b ab b", "b"), Some(7));
        assert_eq!(arg_type(q, args[0]), Some("instant vector"));
        assert_eq!(arg_type(q, args[1]), Some("string"));
    }

    #[test]
    fn annotations_carry_the_position_of_what_they_are_about() {
        for (query, text, want) in [
            (
                "rate(cairn_storage_active_series[5m])",
                r#"PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "cairn_storage_active_series""#,
                "(1:6)",
            ),
            (
                "sum(rate(cairn_storage_active_series[5m]))",
                r#"PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: "cairn_storage_active_series""#,
                "(1:10)",
            ),
            (
                "quantile(2, up)",
                "PromQL warning: quantile value should be between 0 and 1, got 2",
                "(1:10)",
            ),
            (
                "quantile_over_time(2, up[1m])",
                "PromQL warning: quantile value should be between 0 and 1, got 2",
                "(1:20)",
            ),
            (
                "histogram_quantile(0.5, up)",
                r#"PromQL warning: bucket label "le" is missing or has a malformed value of """#,
                "(1:25)",
            ),
            // Native histograms, positioned as Prometheus 3.14 answers.
            (
                "rate(queue_depth[5m])",
                r#"PromQL warning: this native histogram metric is not a counter: "queue_depth""#,
                "(1:6)",
            ),
            (
                "avg_over_time(mixed_kind[30m])",
                r#"PromQL warning: encountered a mix of histograms and floats for metric name "mixed_kind""#,
                "(1:15)",
            ),
            ("min(h)", "PromQL info: ignored histogram in min aggregation", "(1:5)"),
            (
                "quantile(0.5, h)",
                "PromQL info: ignored histogram in quantile aggregation",
                "(1:15)",
            ),
            (
                "topk(1, h)",
                "PromQL info: ignored histogram in topk aggregation",
                "(1:1)",
            ),
            (
                "histogram_quantile(0.9, sum(rate(h[5m])))",
                "PromQL info: mismatched custom buckets were reconciled during aggregation",
                "(1:29)",
            ),
            (
                r#"sum({__name__=~"a|b"})"#,
                r#"PromQL warning: vector contains a mix of histograms with exponential and custom buckets schemas for metric name "b""#,
                "(1:5)",
            ),
            (
                "x + 1",
                r#"PromQL info: incompatible sample types encountered for binary operator "+": histogram + float"#,
                "(1:1)",
            ),
            (
                "sum(x) + on(a) (y >= 2 * z)",
                r#"PromQL info: incompatible sample types encountered for binary operator ">=": histogram >= float"#,
                "(1:17)",
            ),
            (
                "a + on(svc) b",
                "PromQL warning: incompatible bucket layout encountered for binary operator +",
                "(1:1)",
            ),
            (
                "sort(up)",
                "PromQL warning: sort is ineffective for range queries since results are always ordered by labels",
                "(1:1)",
            ),
        ] {
            assert_eq!(annotation(query, text), format!("{text} {want}"), "{query}");
        }
        assert_eq!(annotation("up", "PromQL warning: other"), "PromQL warning: other");
    }
}
