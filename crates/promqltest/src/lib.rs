//! Runs Prometheus' PromQL test scripts (the `promqltest` language) against
//! Cairn's engine over [`MemStorage`], or over any storage the caller makes
//! ([`run_script_on`]: the embedded engine, a cluster).
//!
//! Commands: `load <interval>` (and `load_with_nhcb`), `clear`,
//! `eval instant at <t> <query>`, `eval range from <a> to <b> step <s> <query>`
//! (and the deprecated `eval_fail`/`eval_warn`/`eval_info`/`eval_ordered`),
//! with `expect fail|warn|info|no_warn|no_info|ordered|string|range vector`
//! lines (optionally `msg:`/`regex:`) and expected series.
//!
//! Series values may be native histograms in Prometheus' notation
//! (`notation.rs`); `load_with_nhcb` also stores classic histograms as
//! custom-bucket ones (`nhcb.rs`). Expected histograms are compared as
//! Prometheus' test framework compares them.
//!
//! An eval that needs a feature Prometheus 3.14 keeps behind a flag is
//! skipped and the feature is named; everything else passes or fails.

mod nhcb;
mod notation;

use cairn_model::histogram::HistogramSample;
use cairn_model::{Label, Labels, Sample, stale_nan};
use cairn_promql::{Engine, EngineOptions, QueryError, QueryResult, SampleValue, Value};
use std::sync::Arc;

use cairn_storage::{Appendable, MemStorage, Storage};
use notation::Stated;
use regex::Regex;

/// The outcome of one `eval`.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pass,
    Fail(String),
    /// Needs the named feature.
    Skip(String),
}

#[derive(Debug, Clone)]
pub struct EvalReport {
    pub line: usize,
    pub query: String,
    pub outcome: Outcome,
}

/// A value in a series line.
#[derive(Debug, Clone, PartialEq)]
enum Point {
    Float(f64),
    Histogram(Stated),
}

/// Expected value for one series line: `None` is an omitted point (`_`).
type Points = Vec<Option<Point>>;

#[derive(Debug, Default)]
struct Expect {
    fail: Option<Option<Matcher>>,
    warn: Vec<Option<Matcher>>,
    info: Vec<Option<Matcher>>,
    no_warn: bool,
    no_info: bool,
    ordered: bool,
    string: Option<String>,
    range_vector: Option<(i64, i64, i64)>,
    scalar: Option<f64>,
    series: Vec<(Labels, Points)>,
}

#[derive(Debug, Clone)]
enum Matcher {
    Msg(String),
    Regex(Regex),
}

impl Matcher {
    fn matches(&self, s: &str) -> bool {
        match self {
            Matcher::Msg(m) => m == s,
            Matcher::Regex(r) => r.is_match(s),
        }
    }
}

struct State {
    storage: Arc<dyn Storage>,
    start_timestamps: bool,
}

impl State {
    fn new(storage: Arc<dyn Storage>) -> Self {
        Self {
            storage,
            start_timestamps: false,
        }
    }
}

/// Where a script's data goes: a new, empty storage at its start and at each `clear`.
pub type MakeStorage<'a> = &'a dyn Fn() -> Arc<dyn Storage>;

fn is_command(line: &str) -> bool {
    let w = line.split_whitespace().next().unwrap_or("");
    matches!(
        w,
        "load" | "load_with_nhcb" | "clear" | "eval" | "eval_fail" | "eval_warn" | "eval_info" | "eval_ordered"
    )
}

/// Runs a whole script and reports every eval, with the engine set as
/// Prometheus' own PromQL tests set theirs ([`upstream_options`]).
pub fn run_script(text: &str) -> Vec<EvalReport> {
    run_script_with(text, upstream_options())
}

/// The options Prometheus runs its PromQL test scripts with where they
/// differ from a server's defaults: delayed name removal on. Type-and-unit
/// labels stay off, as there: their scripts expect `rate`'s info about
/// counters by name (`type_and_unit.test` holds either way, as results drop
/// `__type__` and `__unit__` with the name regardless).
pub fn upstream_options() -> EngineOptions {
    EngineOptions {
        delayed_name_removal: true,
        ..EngineOptions::default()
    }
}

