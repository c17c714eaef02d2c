//! The functions a template may call: Go's builtins and Prometheus' additions.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::format::{sprint, sprintf, sprintln};
use super::value::{QuerySample, Value};

/// Runs a PromQL instant query for `query` at a time in ms.
pub type QueryFn<'a> = dyn Fn(&str, i64) -> Result<Vec<QuerySample>, String> + 'a;

/// What Prometheus' functions see beyond their arguments.
pub struct Context<'a> {
    /// The evaluation time in ms (`query` runs at it, `now` returns it).
    pub time_ms: i64,
    /// None where Prometheus has no query function (load-time checks).
    pub query: Option<&'a QueryFn<'a>>,
    /// None where Prometheus has no external URL.
    pub external_url: Option<&'a str>,
}

const NIL_POINTER: &str = "runtime error: invalid memory address or nil pointer dereference";

#[derive(Clone, Copy, PartialEq)]
enum Ty {
    Any,
    Str,
    Samples,
    Sample,
}

/// Parameter types and the variadic type of each function.
fn signature(name: &str) -> Option<(&'static [Ty], Option<Ty>)> {
    use Ty::*;
    Some(match name {
        "and" | "or" | "print" | "println" | "html" | "urlquery" | "args" => (&[], Some(Any)),
        "not" | "len" | "humanize" | "humanize1024" | "humanizeDuration" | "humanizePercentage"
        | "humanizeTimestamp" | "toTime" | "toDuration" => (&[Any], None),
        "index" => (&[Any], Some(Any)),
        "printf" => (&[Str], Some(Any)),
        "eq" => (&[Any], Some(Any)),
        "ne" | "lt" | "le" | "gt" | "ge" => (&[Any, Any], None),
        "query" | "safeHtml" | "title" | "toUpper" | "toLower" | "graphLink" | "tableLink" | "stripPort"
        | "stripDomain" | "parseDuration" | "urlQueryEscape" => (&[Str], None),
        "first" => (&[Samples], None),
        "label" => (&[Str, Sample], None),
        "value" | "strvalue" => (&[Sample], None),
        "match" => (&[Str, Str], None),
        "reReplaceAll" => (&[Str, Str, Str], None),
        "sortByLabel" => (&[Str, Samples], None),
        "now" | "pathPrefix" | "externalURL" => (&[], None),
        _ => return None,
    })
}

pub fn is_function(name: &str) -> bool {
    signature(name).is_some()
}

/// Go's argument count and type checks before a call.
pub fn check_args(name: &str, args: &[Value]) -> Result<(), String> {
    let Some((params, variadic)) = signature(name) else {
        return Err(format!("{name:?} is not a defined function"));
    };
    let count_ok = match variadic {
        Some(_) => args.len() >= params.len(),
        None => args.len() == params.len(),
    };
    if !count_ok {
        let want = if variadic.is_some() {
            format!("at least {}", params.len())
        } else {
            params.len().to_string()
        };
        return Err(format!(
            "wrong number of args for {name}: want {want} got {}",
            args.len()
        ));
    }
    for (i, a) in args.iter().enumerate() {
        let ty = params.get(i).copied().or(variadic).unwrap_or(Ty::Any);
        let ok = match ty {
            Ty::Any => true,
            Ty::Str => matches!(a, Value::Str(_)),
            Ty::Samples => matches!(a, Value::Samples(_) | Value::Nil),
            Ty::Sample => matches!(a, Value::Sample(_) | Value::Nil),
        };
        if !ok {
            let want = match ty {
                Ty::Str => "string",
                Ty::Samples => "template.queryResult",
                _ => "*template.sample",
            };
            return Err(format!("wrong type for value; expected {want}; got {}", a.type_name()));
        }
    }
    Ok(())
}

fn str_arg(args: &[Value], i: usize) -> &str {
    match args.get(i) {
        Some(Value::Str(s)) => s,
        _ => "",
    }
}

