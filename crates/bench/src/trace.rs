//! Parses a recorded node_exporter trace (see `/work/shared/benchdata/README.md`):
//! gzip'd text, each scrape introduced by
//! `# PEERBENCH_SCRAPE ts_ms=<unix ms> seq=<n> dur_ms=<d>` and followed by the
//! exporter's exposition output verbatim.
//!
//! The result is a dense matrix: the series of the first scrape, and for each
//! scrape one value per series (a series missing from a later scrape keeps
//! its previous value). `# TYPE` lines say which series are cumulative.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context, bail};
use cairn_model::{Label, Labels};

/// Marker line that starts each scrape of a trace.
pub const MARKER: &str = "# PEERBENCH_SCRAPE";

/// The node_exporter trace embedded in the binary (see [`Trace::embedded`]).
pub const EMBEDDED_TRACE_ZST: &[u8] = include_bytes!("../data/node-exporter-trace.prom.zst");

/// One series of the trace.
#[derive(Debug, Clone)]
pub struct TraceSeries {
    /// Canonical labels, `__name__` included, no `instance`/`job`.
    pub labels: Labels,
    /// Cumulative (counter, or a summary/histogram `_sum`/`_count`/`_bucket`):
    /// must never decrease when the trace is replayed.
    pub monotonic: bool,
    /// The most decimal places any recorded value had, so replayed sums of
    /// increments can be rounded back to the exporter's precision instead of
    /// carrying float noise that real data does not have.
    pub decimals: Option<u32>,
}

/// A parsed trace: `values[scrape][series]`.
#[derive(Debug, Clone)]
pub struct Trace {
    pub series: Vec<TraceSeries>,
    pub values: Vec<Vec<f64>>,
    /// Recorded scrape timestamps (ms), for reference only.
    pub recorded_ts: Vec<i64>,
}

