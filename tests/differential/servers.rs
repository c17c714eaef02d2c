//! What the PromQL differential tests share beyond parsing and comparing
//! answers: the Prometheus binary, evaluations and asking a server, and the
//! topk/bottomk tie policy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cairn_protocols::SeriesSamples;
use cairn_protocols::remote_write::ContentEncoding;

use super::compare::{self, Answer, Order};
use crate::common::peers::Prometheus;
use crate::common::{Client, encode, ms_to_param};

pub fn prometheus_binary() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("CAIRN_TEST_PROMETHEUS") {
        return Some(PathBuf::from(p));
    }
    crate::common::peers::prometheus_3()
}

/// The major version of a Prometheus binary, from `--version`.
pub fn major_version(bin: &Path) -> u32 {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .expect("prometheus --version");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.split("version ")
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no version in {text:?}"))
}

/// One evaluation of a query: instant at a time or range with a step.
#[derive(Debug, Clone, Copy)]
pub enum Eval {
    Instant { t_ms: i64 },
    Range { start_ms: i64, end_ms: i64, step_ms: i64 },
}

impl Eval {
    pub fn params(&self) -> Vec<(&'static str, String)> {
        match *self {
            Eval::Instant { t_ms } => vec![("time", ms_to_param(t_ms))],
            Eval::Range {
                start_ms,
                end_ms,
                step_ms,
            } => vec![
                ("start", ms_to_param(start_ms)),
                ("end", ms_to_param(end_ms)),
                ("step", ms_to_param(step_ms)),
            ],
        }
    }

    pub fn path(&self) -> &'static str {
        match self {
            Eval::Instant { .. } => "/api/v1/query",
            Eval::Range { .. } => "/api/v1/query_range",
        }
    }

    /// The earliest time an evaluation of a query reading `reach_ms` before
    /// each step can touch.
    pub fn earliest_ms(&self, reach_ms: i64) -> i64 {
        match *self {
            Eval::Instant { t_ms } => t_ms - reach_ms,
            Eval::Range { start_ms, .. } => start_ms - reach_ms,
        }
    }

    pub fn describe(&self, origin_ms: i64) -> String {
        match *self {
            Eval::Instant { t_ms } => format!("instant at end{:+.1}s", (t_ms - origin_ms) as f64 / 1000.0),
            Eval::Range {
                start_ms,
                end_ms,
                step_ms,
            } => format!(
                "range end{:+.1}s..end{:+.1}s step {}s",
                (start_ms - origin_ms) as f64 / 1000.0,
                (end_ms - origin_ms) as f64 / 1000.0,
                step_ms / 1000
            ),
        }
    }
}

pub fn ask(http: &reqwest::blocking::Client, base: &str, query: &str, ev: &Eval) -> Answer {
    ask_raw(http, base, query, ev).0
}

/// The answer and the body it was parsed from.
pub fn ask_raw(http: &reqwest::blocking::Client, base: &str, query: &str, ev: &Eval) -> (Answer, String) {
    let mut form: Vec<(&str, String)> = ev.params();
    form.push(("query", query.to_string()));
    match http.post(format!("{base}{}", ev.path())).form(&form).send() {
        Ok(r) => {
            let status = r.status().as_u16();
            let body = r.text().unwrap_or_default();
            (compare::parse(status, &body), body)
        }
        Err(e) => (
            Answer::Error {
                error_type: "request failed".into(),
                message: e.to_string(),
            },
            String::new(),
        ),
    }
}

pub type PointsByTime = BTreeMap<i64, BTreeMap<compare::Labels, f64>>;

/// A vector or matrix answer as timestamp → series → value.
pub fn points_by_time(a: &Answer) -> Option<PointsByTime> {
    let mut m: PointsByTime = BTreeMap::new();
    match a {
        Answer::Vector(v) => {
            for (l, t, x) in v {
                m.entry(*t).or_default().insert(l.clone(), x.as_float());
            }
        }
        Answer::Matrix(mx) => {
            for (l, pts) in mx {
                for (t, x) in pts {
                    m.entry(*t).or_default().insert(l.clone(), x.as_float());
                }
            }
        }
        _ => return None,
    }
    Some(m)
}