/// [`run_script`] with engine options of the caller's choosing.
pub fn run_script_with(text: &str, opts: EngineOptions) -> Vec<EvalReport> {
    run_script_on(text, opts, &|| Arc::new(MemStorage::new()))
}

/// [`run_script_with`] over storages `make` gives.
pub fn run_script_on(text: &str, opts: EngineOptions, make: MakeStorage) -> Vec<EvalReport> {
    let lines: Vec<&str> = text.lines().collect();
    let mut state = State::new(make());
    let engine = Engine::new(opts);
    let mut reports = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        let header_line = i;
        // Collect the block body.
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() {
            let l = lines[i].trim();
            if l.is_empty() || is_command(l) {
                break;
            }
            if !l.starts_with('#') {
                body.push((i, l));
            }
            i += 1;
        }
        let cmd = line.split_whitespace().next().unwrap_or("");
        match cmd {
            "clear" => state = State::new(make()),
            "load" | "load_with_nhcb" => {
                if let Err(e) = load(&mut state, line, &body, cmd == "load_with_nhcb") {
                    reports.push(EvalReport {
                        line: header_line + 1,
                        query: line.to_string(),
                        outcome: Outcome::Fail(format!("load failed: {e}")),
                    });
                }
            }
            c if c.starts_with("eval") => {
                let (query, outcome) = eval(&engine, &state, line, &body);
                reports.push(EvalReport {
                    line: header_line + 1,
                    query,
                    outcome,
                });
            }
            _ => reports.push(EvalReport {
                line: header_line + 1,
                query: line.to_string(),
                outcome: Outcome::Fail(format!("unknown command {line:?}")),
            }),
        }
    }
    reports
}

/// Prometheus' own test scripts (`../shared/promqltest/testdata/*.test`
/// beside the checkout) in name order, or `None` (with a note) when they
/// are not there.
pub fn upstream_scripts() -> Option<Vec<std::path::PathBuf>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/promqltest/testdata");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("upstream test data not found at {}; skipping", dir.display());
        return None;
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    files.sort();
    Some(files)
}

/// Parses durations like `1h30m`, `5m`, `100ms`, or plain (float) seconds.
pub fn parse_dur(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('-') {
        return parse_dur(rest).map(|v| -v);
    }
    if let Ok(f) = s.parse::<f64>() {
        return Some((f * 1000.0).round() as i64);
    }
    let mut total: i64 = 0;
    let b = s.as_bytes();
    let mut i = 0;
    if b.is_empty() {
        return None;
    }
    while i < b.len() {
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if st == i {
            return None;
        }
        let n: i64 = s[st..i].parse().ok()?;
        let us = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let mult = match &s[us..i] {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            "y" => 31_536_000_000,
            _ => return None,
        };
        total += n * mult;
    }
    Some(total)
}

/// Splits `metric{labels} rest` into labels and the rest.
fn parse_series(line: &str) -> Result<(Labels, String), String> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'{' {
        i += 1;
    }
    let name = &line[..i];
    let mut sel_end = i;
    if i < b.len() && b[i] == b'{' {
        let mut in_q: Option<u8> = None;
        let mut j = i + 1;
        while j < b.len() {
            let ch = b[j];
            match in_q {
                Some(q) => {
                    if ch == b'\\' {
                        j += 1;
                    } else if ch == q {
                        in_q = None;
                    }
                }
                None => {
                    if ch == b'"' || ch == b'\'' || ch == b'`' {
                        in_q = Some(ch);
                    } else if ch == b'}' {
                        break;
                    }
                }
            }
            j += 1;
        }
        if j >= b.len() {
            return Err(format!("unterminated label set in {line:?}"));
        }
        sel_end = j + 1;
    }
    let sel = &line[..sel_end];
    let rest = line[sel_end..].trim().to_string();
    let inner = sel.get(name.len()..).unwrap_or("").trim();
    if name.is_empty() && (inner == "{}" || inner.is_empty()) {
        return Ok((Labels::empty(), rest));
    }
    let sel = if inner == "{}" { name } else { sel };
    let expr = promql_parser::parser::parse(sel).map_err(|e| format!("bad series {sel:?}: {e}"))?;
    let promql_parser::parser::Expr::VectorSelector(vs) = expr else {
        return Err(format!("not a series: {sel:?}"));
    };
    let mut labels = Vec::new();
    if let Some(n) = vs.name {
        labels.push(Label::new("__name__", n));
    }
    for m in vs.matchers.matchers {
        labels.push(Label::new(m.name, m.value));
    }
    Ok((Labels::new(labels).map_err(|e| e.to_string())?, rest))
}