pub fn call(name: &str, args: &[Value], ctx: &Context<'_>) -> Result<Value, String> {
    let s = |i| str_arg(args, i).to_string();
    let arg0 = args.first().cloned().unwrap_or(Value::Nil);
    Ok(match name {
        "not" => Value::Bool(!arg0.truth()),
        "len" => Value::Int(match &arg0 {
            Value::Str(s) | Value::Html(s) => s.len(),
            Value::StrMap(m) => m.len(),
            Value::Map(m) => m.len(),
            Value::Samples(v) => v.len(),
            other => return Err(format!("len of type {}", other.type_name())),
        } as i64),
        "index" => index(args)?,
        "print" => Value::Str(sprint(args)),
        "println" => Value::Str(sprintln(args)),
        "printf" => Value::Str(sprintf(str_arg(args, 0), &args[1..])),
        "html" => Value::Str(html_escape(&sprint(args))),
        "urlquery" => Value::Str(query_escape(&sprint(args))),
        "eq" => Value::Bool(eq(args)?),
        "ne" => Value::Bool(!eq(args)?),
        "lt" => Value::Bool(compare(&args[0], &args[1])? == Ordering::Less),
        "le" => Value::Bool(compare(&args[0], &args[1])? != Ordering::Greater),
        "gt" => Value::Bool(compare(&args[0], &args[1])? == Ordering::Greater),
        "ge" => Value::Bool(compare(&args[0], &args[1])? != Ordering::Less),
        "query" => {
            let Some(q) = ctx.query else {
                return Err(NIL_POINTER.into());
            };
            let result = q(&s(0), ctx.time_ms)?;
            Value::Samples(Rc::new(result.into_iter().map(Rc::new).collect()))
        }
        "first" => match &arg0 {
            Value::Samples(v) if !v.is_empty() => Value::Sample(v[0].clone()),
            _ => return Err("first() called on vector with no elements".into()),
        },
        "label" => match &args[1] {
            Value::Sample(smp) => Value::Str(smp.labels.get(str_arg(args, 0)).cloned().unwrap_or_default()),
            _ => return Err(NIL_POINTER.into()),
        },
        "value" => match &arg0 {
            Value::Sample(smp) => Value::Float(smp.value),
            _ => return Err(NIL_POINTER.into()),
        },
        "strvalue" => match &arg0 {
            Value::Sample(smp) => Value::Str(smp.labels.get("__value__").cloned().unwrap_or_default()),
            _ => return Err(NIL_POINTER.into()),
        },
        "args" => {
            let m: BTreeMap<String, Value> = args
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("arg{i}"), a.clone()))
                .collect();
            Value::Map(Rc::new(m))
        }
        "reReplaceAll" => {
            let re = compile(&s(0)).map_err(|e| format!("regexp: Compile({}): {e}", go_backquote(&s(0))))?;
            Value::Str(re.replace_all(&s(2), s(1).as_str()).into_owned())
        }
        "match" => {
            let re = compile(&s(0))?;
            Value::Bool(re.is_match(&s(1)))
        }
        "safeHtml" => Value::Html(s(0)),
        "title" => Value::Str(title(&s(0))),
        "toUpper" => Value::Str(s(0).to_uppercase()),
        "toLower" => Value::Str(s(0).to_lowercase()),
        "graphLink" => Value::Str(format!("/graph?g0.expr={}&g0.tab=0", query_escape(&s(0)))),
        "tableLink" => Value::Str(format!("/graph?g0.expr={}&g0.tab=1", query_escape(&s(0)))),
        "sortByLabel" => {
            let by = s(0);
            let mut v: Vec<Rc<QuerySample>> = match &args[1] {
                Value::Samples(v) => v.as_ref().clone(),
                _ => Vec::new(),
            };
            let key = |x: &Rc<QuerySample>| x.labels.get(&by).cloned().unwrap_or_default();
            v.sort_by_key(key);
            Value::Samples(Rc::new(v))
        }
        "stripPort" => Value::Str(match split_host_port(&s(0)) {
            Some((host, _)) => host,
            None => s(0),
        }),
        "stripDomain" => Value::Str(strip_domain(&s(0))),
        "humanize" => Value::Str(humanize(to_float(&arg0)?)),
        "humanize1024" => Value::Str(humanize1024(to_float(&arg0)?)),
        "humanizeDuration" => Value::Str(humanize_duration(to_float(&arg0)?)),
        "humanizePercentage" => Value::Str(format!(
            "{}%",
            sprintf("%.4g", &[Value::Float(to_float(&arg0)? * 100.0)])
        )),
        "humanizeTimestamp" => {
            let v = to_float(&arg0)?;
            if !v.is_finite() {
                Value::Str(sprintf("%.4g", &[Value::Float(v)]))
            } else {
                Value::Str(Value::Time(float_to_time(v)?).print())
            }
        }
        "toTime" => {
            let v = to_float(&arg0)?;
            if !v.is_finite() {
                return Err("value is NaN or Inf".into());
            }
            Value::Time(float_to_time(v)?)
        }
        "toDuration" => Value::Duration((to_float(&arg0)? * 1e9) as i64),
        "now" => Value::Float(ctx.time_ms as f64 / 1000.0),
        "pathPrefix" => Value::Str(url_path(ctx.external_url.ok_or(NIL_POINTER)?).to_string()),
        "externalURL" => Value::Str(ctx.external_url.ok_or(NIL_POINTER)?.to_string()),
        "parseDuration" => Value::Float(parse_duration_allow_negative(&s(0))?),
        "urlQueryEscape" => Value::Str(query_escape(&s(0))),
        _ => return Err(format!("{name:?} is not a defined function")),
    })
}