/// topk/bottomk with ties: at every timestamp the same values, and series
/// that only one side selected must be tied in value with a series that
/// only the other side selected. An instant answer must also come in the
/// same value order.
pub fn ties_diff(prom: &Answer, cairn: &Answer, ev: &Eval) -> Option<String> {
    let (Some(p), Some(c)) = (points_by_time(prom), points_by_time(cairn)) else {
        return compare::diff(prom, cairn, Order::None);
    };
    let times: std::collections::BTreeSet<i64> = p.keys().chain(c.keys()).copied().collect();
    let empty = BTreeMap::new();
    for t in times {
        let (ps, cs) = (p.get(&t).unwrap_or(&empty), c.get(&t).unwrap_or(&empty));
        let only_p: Vec<f64> = ps
            .iter()
            .filter(|(l, _)| !cs.contains_key(*l))
            .map(|(_, v)| *v)
            .collect();
        let only_c: Vec<f64> = cs
            .iter()
            .filter(|(l, _)| !ps.contains_key(*l))
            .map(|(_, v)| *v)
            .collect();
        let shared_differ = ps
            .iter()
            .any(|(l, v)| cs.get(l).is_some_and(|w| !compare::same_value(*v, *w)));
        let mut a = only_p.clone();
        let mut b = only_c.clone();
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        let tied = a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| compare::same_value(*x, *y));
        if shared_differ || !tied {
            return compare::diff(prom, cairn, Order::None)
                .map(|d| format!("{d}    (not explained by ties at @{t})\n"));
        }
    }
    if matches!(ev, Eval::Instant { .. })
        && let (Answer::Vector(a), Answer::Vector(b)) = (prom, cairn)
        && let Some(i) = a.iter().zip(b).position(|(x, y)| !compare::same_point(&x.2, &y.2))
    {
        return Some(format!(
            "    value order differs at #{i}: prometheus {}, cairn {}",
            a[i].2, b[i].2
        ));
    }
    None
}

/// `cairn` must hold min(k, n) of `prom`'s series at every timestamp, with
/// unchanged values.
pub fn subset_diff(prom: &Answer, cairn: &Answer, k: usize) -> Option<String> {
    let (Some(p), Some(c)) = (points_by_time(prom), points_by_time(cairn)) else {
        return compare::diff(prom, cairn, Order::None);
    };
    for (t, ps) in &p {
        let cs = c.get(t).cloned().unwrap_or_default();
        if cs.len() != k.min(ps.len()) {
            return Some(format!(
                "    @{t}: cairn has {} series, want min({k}, {})",
                cs.len(),
                ps.len()
            ));
        }
        for (l, x) in &cs {
            if !ps.get(l).is_some_and(|y| compare::same_value(*x, *y)) {
                return Some(format!(
                    "    @{t}: {} = {x} is not in the inner expression's answer",
                    compare::show_labels(l)
                ));
            }
        }
    }
    if let Some(t) = c.keys().find(|t| !p.contains_key(t)) {
        return Some(format!(
            "    @{t}: cairn has series where the inner expression has none"
        ));
    }
    None
}

/// Writes every request to Prometheus and to each Cairn, in order; panics
/// on a refused write.
pub fn write_all(
    http: &reqwest::blocking::Client,
    prom: &Prometheus,
    requests: &[Vec<SeriesSamples>],
    cairns: &[&Client],
) {
    for batch in requests {
        let body = encode(batch, ContentEncoding::Snappy);
        let r = http
            .post(format!("{}/api/v1/write", prom.url()))
            .header("Content-Type", "application/x-protobuf")
            .header("Content-Encoding", "snappy")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .body(body.clone())
            .send()
            .expect("prometheus remote write");
        let status = r.status().as_u16();
        assert!(
            status == 204 || status == 200,
            "prometheus refused a write ({status}): {}\n{}",
            r.text().unwrap_or_default(),
            prom.log()
        );
        for c in cairns {
            let r = c.post_write(body.clone(), Some("snappy"));
            assert_eq!(r.status, 204, "cairn refused a write: {}", r.body);
        }
    }
}
