//! Classic histograms as native histograms with custom buckets (NHCB), as
//! Prometheus converts them when `convert_classic_histograms_to_nhcb` is
//! set: [`ClassicHistogram`] gathers one histogram's buckets, count and sum
//! and converts them; [`Sink`] finds the classic histograms in a text
//! body's stream of samples.

use std::sync::Arc;

use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, ResetHint};
use cairn_model::{Histogram, Label, Labels, METRIC_NAME};

use super::float::parse_go_float;
use super::{ParseOptions, ScrapedSample, ScrapedValue};
use crate::MetricType;

/// One classic histogram's parts, in any order.
#[derive(Debug, Default)]
pub(crate) struct ClassicHistogram {
    /// `(le, cumulative count)` as given.
    buckets: Vec<(f64, f64)>,
    count: Option<f64>,
    sum: f64,
    /// The first inconsistency; the histogram cannot be converted.
    error: Option<String>,
}

impl ClassicHistogram {
    /// Records a bucket. Buckets may come in any order; the first of two
    /// with the same bound wins. They are sorted and checked on conversion,
    /// so a body of many out-of-order buckets costs `n log n`, not `n²`.
    pub(crate) fn set_bucket(&mut self, le: f64, count: f64) {
        if self.error.is_some() {
            return;
        }
        if le.is_nan() {
            self.error = Some("bucket boundary must not be NaN".into());
            return;
        }
        if count < 0.0 {
            self.error = Some(format!("bucket count must be non-negative: le={le}, count={count}"));
            return;
        }
        self.buckets.push((le, count));
    }

    pub(crate) fn set_count(&mut self, count: f64) {
        if self.error.is_some() {
            return;
        }
        if count < 0.0 {
            self.error = Some(format!("count must be non-negative: count={count}"));
            return;
        }
        self.count = Some(count);
    }

    pub(crate) fn set_sum(&mut self, sum: f64) {
        if self.error.is_none() {
            self.sum = sum;
        }
    }

    /// The native histogram with custom buckets: one bucket per classic
    /// bucket (a `+Inf` one added if missing), empty ones left out.
    pub(crate) fn convert(mut self, gauge: bool) -> Result<Histogram, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        // Stable: of equal bounds, the first given stays first and is kept.
        self.buckets
            .sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        self.buckets.dedup_by(|later, first| later.0 == first.0);
        if self.buckets.windows(2).any(|w| matches!(w, [a, b] if b.1 < a.1)) {
            return Err("count is not cumulative".into());
        }
        let count = match (self.count, self.buckets.last()) {
            (Some(c), _) => c,
            (None, Some(b)) => b.1,
            (None, None) => 0.0,
        };
        if self.buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
            self.buckets.push((f64::INFINITY, count));
        }
        let last = self.buckets.last().map_or(0.0, |b| b.1);
        if count != last {
            return Err(format!("count mismatch: count={count} != le=+Inf count={last}"));
        }
        let bounds: Arc<[f64]> = self
            .buckets
            .iter()
            .map(|b| b.0)
            .filter(|le| *le != f64::INFINITY)
            .collect();
        let mut prev = 0.0;
        let mut positive = Vec::with_capacity(self.buckets.len());
        for (i, &(_, cumulative)) in self.buckets.iter().enumerate() {
            let idx = i32::try_from(i).map_err(|_| "too many buckets".to_string())?;
            positive.push((idx, cumulative - prev));
            prev = cumulative;
        }
        let mut h = Histogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            reset_hint: if gauge { ResetHint::Gauge } else { ResetHint::Unknown },
            count,
            sum: self.sum,
            positive,
            custom_bounds: Some(bounds),
            ..Histogram::default()
        };
        h.compact();
        h.validate().map_err(|e| e.to_string())?;
        Ok(h)
    }
}

/// Where the text parsers put their samples: straight into the list, or,
/// when classic histograms are converted, through the grouping Prometheus'
/// NHCB parser does. A histogram's `_bucket`, `_count` and `_sum` series
/// that follow its `# TYPE ... histogram` line, with the same labels but
/// `le`, make one NHCB sample, emitted when the group ends (another series,
/// any metadata or comment line, the end of the body). Its series are kept
/// only with `keep_classic_histograms`; one that cannot be converted is
/// dropped silently, as Prometheus drops it.
pub(crate) struct Sink {
    pub(crate) samples: Vec<ScrapedSample>,
    nhcb: Option<Nhcb>,
}

struct Nhcb {
    keep_classic: bool,
    /// The last `# TYPE` line's type and family.
    kind: MetricType,
    family: String,
    group: Option<Group>,
    /// The timestamp of the last sample read, which Prometheus gives the
    /// histogram it emits: the group's last one when metadata or the end
    /// of the body closes the group, the next series' when that does.
    last_timestamp_ms: Option<i64>,
}