fn number_prefix(s: &str) -> Option<(f64, &str)> {
    let re = number_re();
    let m = re.find(s)?;
    let txt = m.as_str();
    let v = match txt.trim_start_matches('+').to_ascii_lowercase().as_str() {
        "inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        "nan" | "-nan" => f64::NAN,
        _ => txt.parse::<f64>().ok()?,
    };
    Some((v, &s[m.end()..]))
}

fn number_re() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^[+-]?(?:[Ii]nf|NaN|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)").unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Expands a points specification (`1 2+3x4 _ _x3 stale 5x2 {{count:1}}x2`).
fn parse_points(s: &str) -> Result<Points, String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        if rest.starts_with("{{") {
            let (hs, after) = notation::parse_histogram_token(rest)?;
            out.extend(hs.into_iter().map(|h| Some(Point::Histogram(h))));
            rest = after.trim_start();
            continue;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (tok, after) = rest.split_at(end);
        rest = after.trim_start();
        out.extend(parse_float_token(tok)?.into_iter().map(|v| v.map(Point::Float)));
    }
    Ok(out)
}

/// One token of floats: `_`, `_x3`, `stale`, `1`, `1x3`, `1+2x3`.
fn parse_float_token(tok: &str) -> Result<Vec<Option<f64>>, String> {
    if tok == "_" {
        return Ok(vec![None]);
    }
    if let Some(n) = tok.strip_prefix("_x") {
        let n: usize = n.parse().map_err(|_| format!("bad token {tok:?}"))?;
        return Ok(vec![None; n]);
    }
    if tok == "stale" {
        return Ok(vec![Some(stale_nan())]);
    }
    let (base, rest) = if let Some(r) = tok.strip_prefix("stale") {
        (stale_nan(), r)
    } else {
        number_prefix(tok).ok_or_else(|| format!("bad token {tok:?}"))?
    };
    if rest.is_empty() {
        return Ok(vec![Some(base)]);
    }
    if let Some(n) = rest.strip_prefix('x') {
        let n: usize = n.parse().map_err(|_| format!("bad token {tok:?}"))?;
        return Ok(vec![Some(base); n + 1]);
    }
    let (sign, r) = match rest.as_bytes()[0] {
        b'+' => (1.0, &rest[1..]),
        b'-' => (-1.0, &rest[1..]),
        _ => return Err(format!("bad token {tok:?}")),
    };
    let (inc, r) = number_prefix(r).ok_or_else(|| format!("bad token {tok:?}"))?;
    let n: usize = r
        .strip_prefix('x')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("bad token {tok:?}"))?;
    let inc = sign * inc;
    let mut v = base;
    let mut out = vec![Some(v)];
    for _ in 0..n {
        v += inc;
        out.push(Some(v));
    }
    Ok(out)
}

fn load(state: &mut State, header: &str, body: &[(usize, &str)], nhcb: bool) -> Result<(), String> {
    let interval = header
        .split_whitespace()
        .nth(1)
        .and_then(parse_dur)
        .ok_or_else(|| format!("bad load header {header:?}"))?;
    let mut app = state.storage.appender();
    let mut loaded_floats = Vec::new();
    let mut start_timestamps = false;
    for &(_, line) in body {
        if line.contains("@st") {
            start_timestamps = true;
            continue;
        }
        let (labels, rest) = parse_series(line)?;
        let mut floats: Vec<Sample> = Vec::new();
        let mut histograms = Vec::new();
        for (i, p) in parse_points(&rest)?.into_iter().enumerate() {
            let t = i as i64 * interval;
            match p {
                None => {}
                Some(Point::Float(v)) => floats.push(Sample::new(t, v)),
                Some(Point::Histogram(s)) => histograms.push(HistogramSample::new(t, s.h)),
            }
        }
        if !histograms.is_empty() {
            as_stored(&mut histograms, &floats);
            app.append_histograms(&labels, &histograms).map_err(|e| e.to_string())?;
        }
        if !floats.is_empty() {
            app.append(&labels, &floats).map_err(|e| e.to_string())?;
        }
        if nhcb {
            loaded_floats.push((labels, floats));
        }
    }
    for (labels, histograms) in nhcb::convert(&loaded_floats)? {
        app.append_histograms(&labels, &histograms).map_err(|e| e.to_string())?;
    }
    app.commit().map_err(|e| e.to_string())?;
    state.start_timestamps |= start_timestamps;
    Ok(())
}

