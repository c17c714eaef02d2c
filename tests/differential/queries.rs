//! The query list (queries.txt plus the alert rules of the shared alerts
//! file) and the named exceptions where Prometheus 2.42 and 3 differ.

use std::path::Path;

/// How a documented exception is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// The data set avoids the difference; no query is changed.
    Data,
    /// Prometheus 2.42 gets an equivalent query; answers are compared as usual.
    Rewrite,
    /// `sort_by_label[_desc]`: Prometheus 2.42 gets the inner expression; the
    /// answers are compared as sets and Cairn's instant answer must be sorted
    /// by the named labels.
    SortedByLabels,
    /// `limitk(k, X)`: Prometheus 2.42 gets X; Cairn's answer must be a subset
    /// with min(k, |X|) series at every step.
    Subset,
    /// Compared only at evaluations whose windows (and lookback) lie wholly
    /// after the first sample of the data: the difference needs a window that
    /// reaches before a series' first sample.
    InsideData,
    /// topk/bottomk: at every timestamp the selected values must be equal;
    /// label sets may differ only between series tied at the cut.
    TiesAtCut,
    /// No 2.42 equivalent: the query runs only on Cairn and must succeed.
    CairnOnly,
}

pub struct Exception {
    pub name: &'static str,
    pub handling: Handling,
    pub reason: &'static str,
}

/// Every place where Prometheus 2.42's answer is not Prometheus 3's. The same
/// list, in prose, is docs/promql-differences.md.
pub const EXCEPTIONS: &[Exception] = &[
    Exception {
        name: "left-open-range",
        handling: Handling::Data,
        reason: "Prometheus 3 range selectors and the lookback window are left-open ((t-r, t]); 2.42 includes a \
                 sample at exactly t-r. Every sample is written at .250 s and every evaluation time is at .500 s, so \
                 no sample ever lies on a boundary and both versions must agree",
    },
    Exception {
        name: "holt-winters-renamed",
        handling: Handling::Rewrite,
        reason: "Prometheus 3 renamed holt_winters to double_exponential_smoothing (same computation); 2.42 is \
                 asked holt_winters",
    },
    Exception {
        name: "regex-dot-matches-newline",
        handling: Handling::Rewrite,
        reason: "in Prometheus 3 `.` in label matchers and label_replace regexes matches a newline; 2.42 is asked \
                 the same regex with the (?s) flag",
    },
    Exception {
        name: "sort-by-label-new-in-3",
        handling: Handling::SortedByLabels,
        reason: "sort_by_label/sort_by_label_desc do not exist in 2.42; the series set must equal the inner \
                 expression's and Cairn's order is checked against the labels",
    },
    Exception {
        name: "limitk-new-in-3",
        handling: Handling::Subset,
        reason: "limitk does not exist in 2.42; Cairn's answer must be min(k, n) series of the inner expression's, \
                 values unchanged",
    },
    Exception {
        name: "limit-ratio-new-in-3",
        handling: Handling::Rewrite,
        reason: "limit_ratio does not exist in 2.42; limit_ratio(r, X) or limit_ratio(r - 1, X) (complementary \
                 samples) and limit_ratio(1, X) must equal X",
    },
    Exception {
        name: "rate-zero-point-after-threshold",
        handling: Handling::InsideData,
        reason: "Prometheus 3 (prometheus/prometheus#13725) limits rate/increase extrapolation towards a counter's \
                 zero point after the 1.1-interval threshold check, 2.42 before it; the answers differ when a window \
                 reaches before the first sample of a counter that starts near zero, so these queries are compared \
                 only at evaluations whose windows lie inside the data",
    },
    Exception {
        name: "topk-tie-breaking",
        handling: Handling::TiesAtCut,
        reason: "Prometheus 3 replaces the heap root and re-heapifies where 2.42 popped and pushed, so among series \
                 tied at the k-th value another one may be kept (and 3's count_values emits its groups in map order, \
                 so ties over it resolve arbitrarily); the selected values must be equal at every step, and label \
                 sets may differ only between series tied at the cut",
    },
    Exception {
        name: "atan2-drops-name",
        handling: Handling::Rewrite,
        reason: "Prometheus 3 drops the metric name from the result of atan2 as from every arithmetic operator; \
                 2.42 kept it, so 2.42 is asked for the same expression with __name__ removed by label_replace",
    },
    Exception {
        name: "stddev-of-nan",
        handling: Handling::Rewrite,
        reason: "Prometheus 3's stddev/stdvar are NaN when an input sample is NaN or infinite (2.42 gave 0 for a \
                 lone NaN); 2.42 is asked stddev(X) + (sum(X) - sum(X)), which adds NaN exactly then",
    },
    Exception {
        name: "functions-new-in-3",
        handling: Handling::CairnOnly,
        reason: "mad_over_time, first_over_time and ts_of_*_over_time do not exist in 2.42 and have no equivalent \
                 there; these queries run on Cairn only and must succeed (their values are covered by promqltest)",
    },
];

