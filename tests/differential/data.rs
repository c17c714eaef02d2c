//! The data both servers get: a node_exporter fleet replayed from the recorded
//! trace, with two targets going down (stale markers, as Prometheus writes
//! them when a scrape fails), plus synthetic series for what the trace lacks:
//! counter resets, gaps longer than the lookback, stale markers in the middle
//! of a series, NaN samples, negative gauges, several scrape intervals, classic
//! histograms and a label value with a newline.
//!
//! Every sample lies at `.250` s and every evaluation time at `.500` s (see
//! the `left-open-range` exception): no sample can sit on a range or lookback
//! boundary, where Prometheus 2.42 (closed) and 3 (left-open) differ.

use std::sync::Arc;

use cairn_bench::fleet::{Fleet, FleetConfig, mix};
use cairn_bench::trace::Trace;
use cairn_model::{Labels, Sample, stale_nan};
use cairn_protocols::SeriesSamples;

/// The fleet's scrape interval.
pub const INTERVAL_MS: i64 = 15_000;
/// How much data is written, ending at `Dataset::end_ms`.
pub const SPAN_MS: i64 = 2 * 3_600_000;
/// Millisecond phase of every sample within its second.
pub const SAMPLE_PHASE_MS: i64 = 250;
const TARGETS: usize = 4;
const SCRAPES: u64 = (SPAN_MS / INTERVAL_MS) as u64;
/// Remote-write requests cover this much time each, written in time order
/// (Prometheus' head takes only in-order samples).
const WINDOW_MS: i64 = 5 * 60_000;

pub struct Dataset {
    /// Whole seconds; the first scrape lies just after this.
    pub start_ms: i64,
    /// Whole seconds; no sample lies after this.
    pub end_ms: i64,
    pub series: Vec<SeriesSamples>,
}

impl Dataset {
    pub fn samples(&self) -> usize {
        self.series.iter().map(|s| s.samples.len()).sum()
    }

    /// The data cut into requests in time order: each holds every series'
    /// samples of one window.
    pub fn requests(&self) -> Vec<Vec<SeriesSamples>> {
        let mut out = Vec::new();
        let mut w = self.start_ms;
        while w <= self.end_ms {
            let batch: Vec<SeriesSamples> = self
                .series
                .iter()
                .filter_map(|s| {
                    let a = s.samples.partition_point(|x| x.t < w);
                    let b = s.samples.partition_point(|x| x.t < w + WINDOW_MS);
                    (a < b).then(|| SeriesSamples::new(s.labels.clone(), s.samples[a..b].to_vec()))
                })
                .collect();
            if !batch.is_empty() {
                out.push(batch);
            }
            w += WINDOW_MS;
        }
        out
    }
}

/// Moves a timestamp to `.250` within its second.
fn restamp(t: i64) -> i64 {
    t.div_euclid(1000) * 1000 + SAMPLE_PHASE_MS
}

/// Builds the data set ending a little before `now_ms`.
pub fn build(trace: Arc<Trace>, now_ms: i64) -> Dataset {
    let end_ms = (now_ms / 1000) * 1000 - 60_000;
    let start_ms = end_ms - SPAN_MS;
    let mut series = fleet(trace, start_ms, end_ms);
    series.extend(synthetic(start_ms, end_ms));
    Dataset {
        start_ms,
        end_ms,
        series,
    }
}

/// Scrape `k` of a target that is down for `down` scrapes: `None` while down,
/// the stale marker at the first missed scrape.
enum Scrape {
    Up,
    Stale,
    Down,
}

fn target_state(t: usize, k: u64) -> Scrape {
    // Target 1 is down for 10 minutes in the middle; target 3 for the last 10.
    let outage = match t {
        1 => Some((200, 240)),
        3 => Some((SCRAPES - 40, SCRAPES)),
        _ => None,
    };
    match outage {
        Some((a, _)) if k == a => Scrape::Stale,
        Some((a, b)) if k > a && k < b => Scrape::Down,
        _ => Scrape::Up,
    }
}