/// The counter reset hints a series' histograms read back with from
/// Prometheus' TSDB, which its test scripts expect: the storage decides
/// them per chunk as it appends. A histogram that starts a chunk (the
/// series' first, the first after a float or a gauge, or a reset) reads
/// back with an unknown hint, later ones of the chunk as not resets;
/// gauges stay gauges.
fn as_stored(histograms: &mut [HistogramSample], floats: &[Sample]) {
    use cairn_model::histogram::{Histogram, ResetHint};
    let mut prev: Option<(i64, std::sync::Arc<Histogram>)> = None;
    for s in histograms.iter_mut() {
        let after_float = prev
            .as_ref()
            .is_some_and(|(pt, _)| floats.iter().any(|f| f.t > *pt && f.t < s.t));
        let unhinted = Histogram {
            reset_hint: ResetHint::Unknown,
            ..(*s.h).clone()
        };
        let hint = match (&prev, s.h.reset_hint) {
            (_, ResetHint::Gauge) => ResetHint::Gauge,
            (_, ResetHint::Reset) => ResetHint::Unknown,
            (Some((_, p)), _)
                if !after_float && p.reset_hint != ResetHint::Gauge && !Histogram::is_reset(p, &unhinted) =>
            {
                ResetHint::NotReset
            }
            _ => ResetHint::Unknown,
        };
        if hint != s.h.reset_hint {
            s.h = std::sync::Arc::new(Histogram {
                reset_hint: hint,
                ..unhinted
            });
        }
        prev = Some((s.t, s.h.clone()));
    }
}

fn parse_matcher(kind: Option<&str>, text: &str) -> Result<Option<Matcher>, String> {
    let text = text.trim();
    let unq = if text.len() >= 2
        && ((text.starts_with('"') && text.ends_with('"')) || (text.starts_with('`') && text.ends_with('`')))
    {
        &text[1..text.len() - 1]
    } else {
        text
    };
    Ok(match kind {
        None => None,
        Some("msg") => Some(Matcher::Msg(unq.to_string())),
        Some(_) => Some(Matcher::Regex(Regex::new(unq).map_err(|e| e.to_string())?)),
    })
}

fn eval_header_re() -> &'static (Regex, Regex) {
    static RE: std::sync::OnceLock<(Regex, Regex)> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        let i = Regex::new(r"^eval(?:_(fail|warn|ordered|info))?\s+instant\s+(?:at\s+(.+?))?\s+(.+)$");
        let r = Regex::new(r"^eval(?:_(fail|warn|info))?\s+range\s+from\s+(.+?)\s+to\s+(.+?)\s+step\s+(.+?)\s+(.+)$");
        match (i, r) {
            (Ok(i), Ok(r)) => (i, r),
            _ => panic!("bad header regex"),
        }
    })
}

/// Names a feature the query needs and Cairn lacks, if any.
fn needs_feature(state: &State, query: &str) -> Option<String> {
    static EXPERIMENTAL_FUNCTION: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let exp_fn = EXPERIMENTAL_FUNCTION
        .get_or_init(|| Regex::new(r"\b(integral|start_timestamp)\s*\(").unwrap_or_else(|e| panic!("{e}")));
    if let Some(m) = exp_fn.captures(query) {
        return Some(format!("promql-experimental-functions ({})", &m[1]));
    }
    if state.start_timestamps {
        return Some("start-timestamps (@st series)".into());
    }
    None
}