fn compile(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern)
        .map_err(|e| format!("error parsing regexp: {}", go_regexp_error(&e.to_string(), pattern)))
}

/// Go's wording of the common syntax errors (Go's text names the code and the expression).
fn go_regexp_error(rust: &str, pattern: &str) -> String {
    let code = if rust.contains("unclosed group") {
        "missing closing )"
    } else if rust.contains("unopened group") {
        "unexpected )"
    } else if rust.contains("unclosed character class") {
        "missing closing ]"
    } else if rust.contains("repetition operator missing expression") {
        "missing argument to repetition operator"
    } else if rust.contains("unrecognized escape sequence") {
        "invalid escape sequence"
    } else if rust.contains("invalid character class range") {
        "invalid character class range"
    } else {
        return rust
            .lines()
            .last()
            .unwrap_or(rust)
            .trim()
            .trim_start_matches("error: ")
            .to_string();
    };
    format!("{code}: `{pattern}`")
}

fn go_backquote(s: &str) -> String {
    format!("`{s}`")
}

fn index(args: &[Value]) -> Result<Value, String> {
    let mut v = args[0].clone();
    for key in &args[1..] {
        v = match (&v, key) {
            (Value::StrMap(m), Value::Str(k)) => Value::Str(m.get(k).cloned().unwrap_or_default()),
            (Value::Map(m), Value::Str(k)) => m.get(k).cloned().unwrap_or(Value::Nil),
            (Value::Samples(s), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| s.get(i)) {
                Some(e) => Value::Sample(e.clone()),
                None => return Err(format!("error calling index: index out of range: {i}")),
            },
            (Value::Str(s), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| s.as_bytes().get(i)) {
                Some(b) => Value::Int(i64::from(*b)),
                None => return Err(format!("error calling index: index out of range: {i}")),
            },
            (Value::Nil, _) => return Err("index of untyped nil".into()),
            (Value::StrMap(_) | Value::Map(_), k) => {
                return Err(format!("value has type {}; should be string", k.type_name()));
            }
            (other, _) => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(v)
}

#[derive(PartialEq)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
}

fn kind(v: &Value) -> Option<Kind> {
    match v {
        Value::Bool(_) => Some(Kind::Bool),
        Value::Int(_) => Some(Kind::Int),
        Value::Float(_) => Some(Kind::Float),
        Value::Str(_) | Value::Html(_) => Some(Kind::Str),
        _ => None,
    }
}

fn eq(args: &[Value]) -> Result<bool, String> {
    let a = &args[0];
    if args.len() < 2 {
        return Err("missing argument for comparison".into());
    }
    for b in &args[1..] {
        let equal = match (kind(a), kind(b)) {
            (Some(ka), Some(kb)) if ka == kb => match (a, b) {
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Int(x), Value::Int(y)) => x == y,
                (Value::Float(x), Value::Float(y)) => x == y,
                (Value::Str(x) | Value::Html(x), Value::Str(y) | Value::Html(y)) => x == y,
                _ => false,
            },
            (Some(_), Some(_)) => {
                return Err(format!(
                    "incompatible types for comparison: {} and {}",
                    a.type_name(),
                    b.type_name()
                ));
            }
            _ => match (a, b) {
                (Value::Nil, Value::Nil) => true,
                (Value::Nil, _) | (_, Value::Nil) => false,
                (Value::Sample(x), Value::Sample(y)) => Rc::ptr_eq(x, y),
                (Value::StrMap(_) | Value::Map(_) | Value::Samples(_), _) => {
                    return Err(format!("non-comparable type {}: {}", a.print(), a.type_name()));
                }
                _ => {
                    return Err(format!(
                        "incompatible types for comparison: {} and {}",
                        a.type_name(),
                        b.type_name()
                    ));
                }
            },
        };
        if equal {
            return Ok(true);
        }
    }
    Ok(false)
}