impl Trace {
    /// Reads a trace file compressed with gzip (as recorded) or zstd (as
    /// embedded), told apart by their magic bytes.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let bytes = std::fs::read(path).with_context(|| format!("open {}", path.display()))?;
        Self::from_compressed(&bytes).with_context(|| format!("parse {}", path.display()))
    }

    /// The trace shipped inside the binary (the 600-scrape node_exporter
    /// recording of `/work/shared/benchdata`, 34.7 MB of text: 5.5 MB as
    /// gzip, 0.33 MB as `zstd -19 --long=27`, since consecutive scrapes are
    /// near-identical and a long window finds them).
    pub fn embedded() -> anyhow::Result<Self> {
        Self::from_compressed(EMBEDDED_TRACE_ZST).context("embedded trace")
    }

    /// Parses gzip'd or zstd'd trace bytes.
    pub fn from_compressed(bytes: &[u8]) -> anyhow::Result<Self> {
        match bytes {
            [0x1f, 0x8b, ..] => Self::parse(flate2::read::GzDecoder::new(bytes)),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => {
                let mut d = zstd::stream::read::Decoder::new(bytes)?;
                d.window_log_max(31)?;
                Self::parse(d)
            }
            _ => Self::parse(bytes),
        }
    }

    pub fn scrapes(&self) -> usize {
        self.values.len()
    }

    pub fn series_count(&self) -> usize {
        self.series.len()
    }

    /// Parses uncompressed trace text.
    pub fn parse(r: impl Read) -> anyhow::Result<Self> {
        let mut types: HashMap<String, String> = HashMap::new();
        let mut index: HashMap<Labels, usize> = HashMap::new();
        let mut series: Vec<TraceSeries> = Vec::new();
        let mut values: Vec<Vec<f64>> = Vec::new();
        let mut recorded_ts = Vec::new();
        for (lineno, line) in BufReader::new(r).lines().enumerate() {
            let line = line?;
            let line = line.trim_end();
            if let Some(rest) = line.strip_prefix(MARKER) {
                let ts = rest
                    .split_whitespace()
                    .find_map(|kv| kv.strip_prefix("ts_ms="))
                    .and_then(|v| v.parse::<i64>().ok())
                    .with_context(|| format!("line {}: marker without ts_ms", lineno + 1))?;
                recorded_ts.push(ts);
                // A new scrape starts from the previous one's values.
                let prev = values.last().cloned().unwrap_or_default();
                values.push(prev);
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let mut it = rest.split_whitespace();
                if let (Some(name), Some(kind)) = (it.next(), it.next()) {
                    types.insert(name.to_string(), kind.to_string());
                }
                continue;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some(current) = values.last_mut() else {
                bail!("line {}: sample before the first scrape marker", lineno + 1);
            };
            let (labels, value_text) =
                parse_sample_line(line).with_context(|| format!("line {}: {line:?}", lineno + 1))?;
            let value = parse_value(value_text).with_context(|| format!("line {}: bad value", lineno + 1))?;
            let decimals = decimal_places(value_text);
            let i = match index.get(&labels) {
                Some(&i) => i,
                None => {
                    if recorded_ts.len() > 1 {
                        // A series born mid-trace would have no history; the
                        // fleet needs a fixed series set. Skip it.
                        continue;
                    }
                    let name = labels.metric_name().unwrap_or_default().to_string();
                    let monotonic = is_monotonic(&name, &types);
                    index.insert(labels.clone(), series.len());
                    series.push(TraceSeries {
                        labels,
                        monotonic,
                        decimals: Some(0),
                    });
                    current.push(0.0);
                    series.len() - 1
                }
            };
            if let Some(v) = current.get_mut(i) {
                *v = value;
            }
            if let Some(s) = series.get_mut(i) {
                s.decimals = match (s.decimals, decimals) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
        }
        if values.is_empty() || series.is_empty() {
            bail!("trace has no scrapes");
        }
        Ok(Self {
            series,
            values,
            recorded_ts,
        })
    }
}

/// Counters and the cumulative parts of summaries and histograms.
fn is_monotonic(name: &str, types: &HashMap<String, String>) -> bool {
    if types.get(name).is_some_and(|t| t == "counter") {
        return true;
    }
    for suffix in ["_sum", "_count", "_bucket"] {
        if let Some(base) = name.strip_suffix(suffix)
            && types.get(base).is_some_and(|t| t == "summary" || t == "histogram")
        {
            return true;
        }
    }
    false
}

fn parse_value(s: &str) -> anyhow::Result<f64> {
    Ok(match s {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        _ => s.parse::<f64>()?,
    })
}

/// Decimal places of a value as written, `None` when not meaningful (NaN,
/// Inf, or too many to round safely).
fn decimal_places(s: &str) -> Option<u32> {
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let frac = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i32);
    if mantissa.chars().any(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let d = (frac - exp).max(0);
    (d <= 12).then_some(d as u32)
}

/// Splits `name{a="b",...} value [timestamp]` into labels and value text.
pub fn parse_sample_line(line: &str) -> anyhow::Result<(Labels, &str)> {
    let name_end = line.find(['{', ' ', '\t']).context("no value")?;
    let name = &line[..name_end];
    let mut labels = vec![Label::new(cairn_model::METRIC_NAME, name)];
    let mut rest = &line[name_end..];
    if let Some(body) = rest.strip_prefix('{') {
        let mut s = body;
        loop {
            s = s.trim_start_matches([',', ' ']);
            if let Some(after) = s.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = s.find('=').context("label without '='")?;
            let lname = s[..eq].trim();
            s = s[eq + 1..]
                .trim_start()
                .strip_prefix('"')
                .context("label value not quoted")?;
            let mut value = String::new();
            let mut chars = s.char_indices();
            let end = loop {
                match chars.next() {
                    Some((i, '"')) => break i,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c)) => value.push(c),
                        None => bail!("dangling escape"),
                    },
                    Some((_, c)) => value.push(c),
                    None => bail!("unterminated label value"),
                }
            };
            labels.push(Label::new(lname, value));
            s = &s[end + 1..];
        }
    }
    let value = rest.split_whitespace().next().context("no value")?;
    Ok((Labels::new(labels)?, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "\
# PEERBENCH_SCRAPE ts_ms=1000 seq=0 dur_ms=1
# TYPE c counter
c{a=\"x\"} 10
# TYPE g gauge
g{v=\"q \\\"quoted\\\", comma\"} 1.5
# TYPE s summary
s{quantile=\"0.5\"} 3e-05
s_sum 0.25
s_count 2
# PEERBENCH_SCRAPE ts_ms=2000 seq=1 dur_ms=1
c{a=\"x\"} 12
g{v=\"q \\\"quoted\\\", comma\"} 1.25
s{quantile=\"0.5\"} 3e-05
s_sum 0.5
s_count 3
";

    #[test]
    fn parses_small_trace() {
        let t = Trace::parse(SMALL.as_bytes()).unwrap();
        assert_eq!(t.scrapes(), 2);
        assert_eq!(t.series_count(), 5);
        let mono: Vec<bool> = t.series.iter().map(|s| s.monotonic).collect();
        assert_eq!(mono, [true, false, false, true, true]);
        assert_eq!(t.series[1].labels.get("v"), Some("q \"quoted\", comma"));
        assert_eq!(t.values[1], [12.0, 1.25, 3e-05, 0.5, 3.0]);
        assert_eq!(t.series[1].decimals, Some(2));
        assert_eq!(t.series[2].decimals, Some(5));
    }

    #[test]
    fn decimal_places_of_exposition_values() {
        assert_eq!(decimal_places("12"), Some(0));
        assert_eq!(decimal_places("12.345"), Some(3));
        assert_eq!(decimal_places("3.365296e+06"), Some(0));
        assert_eq!(decimal_places("1.8177e-05"), Some(9));
        assert_eq!(decimal_places("NaN"), None);
    }

    #[test]
    fn embedded_trace_is_the_recorded_one() {
        let t = Trace::embedded().unwrap();
        assert_eq!(t.scrapes(), 600);
        assert_eq!(t.series_count(), 507);
        let path = Path::new(crate::DEFAULT_TRACE);
        if path.exists() {
            let g = Trace::load(path).unwrap();
            assert_eq!(g.recorded_ts, t.recorded_ts);
            assert_eq!(g.series.len(), t.series.len());
        }
    }

    #[test]
    fn real_trace_has_507_series_per_scrape() {
        let path = Path::new(crate::DEFAULT_TRACE);
        if !path.exists() {
            eprintln!("skipping: {} not present", path.display());
            return;
        }
        let t = Trace::load(path).unwrap();
        assert_eq!(t.scrapes(), 600);
        assert_eq!(t.series_count(), 507);
        assert!(t.series.iter().filter(|s| s.monotonic).count() >= 145);
    }
}