fn eval(engine: &Engine, state: &State, header: &str, body: &[(usize, &str)]) -> (String, Outcome) {
    let (ire, rre) = eval_header_re();
    let mut exp = Expect::default();
    enum Kind {
        Instant(i64),
        Range(i64, i64, i64),
    }
    let (old, kind, query) = if let Some(c) = ire.captures(header) {
        let t = c.get(2).map(|m| m.as_str()).unwrap_or("0");
        let Some(t) = parse_dur(t) else {
            return (header.to_string(), Outcome::Fail(format!("bad time in {header:?}")));
        };
        (
            c.get(1).map(|m| m.as_str().to_string()),
            Kind::Instant(t),
            c[3].to_string(),
        )
    } else if let Some(c) = rre.captures(header) {
        let (Some(a), Some(b), Some(s)) = (parse_dur(&c[2]), parse_dur(&c[3]), parse_dur(&c[4])) else {
            return (header.to_string(), Outcome::Fail(format!("bad range in {header:?}")));
        };
        (
            c.get(1).map(|m| m.as_str().to_string()),
            Kind::Range(a, b, s),
            c[5].to_string(),
        )
    } else {
        return (
            header.to_string(),
            Outcome::Fail(format!("cannot parse eval header {header:?}")),
        );
    };
    match old.as_deref() {
        Some("fail") => exp.fail = Some(None),
        Some("warn") => exp.warn.push(None),
        Some("info") => exp.info.push(None),
        Some("ordered") => exp.ordered = true,
        _ => {}
    }
    let expect_re = Regex::new(r"^expect\s+(fail|warn|info|no_warn|no_info|ordered)(?:\s+(msg|regex):(.*))?$")
        .unwrap_or_else(|e| panic!("{e}"));
    let rv_re = Regex::new(r"^\s*from\s+(\S+)\s+to\s+(\S+)\s+step\s+(\S+)").unwrap_or_else(|e| panic!("{e}"));
    for &(_, line) in body {
        let parsed: Result<(), String> = (|| {
            if let Some(c) = expect_re.captures(line) {
                let m = parse_matcher(c.get(2).map(|m| m.as_str()), c.get(3).map(|m| m.as_str()).unwrap_or(""))?;
                match &c[1] {
                    "fail" => exp.fail = Some(m),
                    "warn" => exp.warn.push(m),
                    "info" => exp.info.push(m),
                    "no_warn" => exp.no_warn = true,
                    "no_info" => exp.no_info = true,
                    _ => exp.ordered = true,
                }
            } else if let Some(rest) = line.strip_prefix("expect string") {
                let r = rest.trim();
                exp.string = Some(r.get(1..r.len().saturating_sub(1)).unwrap_or("").to_string());
            } else if let Some(rest) = line.strip_prefix("expect range vector") {
                let c = rv_re.captures(rest).ok_or("bad expect range vector")?;
                let p = |s: &str| parse_dur(s).ok_or_else(|| format!("bad duration {s}"));
                exp.range_vector = Some((p(&c[1])?, p(&c[2])?, p(&c[3])?));
            } else if let Some(m) = line.strip_prefix("expected_fail_message") {
                exp.fail = Some(Some(Matcher::Msg(m.trim().to_string())));
            } else if let Some(m) = line.strip_prefix("expected_fail_regexp") {
                exp.fail = Some(Some(Matcher::Regex(Regex::new(m.trim()).map_err(|e| e.to_string())?)));
            } else if let Ok(pts) = parse_points(line)
                && let [Some(Point::Float(v))] = pts[..]
            {
                exp.scalar = Some(v);
            } else {
                let (labels, rest) = parse_series(line)?;
                exp.series.push((labels, parse_points(&rest)?));
            }
            Ok(())
        })();
        if let Err(e) = parsed {
            return (query, Outcome::Fail(format!("bad expectation {line:?}: {e}")));
        }
    }
    if let Some(f) = needs_feature(state, &query) {
        return (query, Outcome::Skip(f));
    }
    let res = match kind {
        Kind::Instant(t) => engine.instant(state.storage.as_ref(), &query, t),
        Kind::Range(a, b, s) => engine.range(state.storage.as_ref(), &query, a, b, s),
    };
    let outcome = check(&exp, &kind_range(&kind), res);
    fn kind_range(k: &Kind) -> Option<(i64, i64, i64)> {
        match k {
            Kind::Instant(_) => None,
            Kind::Range(a, b, s) => Some((*a, *b, *s)),
        }
    }
    (query, outcome)
}