fn compare(a: &Value, b: &Value) -> Result<Ordering, String> {
    match (kind(a), kind(b)) {
        (Some(Kind::Bool), _) | (_, Some(Kind::Bool)) | (None, _) | (_, None) => {
            Err("invalid type for comparison".into())
        }
        (Some(ka), Some(kb)) if ka != kb => Err(format!(
            "incompatible types for comparison: {} and {}",
            a.type_name(),
            b.type_name()
        )),
        _ => Ok(match (a, b) {
            (Value::Int(x), Value::Int(y)) => x.cmp(y),
            (Value::Float(x), Value::Float(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
            (Value::Str(x) | Value::Html(x), Value::Str(y) | Value::Html(y)) => x.cmp(y),
            _ => Ordering::Equal,
        }),
    }
}

/// Prometheus' conversion of a function argument to a float.
fn to_float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::Duration(ns) => Ok(*ns as f64 / 1e9),
        Value::Str(s) => parse_go_float(s),
        other => Err(format!("can't convert {} to float", other.type_name())),
    }
}

/// Go's `strconv.ParseFloat` for the forms people write (with Inf/NaN spellings).
fn parse_go_float(s: &str) -> Result<f64, String> {
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['+', '-']);
    let special = matches!(unsigned, "inf" | "infinity" | "nan");
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | '_'));
    if (special || plain)
        && let Ok(v) = lower.replace('_', "").parse::<f64>()
    {
        return Ok(v);
    }
    Err(format!(
        "strconv.ParseFloat: parsing {}: invalid syntax",
        super::format::go_quote(s)
    ))
}

fn float_to_time(v: f64) -> Result<i64, String> {
    let ns = v * 1e9;
    if ns > i64::MAX as f64 || ns < i64::MIN as f64 {
        return Err(format!(
            "{} cannot be represented as a nanoseconds timestamp since it overflows int64",
            super::format::format_float_v(v)
        ));
    }
    // Prometheus goes through its millisecond time type.
    let ms = (ns as i64) / 1_000_000;
    Ok(ms * 1_000_000)
}

fn g4(v: f64) -> String {
    sprintf("%.4g", &[Value::Float(v)])
}

pub(crate) fn humanize(mut v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return g4(v);
    }
    let mut prefix = "";
    if v.abs() >= 1.0 {
        for p in ["k", "M", "G", "T", "P", "E", "Z", "Y"] {
            if v.abs() < 1000.0 {
                break;
            }
            prefix = p;
            v /= 1000.0;
        }
    } else {
        for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
            if v.abs() >= 1.0 {
                break;
            }
            prefix = p;
            v *= 1000.0;
        }
    }
    format!("{}{prefix}", g4(v))
}

pub(crate) fn humanize1024(mut v: f64) -> String {
    if v.abs() <= 1.0 || !v.is_finite() {
        return g4(v);
    }
    let mut prefix = "";
    for p in ["ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"] {
        if v.abs() < 1024.0 {
            break;
        }
        prefix = p;
        v /= 1024.0;
    }
    format!("{}{prefix}", g4(v))
}

pub(crate) fn humanize_duration(mut v: f64) -> String {
    if !v.is_finite() {
        return g4(v);
    }
    if v == 0.0 {
        return format!("{}s", g4(v));
    }
    if v.abs() >= 1.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        v = v.abs();
        let d = v as i64;
        let (days, hours, minutes, seconds) = (d / 86_400, d / 3600 % 24, d / 60 % 60, d % 60);
        return if days != 0 {
            format!("{sign}{days}d {hours}h {minutes}m {seconds}s")
        } else if hours != 0 {
            format!("{sign}{hours}h {minutes}m {seconds}s")
        } else if minutes != 0 {
            format!("{sign}{minutes}m {seconds}s")
        } else {
            format!("{sign}{}s", g4(v))
        };
    }
    let mut prefix = "";
    for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
        if v.abs() >= 1.0 {
            break;
        }
        prefix = p;
        v *= 1000.0;
    }
    format!("{}{prefix}s", g4(v))
}

