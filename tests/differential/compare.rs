//! Parsing `/api/v1/query[_range]` answers and comparing two of them.
//!
//! Values are equal when both are NaN, both the same infinity, or within
//! 1e-9 relative; native histograms when their count, sum and buckets
//! (boundary rules exactly, bounds and counts as values) are. Label sets are compared exactly. Order is compared where
//! Prometheus defines it: a range query's matrix is sorted by labels, and an
//! instant query whose outermost operation is `sort`, `sort_desc`, or an
//! ungrouped `topk`/`bottomk` is ordered by value (ties may come in either
//! order, so the values must be in the same order and the label sets equal).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone)]
pub enum Answer {
    Error { error_type: String, message: String },
    Scalar(i64, f64),
    String(String),
    Vector(Vec<(Labels, i64, Point)>),
    Matrix(Vec<(Labels, Vec<(i64, Point)>)>),
}

/// The value of a vector element or matrix point.
#[derive(Debug, Clone)]
pub enum Point {
    Float(f64),
    Histogram(Histogram),
}

/// A native histogram as the API renders it.
#[derive(Debug, Clone)]
pub struct Histogram {
    pub count: f64,
    pub sum: f64,
    /// `(boundary_rule, lower, upper, count)`.
    pub buckets: Vec<(u64, f64, f64, f64)>,
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Point::Float(v) => write!(f, "{v}"),
            Point::Histogram(h) => {
                write!(f, "{{count:{} sum:{} buckets:", h.count, h.sum)?;
                for (rule, lo, hi, c) in &h.buckets {
                    write!(f, " [{rule} {lo} {hi} {c}]")?;
                }
                write!(f, "}}")
            }
        }
    }
}

impl Point {
    /// The float, or NaN for a histogram (for checks of float answers only).
    pub fn as_float(&self) -> f64 {
        match self {
            Point::Float(v) => *v,
            Point::Histogram(_) => f64::NAN,
        }
    }
}

/// Equal floats ([`same_value`]), or histograms equal in every part.
pub fn same_point(a: &Point, b: &Point) -> bool {
    match (a, b) {
        (Point::Float(x), Point::Float(y)) => same_value(*x, *y),
        (Point::Histogram(x), Point::Histogram(y)) => {
            same_value(x.count, y.count)
                && same_value(x.sum, y.sum)
                && x.buckets.len() == y.buckets.len()
                && x.buckets
                    .iter()
                    .zip(&y.buckets)
                    .all(|(p, q)| p.0 == q.0 && same_value(p.1, q.1) && same_value(p.2, q.2) && same_value(p.3, q.3))
        }
        _ => false,
    }
}

fn number(v: &Value) -> f64 {
    match v.as_str().unwrap_or("") {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        x => x.parse().unwrap_or(f64::NAN),
    }
}