fn almost_equal(a: f64, b: f64) -> bool {
    const EPS: f64 = 0.000001;
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;
    if a.is_nan() && b.is_nan() {
        return true;
    }
    if a == b {
        return true;
    }
    let abs_sum = a.abs() + b.abs();
    let diff = (a - b).abs();
    if a == 0.0 || b == 0.0 || abs_sum < MIN_NORMAL {
        return diff < EPS * MIN_NORMAL;
    }
    diff / abs_sum.min(f64::MAX) < EPS
}

/// An annotation as Prometheus' test scripts state it: without the
/// ` (line:column)` the API appends.
fn without_position(a: &str) -> &str {
    let Some(open) = a.strip_suffix(')').and_then(|s| s.rfind(" (")) else {
        return a;
    };
    let pos = &a[open + 2..a.len() - 1];
    match pos.split_once(':') {
        Some((l, c)) if !l.is_empty() && !c.is_empty() && (l.to_owned() + c).bytes().all(|b| b.is_ascii_digit()) => {
            &a[..open]
        }
        _ => a,
    }
}

fn check_annos(kind: &str, got: &[String], want: &[Option<Matcher>], none: bool) -> Result<(), String> {
    let got: Vec<&str> = got.iter().map(|g| without_position(g)).collect();
    if none && !got.is_empty() {
        return Err(format!("expected no {kind} annotations, got {got:?}"));
    }
    if want.is_empty() {
        return Ok(());
    }
    for w in want {
        let ok = match w {
            None => !got.is_empty(),
            Some(m) => got.iter().any(|g| m.matches(g)),
        };
        if !ok {
            return Err(format!("expected {kind} annotation {w:?}, got {got:?}"));
        }
    }
    for g in got {
        if !want.iter().any(|w| w.as_ref().is_none_or(|m| m.matches(g))) {
            return Err(format!("unexpected {kind} annotation {g:?}"));
        }
    }
    Ok(())
}

fn check(exp: &Expect, range: &Option<(i64, i64, i64)>, res: Result<QueryResult, QueryError>) -> Outcome {
    let res = match (res, &exp.fail) {
        (Ok(_), Some(_)) => return Outcome::Fail("expected the query to fail, it succeeded".into()),
        (Err(e), Some(m)) => {
            let msg = e.to_string();
            return match m {
                Some(m) if !m.matches(&msg) => Outcome::Fail(format!("error {msg:?} does not match {m:?}")),
                _ => Outcome::Pass,
            };
        }
        (Err(e), None) => return Outcome::Fail(format!("unexpected error: {e}")),
        (Ok(r), None) => r,
    };
    if let Err(e) = check_annos("warn", &res.warnings, &exp.warn, exp.no_warn) {
        return Outcome::Fail(e);
    }
    if let Err(e) = check_annos("info", &res.infos, &exp.info, exp.no_info) {
        return Outcome::Fail(e);
    }
    match compare(exp, range, &res.value) {
        Ok(()) => Outcome::Pass,
        Err(e) => Outcome::Fail(e),
    }
}

