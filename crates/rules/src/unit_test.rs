//! `promtool test rules`: unit-test files that feed input series, evaluate
//! rule files step by step, and check firing alerts and PromQL results.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_model::{Labels, Sample};
use cairn_promql::{Engine, EngineOptions, Value as PromValue};
use cairn_storage::{Appendable, MemStorage, Queryable};
use promql_parser::parser::Expr;
use serde::Deserialize;

use crate::file::load_rule_file;
use crate::group::{EvalEnv, Group};
use cairn_config::duration::option_std as serde_opt;

/// What one unit-test file found: each failure, by test group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RuleTestReport {
    pub failures: Vec<String>,
}

impl RuleTestReport {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UnitTestFile {
    #[serde(default)]
    rule_files: Vec<String>,
    #[serde(default, with = "serde_opt")]
    evaluation_interval: Option<Duration>,
    #[serde(default)]
    group_eval_order: Vec<String>,
    #[serde(default)]
    tests: Vec<TestGroup>,
    #[serde(default)]
    fuzzy_compare: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestGroup {
    #[serde(default, with = "serde_opt")]
    interval: Option<Duration>,
    #[serde(default)]
    input_series: Vec<InputSeries>,
    #[serde(default)]
    alert_rule_test: Vec<AlertTest>,
    #[serde(default)]
    promql_expr_test: Vec<ExprTest>,
    #[serde(default)]
    external_labels: BTreeMap<String, String>,
    #[serde(default)]
    external_url: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputSeries {
    series: String,
    #[serde(default)]
    values: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AlertTest {
    #[serde(with = "serde_opt", default)]
    eval_time: Option<Duration>,
    #[serde(default)]
    alertname: String,
    #[serde(default)]
    exp_alerts: Vec<ExpAlert>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpAlert {
    #[serde(default)]
    exp_labels: BTreeMap<String, String>,
    #[serde(default)]
    exp_annotations: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExprTest {
    expr: String,
    #[serde(with = "serde_opt", default)]
    eval_time: Option<Duration>,
    #[serde(default)]
    exp_samples: Vec<ExpSample>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpSample {
    #[serde(default)]
    labels: String,
    #[serde(default)]
    value: f64,
}

/// Runs the unit tests of one file; Err for a file that cannot be read or loaded.
pub fn run_rule_tests(path: &Path) -> Result<RuleTestReport, Vec<String>> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("{name}: {e}")])?;
    let file: UnitTestFile = serde_yaml_ng::from_str(&text).map_err(|e| vec![format!("{name}: {e}")])?;
    let base = path.parent().unwrap_or(Path::new("."));
    let rule_files: Vec<PathBuf> = file
        .rule_files
        .iter()
        .map(|f| {
            if Path::new(f).is_absolute() {
                PathBuf::from(f)
            } else {
                base.join(f)
            }
        })
        .collect();
    let eval_interval = file.evaluation_interval.unwrap_or(Duration::from_secs(60));
    let mut report = RuleTestReport::default();
    for (i, tg) in file.tests.iter().enumerate() {
        let label = if tg.name.is_empty() {
            format!("test {}", i + 1)
        } else {
            tg.name.clone()
        };
        match run_group(
            tg,
            &rule_files,
            eval_interval,
            &file.group_eval_order,
            file.fuzzy_compare,
        ) {
            Ok(failures) => report
                .failures
                .extend(failures.into_iter().map(|f| format!("{label}: {f}"))),
            Err(e) => report.failures.push(format!("{label}: {e}")),
        }
    }
    Ok(report)
}

fn run_group(
    tg: &TestGroup,
    rule_files: &[PathBuf],
    eval_interval: Duration,
    order: &[String],
    fuzzy: bool,
) -> Result<Vec<String>, String> {
    let storage = Arc::new(MemStorage::new());
    let interval_ms = tg.interval.unwrap_or(eval_interval).as_millis() as i64;
    let mut app = storage.appender();
    for s in &tg.input_series {
        let labels = parse_series(&s.series)?;
        let values = expand_values(&s.values)?;
        let samples: Vec<Sample> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| Sample::new(i as i64 * interval_ms, v)))
            .collect();
        app.append(&labels, &samples).map_err(|e| e.to_string())?;
    }
    app.commit().map_err(|e| e.to_string())?;

    let mut groups = Vec::new();
    for f in rule_files {
        let file = load_rule_file(f).map_err(|e| e.join("\n"))?;
        for spec in file.groups {
            groups.push(Group::new(spec, eval_interval, Duration::ZERO, false));
        }
    }
    if !order.is_empty() {
        groups.sort_by_key(|g| order.iter().position(|n| *n == g.spec.name).unwrap_or(usize::MAX));
    }
    let engine = Arc::new(Engine::new(EngineOptions::default()));
    let env = EvalEnv {
        engine: engine.clone(),
        queryable: storage.clone() as Arc<dyn Queryable>,
        appendable: storage.clone() as Arc<dyn Appendable>,
        notifier: None,
        external_labels: tg.external_labels.clone(),
        external_url: tg.external_url.clone(),
        resend_delay: Duration::from_secs(60),
        outage_tolerance: Duration::from_secs(3600),
        for_grace_period: Duration::from_secs(600),
        groups_move: false,
        durations: Default::default(),
    };

    let mut failures = Vec::new();
    let mut alert_times: Vec<i64> = tg
        .alert_rule_test
        .iter()
        .map(|t| t.eval_time.unwrap_or_default().as_nanos() as i64)
        .collect();
    alert_times.sort_unstable();
    alert_times.dedup();
    let max_t = alert_times.last().copied().unwrap_or(0);
    let step = eval_interval.as_nanos().max(1) as i64;
    let mut next = 0;
    let mut ts = 0i64;
    while ts <= max_t {
        for g in &mut groups {
            g.eval(ts, &env);
            for r in &g.rules {
                if let Some(e) = &r.last_error {
                    return Err(format!("rule: {}, time: {}, err: {e}", r.spec.name(), go_duration(ts)));
                }
            }
        }
        while next < alert_times.len() && ts <= alert_times[next] && alert_times[next] < ts + step {
            let t = alert_times[next];
            for test in tg
                .alert_rule_test
                .iter()
                .filter(|a| a.eval_time.unwrap_or_default().as_nanos() as i64 == t)
            {
                check_alerts(&groups, test, t, &mut failures);
            }
            next += 1;
        }
        ts += step;
    }

    for test in &tg.promql_expr_test {
        let t_ms = test.eval_time.unwrap_or_default().as_millis() as i64;
        let got = match engine.instant(storage.as_ref(), &test.expr, t_ms) {
            Ok(r) => match r.value {
                PromValue::Vector(v) => v
                    .into_iter()
                    .map(|s| (s.metric, s.value.as_float().unwrap_or(f64::NAN)))
                    .collect(),
                PromValue::Scalar { v, .. } => vec![(Labels::empty(), v)],
                other => return Err(format!("expression {:?} returned a {}", test.expr, other.type_name())),
            },
            Err(e) => {
                failures.push(format!(
                    "expr: {:?}, time: {}, err: {e}",
                    test.expr,
                    go_duration(t_ms * 1_000_000)
                ));
                continue;
            }
        };
        let mut exp = Vec::new();
        for s in &test.exp_samples {
            let labels = if s.labels.is_empty() {
                Labels::empty()
            } else {
                parse_series(&s.labels)?
            };
            exp.push((labels, s.value));
        }
        let mut got: Vec<(Labels, f64)> = got;
        got.sort_by(|a, b| a.0.cmp(&b.0));
        exp.sort_by(|a, b| a.0.cmp(&b.0));
        let same = got.len() == exp.len()
            && got
                .iter()
                .zip(&exp)
                .all(|(g, e)| g.0 == e.0 && float_equal(g.1, e.1, fuzzy));
        if !same {
            failures.push(format!(
                "expr: {:?}, time: {},\n        exp: {}\n        got: {}",
                test.expr,
                model_duration(t_ms * 1_000_000),
                samples_text(&exp),
                samples_text(&got)
            ));
        }
    }
    Ok(failures)
}

fn check_alerts(groups: &[Group], test: &AlertTest, t: i64, failures: &mut Vec<String>) {
    type Alerts = Vec<(BTreeMap<String, String>, BTreeMap<String, String>)>;
    let mut got: Alerts = Vec::new();
    for g in groups {
        for r in &g.rules {
            if r.spec.name() != test.alertname || !matches!(r.spec.kind, crate::RuleKind::Alert(_)) {
                continue;
            }
            for a in r.active.values() {
                if a.state == crate::AlertState::Firing && a.resolved_at.is_none() {
                    let labels = a
                        .labels
                        .iter()
                        .map(|l| (l.name.to_string(), l.value.to_string()))
                        .collect();
                    got.push((labels, a.annotations.clone()));
                }
            }
        }
    }
    let mut exp: Alerts = test
        .exp_alerts
        .iter()
        .map(|a| {
            let mut labels = a.exp_labels.clone();
            labels.insert("alertname".into(), test.alertname.clone());
            (labels, a.exp_annotations.clone())
        })
        .collect();
    got.sort();
    exp.sort();
    if got != exp {
        failures.push(format!(
            "alertname: {}, time: {},\n        exp:{:?},\n        got:{:?}",
            test.alertname,
            model_duration(t),
            exp,
            got
        ));
    }
}

fn float_equal(a: f64, b: f64, fuzzy: bool) -> bool {
    if a.is_nan() && b.is_nan() {
        return true;
    }
    if fuzzy {
        (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
    } else {
        a == b
    }
}

fn samples_text(samples: &[(Labels, f64)]) -> String {
    let parts: Vec<String> = samples.iter().map(|(l, v)| format!("{l} {v}")).collect();
    format!("[{}]", parts.join(", "))
}

/// How promtool prints an `eval_time` (`6m`).
fn model_duration(ns: i64) -> String {
    cairn_config::Duration::from_std(Duration::from_nanos(ns.max(0) as u64)).to_string()
}

/// How promtool prints an evaluation time (Go's `time.Duration`, `6m0s`).
fn go_duration(ns: i64) -> String {
    crate::template::Value::Duration(ns).print()
}

/// A series in selector notation (`up{job="a"}`) as a label set.
fn parse_series(text: &str) -> Result<Labels, String> {
    let expr = cairn_promql::parse(text).map_err(|e| format!("parse series {text:?}: {e}"))?;
    let Expr::VectorSelector(vs) = expr else {
        return Err(format!("not a series: {text:?}"));
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    if let Some(name) = &vs.name {
        pairs.push(("__name__".into(), name.clone()));
    }
    for m in &vs.matchers.matchers {
        pairs.push((m.name.clone(), m.value.clone()));
    }
    Ok(Labels::from_pairs(pairs))
}

/// promtool's value notation: `1 2 _ stale 1+2x3 5-1x2 0x4 _x2`; None is a missing sample.
pub(crate) fn expand_values(text: &str) -> Result<Vec<Option<f64>>, String> {
    let mut out = Vec::new();
    for item in text.split_whitespace() {
        let bad = || format!("invalid value notation: {item:?}");
        if item == "_" {
            out.push(None);
            continue;
        }
        if item == "stale" {
            out.push(Some(cairn_model::stale_nan()));
            continue;
        }
        let Some((series, count)) = item.rsplit_once('x') else {
            out.push(Some(parse_value(item).ok_or_else(bad)?));
            continue;
        };
        let n: usize = count.parse().map_err(|_| bad())?;
        if series == "_" {
            out.extend(std::iter::repeat_n(None, n));
            continue;
        }
        // The step's sign sits after the start value (which may be negative itself).
        let split = series
            .char_indices()
            .skip(1)
            .find(|&(i, c)| (c == '+' || c == '-') && !matches!(series.as_bytes()[i - 1], b'e' | b'E'))
            .map(|(i, _)| i);
        let (start, step) = match split {
            Some(i) => (
                parse_value(&series[..i]).ok_or_else(bad)?,
                parse_value(&series[i..]).ok_or_else(bad)?,
            ),
            None => (parse_value(series).ok_or_else(bad)?, 0.0),
        };
        for k in 0..=n {
            out.push(Some(start + step * k as f64));
        }
    }
    Ok(out)
}

fn parse_value(s: &str) -> Option<f64> {
    match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        other => other.parse().ok(),
    }
}

#[cfg(test)]
mod tests;