fn fleet(trace: Arc<Trace>, start_ms: i64, end_ms: i64) -> Vec<SeriesSamples> {
    let fleet = Fleet::new(
        trace,
        FleetConfig {
            targets: TARGETS,
            start_ms,
            interval_ms: INTERVAL_MS,
            jitter_ms: 0,
            job: "node".into(),
            seed: 7,
        },
    );
    let mut out = Vec::new();
    for t in 0..TARGETS {
        let labels = fleet.target_labels(t);
        let all = fleet.samples(t, &labels, 0, SCRAPES);
        for mut s in all {
            let mut kept = Vec::with_capacity(s.samples.len());
            for (k, x) in s.samples.iter().enumerate() {
                let ts = restamp(x.t);
                if ts > end_ms {
                    break;
                }
                match target_state(t, k as u64) {
                    Scrape::Up => kept.push(Sample::new(ts, x.v)),
                    Scrape::Stale => kept.push(Sample::new(ts, stale_nan())),
                    Scrape::Down => {}
                }
            }
            s.samples = kept;
            out.push(s);
        }
    }
    out
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied())
}

/// A deterministic value in `0..n` for (seed, i).
fn rnd(seed: u64, i: u64, n: u64) -> u64 {
    mix(seed.wrapping_mul(0x9E37_79B9) ^ i) % n
}

/// Samples every `every_ms` from `start_ms` to `end_ms`, value from `f(k)`
/// (`None` skips the sample).
fn regular(start_ms: i64, end_ms: i64, every_ms: i64, mut f: impl FnMut(u64) -> Option<f64>) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut k = 0u64;
    let mut t = start_ms + SAMPLE_PHASE_MS;
    while t <= end_ms {
        if let Some(v) = f(k) {
            out.push(Sample::new(t, v));
        }
        k += 1;
        t += every_ms;
    }
    out
}