pub fn exception(name: &str) -> Option<&'static Exception> {
    EXCEPTIONS.iter().find(|e| e.name == name)
}

#[derive(Debug, Clone)]
pub struct Query {
    pub class: String,
    /// Where it came from (file:line), for the report.
    pub origin: String,
    pub cairn: String,
    /// What Prometheus 2.42 is asked; `None` for Cairn-only queries.
    pub prometheus: Option<String>,
    pub exception: Option<&'static str>,
}

/// Grafana's variables as a dashboard would expand them for our data.
fn expand_grafana(q: &str) -> String {
    q.replace("$__rate_interval", "1m")
        .replace("$__range", "1h")
        .replace("$__interval", "30s")
}

/// Parses queries.txt (see its header for the format).
pub fn load_list(path: &Path) -> Vec<Query> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
    let mut class = String::from("unclassified");
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(c) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            class = c.to_string();
            continue;
        }
        let origin = format!("{name}:{}", i + 1);
        if let Some(rest) = line.strip_prefix('!') {
            let (ex, q) = rest
                .split_once(' ')
                .unwrap_or_else(|| panic!("{origin}: exception line without a query"));
            let e = exception(ex).unwrap_or_else(|| panic!("{origin}: unknown exception {ex:?}"));
            let (cairn, prometheus) = match q.split_once(" => ") {
                Some((c, p)) => (c.trim().to_string(), Some(p.trim().to_string())),
                None => (q.trim().to_string(), None),
            };
            let wants_rewrite = matches!(
                e.handling,
                Handling::Rewrite | Handling::SortedByLabels | Handling::Subset
            );
            assert!(
                prometheus.is_some() == wants_rewrite,
                "{origin}: exception {ex} {} a `=> query for 2.42`",
                if wants_rewrite { "needs" } else { "takes no" }
            );
            let prometheus = match e.handling {
                Handling::CairnOnly => None,
                Handling::Data | Handling::InsideData | Handling::TiesAtCut => Some(cairn.clone()),
                _ => prometheus,
            };
            out.push(Query {
                class: class.clone(),
                origin,
                cairn: expand_grafana(&cairn),
                prometheus: prometheus.map(|p| expand_grafana(&p)),
                exception: Some(e.name),
            });
            continue;
        }
        let q = expand_grafana(line);
        out.push(Query {
            class: class.clone(),
            origin,
            cairn: q.clone(),
            prometheus: Some(q),
            exception: None,
        });
    }
    out
}

/// The `expr:` of every (uncommented) rule in a Prometheus rules file. The
/// benchmark file writes every expression on one line.
pub fn load_alerts(path: &Path) -> Vec<Query> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let expr = l.trim_start().strip_prefix("expr:")?.trim();
            assert!(
                !expr.is_empty() && !expr.starts_with('|') && !expr.starts_with('>'),
                "{name}:{}: multi-line expressions are not supported",
                i + 1
            );
            let expr = expr.trim_matches(|c| c == '\'' || c == '"').to_string();
            Some(Query {
                class: "alerts".into(),
                origin: format!("{name}:{}", i + 1),
                cairn: expr.clone(),
                prometheus: Some(expr),
                exception: None,
            })
        })
        .collect()
}