fn compare(exp: &Expect, range: &Option<(i64, i64, i64)>, got: &Value) -> Result<(), String> {
    match got {
        Value::Scalar { v, .. } => {
            let Some(want) = exp.scalar else {
                return Err(format!("got scalar {v}, expected {} series", exp.series.len()));
            };
            if !almost_equal(want, *v) {
                return Err(format!("expected scalar {want}, got {v}"));
            }
            Ok(())
        }
        Value::String { s, .. } => match &exp.string {
            Some(w) if w == s => Ok(()),
            w => Err(format!("expected string {w:?}, got {s:?}")),
        },
        Value::Vector(v) => {
            if exp.scalar.is_some() {
                return Err("expected a scalar, got a vector".into());
            }
            if v.len() != exp.series.len() {
                return Err(format!(
                    "expected {} samples, got {}: {}",
                    exp.series.len(),
                    v.len(),
                    v.iter()
                        .map(|s| format!("{} {:?}", s.metric, s.value))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            for (i, (labels, pts)) in exp.series.iter().enumerate() {
                let want = pts.first().cloned().flatten();
                let found = if exp.ordered {
                    v.get(i).filter(|s| &s.metric == labels)
                } else {
                    v.iter().find(|s| &s.metric == labels)
                };
                let Some(s) = found else {
                    return Err(format!("expected series {labels} not found (ordered: {})", exp.ordered));
                };
                if !want.as_ref().is_some_and(|w| point_matches(w, &s.value)) {
                    return Err(format!("{labels}: expected {want:?}, got {}", show(&s.value)));
                }
            }
            Ok(())
        }
        Value::Matrix(m) => {
            let (start, step) = match (range, exp.range_vector) {
                (Some((a, _, s)), _) => (*a, *s),
                (None, Some((a, _, s))) => (a, s),
                (None, None) if exp.series.is_empty() && m.is_empty() => return Ok(()),
                (None, None) => {
                    return Err("instant query returned a range vector without `expect range vector`".into());
                }
            };
            if m.len() != exp.series.len() {
                return Err(format!(
                    "expected {} series, got {}: {}",
                    exp.series.len(),
                    m.len(),
                    m.iter().map(|s| s.metric.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
            for (labels, pts) in &exp.series {
                let Some(s) = m.iter().find(|s| &s.metric == labels) else {
                    return Err(format!("expected series {labels} not found"));
                };
                let at = |i: usize| start + i as i64 * step;
                let want_floats: Vec<(i64, f64)> = pts
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| match v {
                        Some(Point::Float(v)) => Some((at(i), *v)),
                        _ => None,
                    })
                    .collect();
                let want_histograms: Vec<(i64, &Stated)> = pts
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| match v {
                        Some(Point::Histogram(h)) => Some((at(i), h)),
                        _ => None,
                    })
                    .collect();
                let ok = want_floats.len() == s.floats.len()
                    && want_floats
                        .iter()
                        .zip(&s.floats)
                        .all(|(w, g)| w.0 == g.t && almost_equal(w.1, g.v))
                    && want_histograms.len() == s.histograms.len()
                    && want_histograms
                        .iter()
                        .zip(&s.histograms)
                        .all(|(w, g)| w.0 == g.t && notation::histograms_match(w.1, &g.h, almost_equal));
                if !ok {
                    return Err(format!(
                        "{labels}: expected {want_floats:?} and {} histograms, got {:?} and {:?}",
                        want_histograms.len(),
                        s.floats.iter().map(|p| (p.t, p.v)).collect::<Vec<_>>(),
                        s.histograms
                            .iter()
                            .map(|p| (p.t, notation::describe(&p.h)))
                            .collect::<Vec<_>>()
                    ));
                }
            }
            Ok(())
        }
    }
}

fn point_matches(want: &Point, got: &SampleValue) -> bool {
    match (want, got) {
        (Point::Float(w), SampleValue::Float(g)) => almost_equal(*w, *g),
        (Point::Histogram(w), SampleValue::Histogram(g)) => notation::histograms_match(w, g, almost_equal),
        _ => false,
    }
}

fn show(v: &SampleValue) -> String {
    match v {
        SampleValue::Float(f) => f.to_string(),
        SampleValue::Histogram(h) => notation::describe(h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_expand() {
        assert_eq!(
            parse_points("1 2+3x2 _ _x2 4x1 1-1x1").unwrap(),
            [1.0, 2.0, 5.0, 8.0, f64::NAN, f64::NAN, f64::NAN, 4.0, 4.0, 1.0, 0.0]
                .into_iter()
                .map(|v| (!v.is_nan()).then_some(Point::Float(v)))
                .collect::<Points>()
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_dur("1h30m"), Some(5_400_000));
        assert_eq!(parse_dur("0"), Some(0));
        assert_eq!(parse_dur("100ms"), Some(100));
    }

    #[test]
    fn small_script() {
        let r = run_script(
            "load 1m\n  m{a=\"1\"} 0+1x10\n\neval instant at 5m m\n  m{a=\"1\"} 5\n\neval range from 0 to 2m step 1m m * 2\n  {a=\"1\"} 0 2 4\n",
        );
        assert!(r.iter().all(|r| r.outcome == Outcome::Pass), "{r:?}");
    }
}