fn histogram(h: &Value) -> Histogram {
    let buckets = h["buckets"]
        .as_array()
        .map(|bs| {
            bs.iter()
                .map(|b| {
                    (
                        b[0].as_u64().unwrap_or(u64::MAX),
                        number(&b[1]),
                        number(&b[2]),
                        number(&b[3]),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Histogram {
        count: number(&h["count"]),
        sum: number(&h["sum"]),
        buckets,
    }
}

fn timestamp(t: &Value) -> i64 {
    (t.as_f64().unwrap_or(f64::NAN) * 1000.0).round() as i64
}

/// The warnings and the infos of an answer, each sorted.
pub fn annotations(body: &str) -> (Vec<String>, Vec<String>) {
    let v: Value = serde_json::from_str(body).unwrap_or_default();
    let list = |key: &str| {
        let mut l: Vec<String> = v[key]
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        l.sort();
        l
    };
    (list("warnings"), list("infos"))
}

fn labels(v: &Value) -> Labels {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn point(p: &Value) -> (i64, f64) {
    (timestamp(&p[0]), number(&p[1]))
}

fn histogram_point(p: &Value) -> (i64, Point) {
    (timestamp(&p[0]), Point::Histogram(histogram(&p[1])))
}

/// Parses one answer (status code and body).
pub fn parse(status: u16, body: &str) -> Answer {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return Answer::Error {
            error_type: format!("http {status}, not JSON"),
            message: body.chars().take(200).collect(),
        };
    };
    if v["status"] != "success" {
        return Answer::Error {
            error_type: v["errorType"].as_str().unwrap_or("?").to_string(),
            message: v["error"].as_str().unwrap_or("?").to_string(),
        };
    }
    let data = &v["data"];
    let result = &data["result"];
    match data["resultType"].as_str().unwrap_or("") {
        "scalar" => {
            let (t, x) = point(result);
            Answer::Scalar(t, x)
        }
        "string" => Answer::String(result[1].as_str().unwrap_or_default().to_string()),
        "vector" => Answer::Vector(
            result
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| {
                            let (t, x) = match s.get("histogram") {
                                Some(h) => histogram_point(h),
                                None => {
                                    let (t, x) = point(&s["value"]);
                                    (t, Point::Float(x))
                                }
                            };
                            (labels(&s["metric"]), t, x)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        "matrix" => Answer::Matrix(
            result
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| {
                            let floats = s["values"].as_array().into_iter().flatten().map(|p| {
                                let (t, x) = point(p);
                                (t, Point::Float(x))
                            });
                            let histograms = s["histograms"].as_array().into_iter().flatten().map(histogram_point);
                            let mut pts: Vec<(i64, Point)> = floats.chain(histograms).collect();
                            pts.sort_by_key(|p| p.0);
                            (labels(&s["metric"]), pts)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        other => Answer::Error {
            error_type: format!("unknown resultType {other:?}"),
            message: String::new(),
        },
    }
}

/// Equal within 1e-9 relative; NaN equals NaN.
pub fn same_value(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a == b {
        return true;
    }
    if a.is_infinite() || b.is_infinite() {
        return false;
    }
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

pub fn show_labels(l: &Labels) -> String {
    let name = l.get("__name__").cloned().unwrap_or_default();
    let rest: Vec<String> = l
        .iter()
        .filter(|(k, _)| k.as_str() != "__name__")
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    format!("{name}{{{}}}", rest.join(", "))
}

/// How an answer's order is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Compare as sets.
    None,
    /// Values in the same sequence (ties in any order), label sets equal.
    ByValue,
}

/// Prometheus' `labels.Compare` order on label sets (name, then value,
/// pairwise; a prefix sorts first).
fn prom_label_order(a: &Labels, b: &Labels) -> std::cmp::Ordering {
    a.iter().cmp(b.iter())
}

const MAX_DIFF_LINES: usize = 8;

/// `None` when equal, else a readable diff (prometheus = expected).
pub fn diff(prom: &Answer, cairn: &Answer, order: Order) -> Option<String> {
    let mut out = String::new();
    match (prom, cairn) {
        (
            Answer::Error {
                error_type: a,
                message: am,
            },
            Answer::Error {
                error_type: b,
                message: bm,
            },
        ) => {
            let duplicate = |m: &str| m.contains("vector cannot contain metrics with the same labelset");
            if a != b {
                let _ = write!(out, "both fail, errorType {a} vs {b}");
            } else if duplicate(am) != duplicate(bm) {
                let _ = write!(out, "both fail, prometheus: {am}, cairn: {bm}");
            }
        }
        (Answer::Scalar(ta, a), Answer::Scalar(tb, b)) => {
            if ta != tb || !same_value(*a, *b) {
                let _ = write!(out, "scalar: prometheus {a} @{ta}, cairn {b} @{tb}");
            }
        }
        (Answer::String(a), Answer::String(b)) => {
            if a != b {
                let _ = write!(out, "string: prometheus {a:?}, cairn {b:?}");
            }
        }
        (Answer::Vector(a), Answer::Vector(b)) => diff_vector(a, b, order, &mut out),
        (Answer::Matrix(a), Answer::Matrix(b)) => diff_matrix(a, b, &mut out),
        (a, b) => {
            let _ = write!(out, "prometheus: {}\n      cairn: {}", brief(a), brief(b));
        }
    }
    (!out.is_empty()).then_some(out)
}

fn brief(a: &Answer) -> String {
    match a {
        Answer::Error { error_type, message } => format!("error {error_type}: {message}"),
        Answer::Scalar(t, v) => format!("scalar {v} @{t}"),
        Answer::String(s) => format!("string {s:?}"),
        Answer::Vector(v) => format!("vector of {}", v.len()),
        Answer::Matrix(m) => format!("matrix of {}", m.len()),
    }
}

fn diff_vector(a: &[(Labels, i64, Point)], b: &[(Labels, i64, Point)], order: Order, out: &mut String) {
    let mut lines = Vec::new();
    let ma: BTreeMap<&Labels, (i64, &Point)> = a.iter().map(|(l, t, v)| (l, (*t, v))).collect();
    let mb: BTreeMap<&Labels, (i64, &Point)> = b.iter().map(|(l, t, v)| (l, (*t, v))).collect();
    for (l, (t, v)) in &ma {
        match mb.get(l) {
            None => lines.push(format!("only in prometheus: {} = {v} @{t}", show_labels(l))),
            Some((tb, vb)) if tb != t || !same_point(v, vb) => {
                lines.push(format!("{}: prometheus {v} @{t}, cairn {vb} @{tb}", show_labels(l)))
            }
            _ => {}
        }
    }
    for (l, (t, v)) in &mb {
        if !ma.contains_key(l) {
            lines.push(format!("only in cairn: {} = {v} @{t}", show_labels(l)));
        }
    }
    if lines.is_empty() && order == Order::ByValue {
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            if !same_point(&x.2, &y.2) {
                lines.push(format!(
                    "order differs at #{i}: prometheus {} = {}, cairn {} = {}",
                    show_labels(&x.0),
                    x.2,
                    show_labels(&y.0),
                    y.2
                ));
                break;
            }
        }
    }
    finish(lines, out);
}

type Points = Vec<(i64, Point)>;

fn diff_matrix(a: &[(Labels, Points)], b: &[(Labels, Points)], out: &mut String) {
    let mut lines = Vec::new();
    let ma: BTreeMap<&Labels, &Points> = a.iter().map(|(l, p)| (l, p)).collect();
    let mb: BTreeMap<&Labels, &Points> = b.iter().map(|(l, p)| (l, p)).collect();
    for (l, pa) in &ma {
        let Some(pb) = mb.get(l) else {
            lines.push(format!("only in prometheus: {} ({} points)", show_labels(l), pa.len()));
            continue;
        };
        let ta: BTreeMap<i64, &Point> = pa.iter().map(|(t, v)| (*t, v)).collect();
        let tb: BTreeMap<i64, &Point> = pb.iter().map(|(t, v)| (*t, v)).collect();
        for (t, v) in &ta {
            match tb.get(t) {
                None => lines.push(format!("{} @{t}: prometheus {v}, cairn has no point", show_labels(l))),
                Some(w) if !same_point(v, w) => {
                    lines.push(format!("{} @{t}: prometheus {v}, cairn {w}", show_labels(l)))
                }
                _ => {}
            }
        }
        for (t, w) in &tb {
            if !ta.contains_key(t) {
                lines.push(format!("{} @{t}: prometheus has no point, cairn {w}", show_labels(l)));
            }
        }
    }
    for (l, pb) in &mb {
        if !ma.contains_key(l) {
            lines.push(format!("only in cairn: {} ({} points)", show_labels(l), pb.len()));
        }
    }
    if lines.is_empty() {
        // Prometheus sorts a range query's series by labels; Cairn must too.
        let sorted = b
            .windows(2)
            .all(|w| prom_label_order(&w[0].0, &w[1].0) != std::cmp::Ordering::Greater);
        if !sorted {
            lines.push("cairn's matrix is not sorted by labels".into());
        }
    }
    finish(lines, out);
}

fn finish(lines: Vec<String>, out: &mut String) {
    let n = lines.len();
    for l in lines.iter().take(MAX_DIFF_LINES) {
        let _ = writeln!(out, "    {l}");
    }
    if n > MAX_DIFF_LINES {
        let _ = writeln!(out, "    ... and {} more differences", n - MAX_DIFF_LINES);
    }
}

/// Every `(series, timestamp) → value string` of a success body.
fn value_strings(body: &str) -> BTreeMap<(String, String), String> {
    let mut out = BTreeMap::new();
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return out;
    };
    let result = &v["data"]["result"];
    let mut add = |metric: &Value, p: &Value| {
        if let (Some(t), Some(x)) = (p.get(0), p.get(1).and_then(Value::as_str)) {
            out.insert((metric.to_string(), t.to_string()), x.to_string());
        }
    };
    let Value::Array(items) = result else { return out };
    if items.len() == 2 && items[1].is_string() {
        // A scalar or string: [t, "v"].
        add(&Value::Null, result);
        return out;
    }
    for s in items {
        if let Some(p) = s.get("value") {
            add(&s["metric"], p);
        }
        for p in s.get("values").and_then(Value::as_array).into_iter().flatten() {
            add(&s["metric"], p);
        }
    }
    out
}

/// Values that are the same number but written differently (Prometheus
/// formats as Go's `strconv.FormatFloat(v, 'f', -1, 64)`-like `%g`).
pub fn format_diff(prom_body: &str, cairn_body: &str) -> Option<String> {
    let (a, b) = (value_strings(prom_body), value_strings(cairn_body));
    let mut lines = Vec::new();
    for (k, x) in &a {
        if let Some(y) = b.get(k)
            && x != y
        {
            let (px, py) = (x.parse::<f64>().ok(), y.parse::<f64>().ok());
            let same = match (px, py) {
                (Some(p), Some(q)) => p.to_bits() == q.to_bits(),
                _ => false,
            };
            if same {
                lines.push(format!("{} @{}: prometheus writes {x:?}, cairn {y:?}", k.0, k.1));
            }
        }
    }
    let mut out = String::new();
    finish(lines, &mut out);
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_relative_and_nan() {
        assert!(same_value(1.0, 1.0 + 1e-12));
        assert!(!same_value(1.0, 1.0 + 1e-6));
        assert!(same_value(f64::NAN, f64::NAN));
        assert!(!same_value(f64::NAN, 0.0));
        assert!(same_value(f64::INFINITY, f64::INFINITY));
        assert!(!same_value(f64::INFINITY, f64::NEG_INFINITY));
        assert!(!same_value(0.0, 1e-300));
    }
}