/// The name of the outermost function or aggregation when the whole query is
/// one call (`topk(...)`, but not `topk(...) + 1` or `topk by (x) (...)`).
pub fn outer_call(q: &str) -> Option<&str> {
    let q = q.trim();
    let name_len = q.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let (name, rest) = q.split_at(name_len);
    if !rest.starts_with('(') || name.is_empty() {
        return None;
    }
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        if let Some(qc) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == qc {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (i == rest.len() - 1).then_some(name);
                }
            }
            _ => {}
        }
    }
    None
}

/// The quoted label names after `inner` in `sort_by_label(inner, "a", "b")`.
pub fn sort_labels(cairn: &str, inner: &str) -> (Vec<String>, bool) {
    let desc = cairn.trim_start().starts_with("sort_by_label_desc");
    let tail = cairn.split_once(inner).map(|(_, t)| t).unwrap_or_default();
    let names = tail.split('"').skip(1).step_by(2).map(str::to_string).collect();
    (names, desc)
}

/// How far before an evaluation time a query may read: every `[range]` and
/// `[range:step]` in it added up, plus the 5-minute lookback.
pub fn reach_ms(q: &str) -> i64 {
    let mut total = 300_000;
    for part in q.split('[').skip(1) {
        let inside = part.split(']').next().unwrap_or_default();
        let range = inside.split(':').next().unwrap_or_default().trim();
        total += parse_duration_ms(range).unwrap_or_else(|| panic!("cannot read range [{inside}] in {q}"));
    }
    total
}

/// A PromQL duration such as `5m` or `1h30m`, in ms.
pub fn parse_duration_ms(s: &str) -> Option<i64> {
    let mut total = 0i64;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let n: i64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 7 * 86_400_000,
            "y" => 365 * 86_400_000,
            _ => return None,
        };
        total += n * unit;
        rest = &rest[unit_len..];
    }
    (!s.is_empty()).then_some(total)
}

/// `k` of `limitk(k, ...)`.
pub fn limitk_k(cairn: &str) -> usize {
    cairn
        .trim_start()
        .strip_prefix("limitk(")
        .and_then(|r| r.split_once(','))
        .and_then(|(k, _)| k.trim().parse().ok())
        .unwrap_or_else(|| panic!("cannot read k of {cairn}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_call_sees_only_whole_query_calls() {
        assert_eq!(outer_call("sort(node_load1)"), Some("sort"));
        assert_eq!(outer_call("topk(2, rate(x[5m]))"), Some("topk"));
        assert_eq!(outer_call("topk(2, x) + 1"), None);
        assert_eq!(outer_call("topk by (a) (2, x)"), None);
        assert_eq!(outer_call(r#"sort(label_replace(x, "a", ")", "b", ""))"#), Some("sort"));
        assert_eq!(outer_call("node_load1"), None);
    }

    #[test]
    fn reach_adds_ranges_and_lookback() {
        assert_eq!(parse_duration_ms("1h30m"), Some(5_400_000));
        assert_eq!(parse_duration_ms("90s"), Some(90_000));
        assert_eq!(parse_duration_ms("5x"), None);
        assert_eq!(reach_ms("rate(x[5m])"), 600_000);
        assert_eq!(
            reach_ms("max_over_time(rate(x[1m])[10m:1m])"),
            300_000 + 60_000 + 600_000
        );
    }

    #[test]
    fn sort_labels_reads_trailing_names() {
        let (l, d) = sort_labels(r#"sort_by_label_desc(x{a="b"}, "mode", "cpu")"#, r#"x{a="b"}"#);
        assert_eq!(l, vec!["mode", "cpu"]);
        assert!(d);
    }
}