/// `cases.Title` with no lowering: each word's first letter upper-cased.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.push(c);
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric() || c == '_' || c == '\'';
    }
    out
}

/// Go's `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `net.SplitHostPort`: None where it would fail.
fn split_host_port(s: &str) -> Option<(String, String)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = after.strip_prefix(':')?;
        if port.contains(':') || host.contains('[') {
            return None;
        }
        return Some((host.to_string(), port.to_string()));
    }
    let (host, port) = s.rsplit_once(':')?;
    if host.contains(':') || host.contains('[') || host.contains(']') || port.contains(']') {
        return None;
    }
    Some((host.to_string(), port.to_string()))
}

fn strip_domain(s: &str) -> String {
    let (host, port) = split_host_port(s).unwrap_or_else(|| (s.to_string(), String::new()));
    if host.parse::<std::net::IpAddr>().is_ok() {
        return s.to_string();
    }
    let short = host.split('.').next().unwrap_or("").to_string();
    if port.is_empty() {
        short
    } else if short.contains(':') {
        format!("[{short}]:{port}")
    } else {
        format!("{short}:{port}")
    }
}

/// The path of a URL (`http://host/prefix?x` → `/prefix`).
fn url_path(url: &str) -> &str {
    let after_scheme = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let path_start = after_scheme.find('/').unwrap_or(after_scheme.len());
    let path = &after_scheme[path_start..];
    let end = path.find(['?', '#']).unwrap_or(path.len());
    &path[..end]
}

fn parse_duration_allow_negative(s: &str) -> Result<f64, String> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let d = cairn_config::Duration::parse(body)
        .map(cairn_config::Duration::as_std)
        .map_err(|_| format!("not a valid duration string: {s:?}"))?;
    let secs = d.as_secs_f64();
    Ok(if neg { -secs } else { secs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humanize_family_matches_prometheus() {
        assert_eq!(humanize(0.0), "0");
        assert_eq!(humanize(1234567.0), "1.235M");
        assert_eq!(humanize(12.5), "12.5");
        assert_eq!(humanize(0.0012), "1.2m");
        assert_eq!(humanize(-1500.0), "-1.5k");
        assert_eq!(humanize(f64::INFINITY), "+Inf");
        assert_eq!(humanize1024(1024.0 * 1024.0 * 3.0), "3Mi");
        assert_eq!(humanize1024(0.5), "0.5");
        assert_eq!(humanize_duration(0.0), "0s");
        assert_eq!(humanize_duration(86_400.0 + 3600.0), "1d 1h 0m 0s");
        assert_eq!(humanize_duration(899.99), "14m 59s");
        assert_eq!(
            humanize_duration(-(86400.0 * 2.0 + 3600.0 * 3.0 + 60.0 * 4.0 + 5.0)),
            "-2d 3h 4m 5s"
        );
        assert_eq!(humanize_duration(0.1), "100ms");
        assert_eq!(humanize_duration(0.0001), "100us");
        assert_eq!(humanize_duration(1.5), "1.5s");
    }

    #[test]
    fn host_helpers_follow_go_net() {
        assert_eq!(split_host_port("a.b:9090"), Some(("a.b".into(), "9090".into())));
        assert_eq!(split_host_port("[::1]:80"), Some(("::1".into(), "80".into())));
        assert_eq!(split_host_port("noport"), None);
        assert_eq!(strip_domain("node1.example.com:9100"), "node1:9100");
        assert_eq!(strip_domain("node1.example.com"), "node1");
        assert_eq!(strip_domain("10.0.0.1:9100"), "10.0.0.1:9100");
        assert_eq!(url_path("http://example.com/prom/x?y=1"), "/prom/x");
        assert_eq!(title("hello wide-world foo_bar"), "Hello Wide-World Foo_bar");
        assert_eq!(query_escape("up{job=\"a b\"}"), "up%7Bjob%3D%22a+b%22%7D");
    }
}