fn synthetic(start_ms: i64, end_ms: i64) -> Vec<SeriesSamples> {
    let mut out = Vec::new();
    let mut push = |l: Labels, s: Vec<Sample>| out.push(SeriesSamples::new(l, s));
    let job = "synthetic";

    // Counters with resets at different periods, increments with one decimal.
    for (i, code) in ["200", "404", "500", "503"].iter().enumerate() {
        let period = 97 + 13 * i as u64;
        let mut v = 0.0;
        let s = regular(start_ms, end_ms, INTERVAL_MS, |k| {
            if k > 0 && k % period == 0 {
                v = (rnd(11, k, 50) as f64) / 10.0;
            } else {
                v += (rnd(i as u64, k, 300) as f64) / 10.0;
                v = (v * 10.0).round() / 10.0;
            }
            Some(v)
        });
        push(
            labels(&[
                ("__name__", "syn_requests_total"),
                ("job", job),
                ("instance", "syn-0"),
                ("code", code),
            ]),
            s,
        );
    }
    // A counter with a 2-minute and a 10-minute gap (longer than the lookback).
    let mut v = 100.0;
    push(
        labels(&[("__name__", "syn_gap_total"), ("job", job), ("instance", "syn-0")]),
        regular(start_ms, end_ms, INTERVAL_MS, |k| {
            v += rnd(3, k, 20) as f64;
            (!((100..108).contains(&k) || (300..340).contains(&k))).then_some(v)
        }),
    );
    // A gauge marked stale for 5 minutes, then resumed; one that ends early.
    push(
        labels(&[("__name__", "syn_stale_gauge"), ("job", job), ("instance", "syn-0")]),
        regular(start_ms, end_ms, INTERVAL_MS, |k| match k {
            150 => Some(stale_nan()),
            151..170 => None,
            _ => Some((rnd(4, k, 1000) as f64) - 500.0),
        }),
    );
    push(
        labels(&[("__name__", "syn_stale_gauge"), ("job", job), ("instance", "syn-1")]),
        regular(start_ms, end_ms, INTERVAL_MS, |k| match k {
            0..400 => Some(rnd(5, k, 100) as f64 / 4.0),
            400 => Some(stale_nan()),
            _ => None,
        }),
    );
    // Gauges: a wave with negative values, one with NaN samples, and one at
    // each of three scrape intervals.
    for (i, inst) in ["syn-0", "syn-1", "syn-2"].iter().enumerate() {
        push(
            labels(&[("__name__", "syn_gauge"), ("job", job), ("instance", inst)]),
            regular(start_ms, end_ms, INTERVAL_MS, |k| {
                let x = (k as f64 / 20.0 + i as f64).sin() * 100.0 - 20.0 + rnd(6 + i as u64, k, 10) as f64;
                Some((x * 100.0).round() / 100.0)
            }),
        );
    }
    push(
        labels(&[("__name__", "syn_nan_gauge"), ("job", job), ("instance", "syn-0")]),
        regular(start_ms, end_ms, INTERVAL_MS, |k| {
            Some(if k % 37 == 5 { f64::NAN } else { rnd(8, k, 500) as f64 })
        }),
    );
    for (name, every) in [("syn_fast_total", 5_000), ("syn_slow_total", 60_000)] {
        let mut v = 0.0;
        push(
            labels(&[("__name__", name), ("job", job), ("instance", "syn-0")]),
            regular(start_ms, end_ms, every, |k| {
                v += rnd(9, k, 7) as f64;
                Some(v)
            }),
        );
    }
    // Classic histograms for two paths; /b resets in the middle.
    let bounds = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "+Inf"];
    for (p, path) in ["/a", "/b"].iter().enumerate() {
        let mut cum = [0.0f64; 7];
        let mut sum = 0.0f64;
        let mut rows: Vec<(i64, [f64; 7], f64)> = Vec::new();
        let mut t = start_ms + SAMPLE_PHASE_MS;
        let mut k = 0u64;
        while t <= end_ms {
            if p == 1 && k == 250 {
                cum = [0.0; 7];
                sum = 0.0;
            }
            let n = rnd(20 + p as u64, k, 40);
            for j in 0..n {
                let b = rnd(30 + p as u64, k * 64 + j, 7) as usize;
                for c in cum.iter_mut().skip(b) {
                    *c += 1.0;
                }
                sum += [0.03, 0.07, 0.2, 0.4, 0.8, 2.0, 4.0][b];
            }
            sum = (sum * 1000.0).round() / 1000.0;
            rows.push((t, cum, sum));
            k += 1;
            t += INTERVAL_MS;
        }
        for (b, le) in bounds.iter().enumerate() {
            push(
                labels(&[
                    ("__name__", "syn_request_duration_seconds_bucket"),
                    ("job", job),
                    ("instance", "syn-0"),
                    ("path", path),
                    ("le", le),
                ]),
                rows.iter().map(|r| Sample::new(r.0, r.1[b])).collect(),
            );
        }
        push(
            labels(&[
                ("__name__", "syn_request_duration_seconds_sum"),
                ("job", job),
                ("instance", "syn-0"),
                ("path", path),
            ]),
            rows.iter().map(|r| Sample::new(r.0, r.2)).collect(),
        );
        push(
            labels(&[
                ("__name__", "syn_request_duration_seconds_count"),
                ("job", job),
                ("instance", "syn-0"),
                ("path", path),
            ]),
            rows.iter().map(|r| Sample::new(r.0, r.1[6])).collect(),
        );
    }
    // Info-style series for joins, and a label value with a newline.
    for (inst, version) in [("syn-0", "1.2.3"), ("syn-1", "1.3.0"), ("syn-2", "2.0.0-rc.1")] {
        push(
            labels(&[
                ("__name__", "syn_build_info"),
                ("job", job),
                ("instance", inst),
                ("version", version),
            ]),
            regular(start_ms, end_ms, INTERVAL_MS, |_| Some(1.0)),
        );
    }
    push(
        labels(&[
            ("__name__", "syn_text_info"),
            ("job", job),
            ("instance", "syn-0"),
            ("text", "line1\nline2"),
        ]),
        regular(start_ms, end_ms, INTERVAL_MS, |_| Some(1.0)),
    );
    push(
        labels(&[
            ("__name__", "syn_text_info"),
            ("job", job),
            ("instance", "syn-1"),
            ("text", "line1 line2"),
        ]),
        regular(start_ms, end_ms, INTERVAL_MS, |_| Some(2.0)),
    );
    out
}