struct Group {
    base_name: String,
    /// The labels but `__name__` and `le`, sorted.
    rest: Vec<Label>,
    /// Those given with an empty value: a series that gives one more or
    /// fewer is another series.
    empty: Vec<Label>,
    histogram: ClassicHistogram,
}

enum Suffix {
    Bucket,
    Count,
    Sum,
}

fn split_suffix(name: &str) -> Option<(Suffix, &str)> {
    if let Some(base) = name.strip_suffix("_bucket") {
        Some((Suffix::Bucket, base))
    } else if let Some(base) = name.strip_suffix("_sum") {
        Some((Suffix::Sum, base))
    } else {
        name.strip_suffix("_count").map(|base| (Suffix::Count, base))
    }
}

fn same_rest(labels: &Labels, rest: &[Label]) -> bool {
    let mut others = labels.iter().filter(|l| l.name != METRIC_NAME && l.name != "le");
    let mut want = rest.iter();
    loop {
        match (others.next(), want.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

impl Sink {
    /// A sink with room for `samples`.
    pub(crate) fn new(opts: &ParseOptions, samples: usize) -> Self {
        Self {
            samples: Vec::with_capacity(samples),
            nhcb: opts.convert_classic_histograms_to_nhcb.then(|| Nhcb {
                keep_classic: opts.keep_classic_histograms,
                kind: MetricType::Unknown,
                family: String::new(),
                group: None,
                last_timestamp_ms: None,
            }),
        }
    }

    /// A `HELP`, `UNIT` or comment line: ends a histogram being gathered.
    pub(crate) fn other_line(&mut self) {
        self.flush();
    }

    pub(crate) fn type_line(&mut self, family: &str, kind: MetricType) {
        self.flush();
        if let Some(n) = &mut self.nhcb {
            n.kind = kind;
            family.clone_into(&mut n.family);
        }
    }

    pub(crate) fn push(&mut self, sample: ScrapedSample) {
        let Some(n) = &mut self.nhcb else {
            self.samples.push(sample);
            return;
        };
        n.last_timestamp_ms = sample.timestamp_ms;
        let name = sample.labels.metric_name().unwrap_or_default();
        let continues = n.kind == MetricType::Histogram
            && n.group.as_ref().is_some_and(|g| {
                split_suffix(name).is_some_and(|(_, base)| base == g.base_name)
                    && same_rest(&sample.labels, &g.rest)
                    && sample.empty_labels == g.empty
            });
        if !continues {
            self.flush();
        }
        let Some(n) = &mut self.nhcb else {
            return;
        };
        let value = match sample.value {
            ScrapedValue::Float(v) => v,
            ScrapedValue::Histogram(_) => f64::NAN,
        };
        let classic = n.kind == MetricType::Histogram
            && match split_suffix(name) {
                Some((suffix, base)) if base == n.family => {
                    let le = sample.labels.get("le").map(parse_go_float);
                    let part = match suffix {
                        Suffix::Bucket => match le {
                            Some(Ok(le)) if !le.is_nan() => Some(Some(le)),
                            _ => None,
                        },
                        Suffix::Count | Suffix::Sum => Some(None),
                    };
                    match part {
                        Some(le) => {
                            let group = n.group.get_or_insert_with(|| Group {
                                base_name: base.to_string(),
                                rest: sample
                                    .labels
                                    .iter()
                                    .filter(|l| l.name != METRIC_NAME && l.name != "le")
                                    .cloned()
                                    .collect(),
                                empty: sample.empty_labels.clone(),
                                histogram: ClassicHistogram::default(),
                            });
                            match (suffix, le) {
                                (Suffix::Bucket, Some(le)) => group.histogram.set_bucket(le, value),
                                (Suffix::Count, _) => group.histogram.set_count(value),
                                _ => group.histogram.set_sum(value),
                            }
                            true
                        }
                        None => false,
                    }
                }
                _ => false,
            };
        if !classic || n.keep_classic {
            self.samples.push(sample);
        }
    }

    /// Emits the histogram being gathered, if it converts.
    fn flush(&mut self) {
        let Some(n) = self.nhcb.as_mut() else {
            return;
        };
        let timestamp_ms = n.last_timestamp_ms;
        let Some(group) = n.group.take() else {
            return;
        };
        let Ok(h) = group.histogram.convert(false) else {
            return;
        };
        let mut labels = group.rest;
        labels.push(Label::new(METRIC_NAME, group.base_name));
        let Ok(labels) = Labels::new(labels) else {
            return;
        };
        self.samples.push(ScrapedSample {
            labels,
            empty_labels: group.empty,
            timestamp_ms,
            value: ScrapedValue::Histogram(Box::new(h)),
            spelling: None,
            encoded: None,
        });
    }

    pub(crate) fn finish(mut self) -> Vec<ScrapedSample> {
        self.flush();
        self.samples
    }
}

#[cfg(test)]
mod tests;
