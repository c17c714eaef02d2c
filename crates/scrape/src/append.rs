//! Appending one scrape to storage, as Prometheus' scrape loop does: cached
//! label sets, target labels (honor_labels or `exported_`), metric
//! relabelling, limits that fail the whole scrape, duplicates, staleness
//! markers for series that disappeared, and the report series.

use std::sync::Arc;

use cairn_model::{EncodedLabels, HistogramSample, Label, Labels, Sample, SharedEncodedLabels, stale_nan};
use cairn_storage::Appender;

use crate::cache::{ScrapeCache, SeriesKey, exposed_key};
use crate::exposition::ParsedBody;
use crate::settings::JobSettings;
use cairn_protocols::exposition::{ScrapedSample, ScrapedValue};

/// Samples further than this in the future are refused (not stored, not an error).
const MAX_AHEAD_MS: i64 = 10 * 60 * 1000;

const EXPORTED_PREFIX: &str = "exported_";

/// What one append stored, for the report series.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AppendCounts {
    /// Samples in the body.
    pub total: usize,
    /// Samples left after metric relabelling (duplicates included).
    pub added: usize,
    /// Series new to the cache in this scrape.
    pub series_added: usize,
    /// Samples refused as a second value of a series at one time.
    pub duplicates: usize,
    /// Samples refused for being too far in the future.
    pub out_of_bounds: usize,
    pub sample_limit_hit: bool,
    pub bucket_limit_hit: bool,
    pub label_limit_hit: bool,
}

/// The label set a scraped series is stored under, or `None` when metric
/// relabelling drops it. `exposed_empty` are labels the sample gave with an
/// empty value: with `honor_labels` they win over the target's like any
/// exposed label, and then vanish as empty labels do. Without it an empty
/// exposed value is no conflict.
pub(crate) fn sample_labels(
    exposed: Labels,
    exposed_empty: &[Label],
    target: &Labels,
    job: &JobSettings,
) -> Option<Labels> {
    // The target's label names are distinct, so what `lb` holds under one
    // of them before it is set is what the sample exposed.
    let mut lb = exposed;
    if job.honor_labels {
        for l in target.iter() {
            let is_exposed = lb.get(&l.name).is_some() || exposed_empty.iter().any(|e| e.name == l.name);
            if !is_exposed {
                lb.set(&l.name, &l.value);
            }
        }
    } else {
        let mut conflicts: Vec<Label> = Vec::new();
        for l in target.iter() {
            if let Some(existing) = lb.get(&l.name) {
                conflicts.push(Label::new(l.name.as_str(), existing));
            }
            lb.set(&l.name, &l.value);
        }
        // Shorter names first, so `exported_x` of one conflict cannot take the
        // place of another's.
        conflicts.sort_by_key(|l| l.name.len());
        for l in conflicts {
            let mut name = l.name.to_string();
            loop {
                name = format!("{EXPORTED_PREFIX}{name}");
                if lb.get(&name).is_none() {
                    lb.set(&name, &l.value);
                    break;
                }
            }
        }
    }
    job.metric_relabel.apply(lb)
}

/// The labels a sample exposed with an empty value that change where it is
/// stored: with `honor_labels`, those the target also has. Allocates only
/// when there are some.
fn honoured_empty_labels(exposed_empty: &[Label], target: &Labels, job: &JobSettings) -> Vec<Label> {
    if !job.honor_labels || exposed_empty.is_empty() {
        return Vec::new();
    }
    exposed_empty
        .iter()
        .filter(|l| target.get(&l.name).is_some())
        .cloned()
        .collect()
}

/// Prometheus' legacy names: `[a-zA-Z_:][a-zA-Z0-9_:]*` for the metric,
/// without `:` for labels.
fn legacy_valid(lset: &Labels) -> bool {
    let ok = |s: &str, colon: bool| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':'))
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
    };
    lset.iter().all(|l| {
        if l.name == cairn_model::METRIC_NAME {
            ok(&l.value, true)
        } else {
            ok(&l.name, false)
        }
    })
}

/// A value as it is stored.
pub(crate) enum Stored {
    Float(f64),
    Histogram(Arc<cairn_model::Histogram>),
}

/// The schemas of exponential native histograms.
const EXPONENTIAL_SCHEMAS: std::ops::RangeInclusive<i32> = -4..=8;

/// Prometheus' highest schema for `native_histogram_min_bucket_factor`.
pub fn schema_for_bucket_factor(factor: f64) -> i32 {
    let factor = if factor <= 1.0 { 1.00271 } else { factor };
    let floor = (-factor.log2().log2()).floor();
    floor.clamp(
        f64::from(*EXPONENTIAL_SCHEMAS.start()),
        f64::from(*EXPONENTIAL_SCHEMAS.end()),
    ) as i32
}

/// A histogram as stored under `native_histogram_min_bucket_factor` (the
/// schema lowered to the job's maximum) and `native_histogram_bucket_limit`
/// (lowered further until its buckets fit); `None` when they cannot fit.
fn limit_histogram(h: &cairn_model::Histogram, job: &JobSettings) -> Option<cairn_model::Histogram> {
    let exponential = EXPONENTIAL_SCHEMAS.contains(&h.schema);
    let mut h = h.clone();
    if exponential && h.schema > job.native_histogram_max_schema {
        h.reduce_schema(job.native_histogram_max_schema);
    }
    let limit = job.native_histogram_bucket_limit;
    if limit == 0 {
        return Some(h);
    }
    let buckets = |h: &cairn_model::Histogram| h.positive.len() + h.negative.len();
    if buckets(&h) > limit && !exponential {
        return None;
    }
    while buckets(&h) > limit {
        if h.schema <= *EXPONENTIAL_SCHEMAS.start() {
            return None;
        }
        h.reduce_schema(h.schema - 1);
    }
    Some(h)
}

/// The first label limit `lset` exceeds, with Prometheus' message.
fn check_label_limits(lset: &Labels, job: &JobSettings) -> Result<(), String> {
    if job.label_limit == 0 && job.label_name_length_limit == 0 && job.label_value_length_limit == 0 {
        return Ok(());
    }
    let met = lset.metric_name().unwrap_or("");
    let met: String = met.chars().take(50).collect();
    if job.label_limit > 0 && lset.len() > job.label_limit {
        return Err(format!(
            "label_limit exceeded (metric: {met}, number of labels: {}, limit: {})",
            lset.len(),
            job.label_limit
        ));
    }
    for l in lset.iter() {
        let name: String = l.name.chars().take(50).collect();
        if job.label_name_length_limit > 0 && l.name.len() > job.label_name_length_limit {
            return Err(format!(
                "label_name_length_limit exceeded (metric: {met}, label name: {name}, length: {}, limit: {})",
                l.name.len(),
                job.label_name_length_limit
            ));
        }
        if job.label_value_length_limit > 0 && l.value.len() > job.label_value_length_limit {
            let value: String = l.value.chars().take(50).collect();
            return Err(format!(
                "label_value_length_limit exceeded (metric: {met}, label name: {name}, value: {value:?}, length: {}, limit: {})",
                l.value.len(),
                job.label_value_length_limit
            ));
        }
    }
    Ok(())
}

/// Appends a parsed scrape; the counts are what the report series show even
/// when it fails. On `Err` the caller rolls the appender back and calls
/// [`append_empty`] (what was tracked for staleness stays tracked, as in
/// Prometheus).
pub(crate) fn append_scraped(
    cache: &mut ScrapeCache,
    app: &mut dyn Appender,
    scraped: &mut ParsedBody<'_>,
    target: &Labels,
    job: &JobSettings,
    default_t: i64,
    now_ms: i64,
) -> (AppendCounts, Result<(), String>) {
    let mut counts = AppendCounts::default();
    let result = if cache.is_lean() {
        crate::append_lean::append_samples(cache, app, scraped, target, job, default_t, now_ms, &mut counts)
    } else {
        append_samples(cache, app, scraped, target, job, default_t, now_ms, &mut counts)
    };
    (counts, result)
}

#[allow(clippy::too_many_arguments)]
fn append_samples(
    cache: &mut ScrapeCache,
    app: &mut dyn Appender,
    ParsedBody {
        body,
        exposition: scraped,
        ..
    }: &mut ParsedBody<'_>,
    target: &Labels,
    job: &JobSettings,
    default_t: i64,
    now_ms: i64,
    counts: &mut AppendCounts,
) -> Result<(), String> {
    cache.set_metadata(&scraped.metadata);
    let mut admission = Admission::default();
    let mut key_bytes = Vec::new();
    for s in &mut scraped.samples {
        counts.total += 1;
        let own_t = if job.honor_timestamps { s.timestamp_ms } else { None };
        let t = own_t.unwrap_or(default_t);
        match s.spelling {
            Some(spelling) => spelling.key(body, &mut key_bytes),
            None => exposed_key(
                &s.labels,
                &honoured_empty_labels(&s.empty_labels, target, job),
                &mut key_bytes,
            ),
        };
        let key = SeriesKey::of(&key_bytes);
        if cache.is_dropped(key) {
            continue;
        }
        let (lset, cached, already) = match cache.get(key) {
            Some((lset, already)) => (lset, true, already),
            None if s.spelling.is_some_and(|s| s.known) => {
                return Err("a series the parser took for cached is not in the scrape cache".into());
            }
            None => {
                let Some(lset) = stored_labels(s, target, job, counts)? else {
                    cache.add_dropped(key);
                    continue;
                };
                let lset = SharedEncodedLabels::new(&lset);
                // Two spellings of one series in one scrape.
                let already = cache.tracked_in_this_scrape(&lset);
                (lset, false, already)
            }
        };
        let added = if already && own_t.is_none() {
            // The same series twice in one scrape: Prometheus refuses the
            // second as a duplicate sample and carries on.
            counts.duplicates += 1;
            false
        } else {
            match admission.admit(&s.value, t, now_ms, job, counts) {
                Some(value) => {
                    store(app, lset.get(), t, value)?;
                    true
                }
                None => false,
            }
        };
        if !cached && added && cache.add(key, lset.clone()) && !admission.limit_hit() {
            counts.series_added += 1;
        }
        if added && (own_t.is_none() || job.track_timestamps_staleness) {
            cache.track(key, &lset);
        }
        counts.added += 1;
    }
    admission.finish(counts)?;
    write_stale_markers(cache, app, default_t)?;
    cache.iter_done(true);
    Ok(())
}

/// The labels a sample new to the cache is stored under, checked as
/// Prometheus checks them; `None` when relabelling drops the series.
pub(crate) fn stored_labels(
    s: &mut ScrapedSample,
    target: &Labels,
    job: &JobSettings,
    counts: &mut AppendCounts,
) -> Result<Option<Labels>, String> {
    let honoured_empty = honoured_empty_labels(&s.empty_labels, target, job);
    let exposed = std::mem::replace(&mut s.labels, Labels::empty());
    let Some(lset) = sample_labels(exposed, &honoured_empty, target, job).filter(|l| !l.is_empty()) else {
        return Ok(None);
    };
    if lset.metric_name().is_none() {
        return Err("missing metric name (__name__ label)".into());
    }
    if job.legacy_name_validation && !legacy_valid(&lset) {
        return Err(format!("invalid metric name or label names: {lset}"));
    }
    if let Err(e) = check_label_limits(&lset, job) {
        counts.label_limit_hit = true;
        return Err(e);
    }
    Ok(Some(lset))
}

/// Which samples of a scrape are stored, as Prometheus' appender chain
/// decides: the histogram's schema and bucket limits first, then the
/// sample limit, then the time. A limit hit fails the scrape at its end.
#[derive(Default)]
pub(crate) struct Admission {
    /// Samples past the bucket limit, counted against the sample limit.
    counted: usize,
    sample_limit_hit: bool,
    bucket_limit_hit: bool,
}

impl Admission {
    /// The value to store at `t`, if it is stored.
    pub fn admit(
        &mut self,
        value: &ScrapedValue,
        t: i64,
        now_ms: i64,
        job: &JobSettings,
        counts: &mut AppendCounts,
    ) -> Option<Stored> {
        let value = match value {
            ScrapedValue::Float(v) => Stored::Float(*v),
            ScrapedValue::Histogram(h) => match limit_histogram(h, job) {
                Some(h) => Stored::Histogram(Arc::new(h)),
                None => {
                    self.bucket_limit_hit = true;
                    return None;
                }
            },
        };
        self.counted += 1;
        if job.sample_limit > 0 && self.counted > job.sample_limit {
            self.sample_limit_hit = true;
            None
        } else if t > now_ms + MAX_AHEAD_MS {
            counts.out_of_bounds += 1;
            None
        } else {
            Some(value)
        }
    }

    pub fn limit_hit(&self) -> bool {
        self.sample_limit_hit || self.bucket_limit_hit
    }

    /// Ends the scrape: the limits hit, counted and as its error.
    pub fn finish(self, counts: &mut AppendCounts) -> Result<(), String> {
        counts.sample_limit_hit = self.sample_limit_hit;
        counts.bucket_limit_hit = self.bucket_limit_hit;
        if self.sample_limit_hit {
            return Err("sample limit exceeded".into());
        }
        if self.bucket_limit_hit {
            return Err("histogram bucket limit exceeded".into());
        }
        Ok(())
    }
}

/// Appends one admitted sample.
pub(crate) fn store(app: &mut dyn Appender, labels: EncodedLabels<'_>, t: i64, value: Stored) -> Result<(), String> {
    match value {
        Stored::Float(v) => app.append_encoded(labels, &[Sample::new(t, v)]),
        Stored::Histogram(h) => app.append_series(labels, &[], &[HistogramSample { t, h }]),
    }
    .map_err(|e| e.to_string())
}

/// A scrape with nothing in it (failed, empty, or the target gone): stale
/// markers for what the last scrape had.
pub(crate) fn append_empty(cache: &mut ScrapeCache, app: &mut dyn Appender, default_t: i64) -> Result<(), String> {
    let result = write_stale_markers(cache, app, default_t);
    cache.iter_done(false);
    result
}

pub(crate) fn write_stale_markers(cache: &mut ScrapeCache, app: &mut dyn Appender, t: i64) -> Result<(), String> {
    for lset in cache.stale() {
        app.append_encoded(lset.get(), &[Sample::new(t, stale_nan())])
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The report series' names, in Prometheus' order; the last three only with
/// `extra_scrape_metrics`.
pub(crate) const REPORT_SERIES: [&str; 8] = [
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
    "scrape_timeout_seconds",
    "scrape_sample_limit",
    "scrape_body_size_bytes",
];

/// The label sets of the report series of a target.
pub(crate) fn report_labels(target: &Labels, extra: bool) -> Vec<Labels> {
    let n = if extra { 8 } else { 5 };
    REPORT_SERIES[..n]
        .iter()
        .map(|name| {
            let mut l = target.clone();
            l.set(cairn_model::METRIC_NAME, name);
            l
        })
        .collect()
}

/// Appends the report series of one scrape (or their stale markers), one
/// value per label set of [`report_labels`].
pub(crate) fn append_report(app: &mut dyn Appender, labels: &[Labels], t: i64, values: &[f64]) -> Result<(), String> {
    for (lset, v) in labels.iter().zip(values) {
        app.append(lset, &[Sample::new(t, *v)]).map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Relabeling;

    #[test]
    fn bucket_factor_picks_prometheus_schema() {
        assert_eq!(schema_for_bucket_factor(0.0), 8);
        assert_eq!(schema_for_bucket_factor(1.1), 2);
        assert_eq!(schema_for_bucket_factor(2.0), 0);
        assert_eq!(schema_for_bucket_factor(1e9), -4);
    }

    #[test]
    fn bucket_limit_lowers_resolution_until_the_buckets_fit() {
        let mut job = JobSettings::new("j");
        let h = cairn_model::Histogram {
            schema: 3,
            count: 8.0,
            positive: (0..8).map(|i| (i, 1.0)).collect(),
            ..Default::default()
        };
        job.native_histogram_bucket_limit = 4;
        let limited = limit_histogram(&h, &job).unwrap();
        assert!(limited.positive.len() <= 4 && limited.schema < 3);
        assert_eq!(limited.positive.iter().map(|(_, c)| c).sum::<f64>(), 8.0);
        job.native_histogram_bucket_limit = 0;
        job.native_histogram_max_schema = 1;
        assert_eq!(limit_histogram(&h, &job).unwrap().schema, 1);
        let custom = cairn_model::Histogram {
            schema: -53,
            positive: vec![(0, 1.0), (1, 1.0)],
            ..Default::default()
        };
        job.native_histogram_bucket_limit = 1;
        assert!(
            limit_histogram(&custom, &job).is_none(),
            "custom buckets cannot be merged"
        );
    }

    #[test]
    fn conflicting_exposed_labels_get_exported_prefixes() {
        let job = JobSettings::new("j");
        let target = Labels::from_pairs([("instance", "t:1"), ("job", "j")]);
        let exposed = Labels::from_pairs([
            ("__name__", "m"),
            ("job", "a"),
            ("exported_job", "b"),
            ("instance", "i"),
        ]);
        let l = sample_labels(exposed.clone(), &[], &target, &job).unwrap();
        assert_eq!(l.get("job"), Some("j"));
        assert_eq!(l.get("exported_job"), Some("b"), "an exposed exported_job stays");
        assert_eq!(l.get("exported_exported_job"), Some("a"));
        assert_eq!(l.get("exported_instance"), Some("i"));
        let mut honoring = JobSettings::new("j");
        honoring.honor_labels = true;
        let l = sample_labels(exposed.clone(), &[], &target, &honoring).unwrap();
        assert_eq!((l.get("job"), l.get("instance")), (Some("a"), Some("i")));
    }

    #[test]
    fn honoured_empty_labels_keep_the_target_labels_off() {
        let target = Labels::from_pairs([("instance", "t:1"), ("job", "honor"), ("zone", "z")]);
        let exposed = Labels::from_pairs([("__name__", "m"), ("env", "e")]);
        let empty = [Label::new("instance", ""), Label::new("job", "")];
        let mut honoring = JobSettings::new("honor");
        honoring.honor_labels = true;
        assert_eq!(
            sample_labels(exposed.clone(), &empty, &target, &honoring).unwrap(),
            Labels::from_pairs([("__name__", "m"), ("env", "e"), ("zone", "z")]),
        );
        let plain = JobSettings::new("honor");
        assert_eq!(
            sample_labels(exposed.clone(), &empty, &target, &plain).unwrap(),
            Labels::from_pairs([
                ("__name__", "m"),
                ("env", "e"),
                ("instance", "t:1"),
                ("job", "honor"),
                ("zone", "z")
            ]),
            "an empty exposed value is no conflict without honor_labels"
        );
        assert!(honoured_empty_labels(&empty, &target, &plain).is_empty());
        let other = [Label::new("other", ""), Label::new("zone", "")];
        assert_eq!(
            honoured_empty_labels(&other, &target, &honoring),
            vec![Label::new("zone", "")],
            "only the target's labels matter"
        );
    }

    /// Keeps what was appended, in order.
    #[derive(Default)]
    struct Recorder(Vec<(Labels, f64)>);

    impl Appender for Recorder {
        fn append(&mut self, labels: &Labels, samples: &[Sample]) -> Result<(), cairn_storage::StorageError> {
            self.0.extend(samples.iter().map(|s| (labels.clone(), s.v)));
            Ok(())
        }

        fn commit(self: Box<Self>) -> Result<cairn_storage::CommitReport, cairn_storage::StorageError> {
            Ok(cairn_storage::CommitReport::default())
        }

        fn rollback(self: Box<Self>) {}
    }

    fn scrape(cache: &mut ScrapeCache, body: &str, job: &JobSettings, t: i64) -> Vec<(Labels, f64)> {
        let target = Labels::from_pairs([("instance", "t:1"), ("job", "honor")]);
        let mut scraped =
            crate::exposition::parse_body(body.as_bytes(), "text/plain", job, &Default::default(), cache, &target)
                .unwrap();
        let mut app = Recorder::default();
        let (_, result) = append_scraped(cache, &mut app, &mut scraped, &target, job, t, t);
        result.unwrap();
        app.0.retain(|(_, v)| !cairn_model::is_stale_nan(*v));
        app.0
    }

    #[test]
    fn a_cached_series_is_stored_as_one_read_whole() {
        let bodies = [
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nm{job=\"\",a=\"x\"} 2\nm{a=\"x\"} 3\nd{a=\"drop\"} 4\n",
            // Other types, other spellings and orders of the same series.
            "# TYPE h gauge\nh_bucket{le=\"1\"} 5\nm{a=\"x\",job=\"\"} 6\nd{a=\"drop\"} 7\nm {a=\"x\"} 8\n",
            "m{instance=\"own\",a=\"x\"} 9\n# TYPE h histogram\nh_bucket{le=\"1.0\"} 10\n",
        ];
        // Without relabelling a lean cache merges labels as the body is read.
        for (honor_labels, relabel) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut job = JobSettings::new("honor");
            job.honor_labels = honor_labels;
            if relabel {
                job.metric_relabel = Relabeling::new(|l: &Labels| (l.get("a") != Some("drop")).then(|| l.clone()));
            }
            let (mut cache, mut lean) = (ScrapeCache::default(), ScrapeCache::new(true));
            for (i, body) in bodies.iter().cycle().take(bodies.len() * 3).enumerate() {
                let t = 1000 * (i as i64 + 1);
                let whole = scrape(&mut ScrapeCache::default(), body, &job, t);
                assert_eq!(
                    scrape(&mut cache, body, &job, t),
                    whole,
                    "honor_labels {honor_labels}: {body}"
                );
                assert_eq!(
                    scrape(&mut lean, body, &job, t),
                    whole,
                    "lean, honor_labels {honor_labels}: {body}"
                );
            }
        }
    }

    #[test]
    fn series_apart_only_by_an_honoured_empty_label_are_cached_apart() {
        let mut job = JobSettings::new("honor");
        job.honor_labels = true;
        let body = "m{job=\"\",env=\"empty-job\"} 2\nm{env=\"empty-job\"} 3\nm{instance=\"\",env=\"empty-job\"} 4\n";
        let want = vec![
            (
                Labels::from_pairs([("__name__", "m"), ("env", "empty-job"), ("instance", "t:1")]),
                2.0,
            ),
            (
                Labels::from_pairs([
                    ("__name__", "m"),
                    ("env", "empty-job"),
                    ("instance", "t:1"),
                    ("job", "honor"),
                ]),
                3.0,
            ),
            (
                Labels::from_pairs([("__name__", "m"), ("env", "empty-job"), ("job", "honor")]),
                4.0,
            ),
        ];
        let mut cache = ScrapeCache::default();
        assert_eq!(scrape(&mut cache, body, &job, 1000), want);
        assert_eq!(scrape(&mut cache, body, &job, 2000), want, "from the cache");
        let swapped = "m{env=\"empty-job\"} 3\nm{job=\"\",env=\"empty-job\"} 2\n";
        let mut cache = ScrapeCache::default();
        assert_eq!(
            scrape(&mut cache, swapped, &job, 1000),
            vec![want[1].clone(), want[0].clone()]
        );
    }

    #[test]
    fn without_honor_labels_an_empty_label_names_the_same_series() {
        let job = JobSettings::new("honor");
        let body = "m{job=\"\"} 2\nm 3\n";
        let lset = Labels::from_pairs([("__name__", "m"), ("instance", "t:1"), ("job", "honor")]);
        let mut cache = ScrapeCache::default();
        assert_eq!(
            scrape(&mut cache, body, &job, 1000),
            vec![(lset, 2.0)],
            "the second is a duplicate of the first"
        );
    }

    #[test]
    fn label_limits_name_the_limit() {
        let mut job = JobSettings::new("j");
        job.label_limit = 1;
        let l = Labels::from_pairs([("__name__", "m"), ("a", "bc")]);
        assert_eq!(
            check_label_limits(&l, &job).unwrap_err(),
            "label_limit exceeded (metric: m, number of labels: 2, limit: 1)"
        );
        job.label_limit = 0;
        job.label_value_length_limit = 1;
        assert!(
            check_label_limits(&l, &job)
                .unwrap_err()
                .starts_with("label_value_length_limit exceeded")
        );
    }

    /// The `a` labels of the series a scrape of `body` (`None`: a failed
    /// scrape) marked stale.
    fn stale_after(cache: &mut ScrapeCache, body: Option<&str>, job: &JobSettings, t: i64) -> Vec<String> {
        let mut app = Recorder::default();
        match body {
            Some(body) => {
                let target = Labels::from_pairs([("instance", "t:1"), ("job", "j")]);
                let mut scraped = crate::exposition::parse_body(
                    body.as_bytes(),
                    "text/plain",
                    job,
                    &Default::default(),
                    cache,
                    &target,
                )
                .unwrap();
                append_scraped(cache, &mut app, &mut scraped, &target, job, t, t)
                    .1
                    .unwrap();
            }
            None => append_empty(cache, &mut app, t).unwrap(),
        }
        let mut names: Vec<String> = app
            .0
            .iter()
            .filter(|(_, v)| cairn_model::is_stale_nan(*v))
            .map(|(l, _)| l.get("a").unwrap_or_default().to_string())
            .collect();
        names.sort();
        names
    }

    proptest::proptest! {
        /// Whatever the scrapes (series coming, going, coming back, failed
        /// scrapes), a lean cache marks stale exactly what a full one does.
        #[test]
        fn a_lean_cache_marks_stale_what_a_full_one_does(
            scrapes in proptest::collection::vec(proptest::option::weighted(0.85, proptest::collection::btree_set(0u8..12, 0..12)), 1..12)
        ) {
            let job = JobSettings::new("j");
            let (mut full, mut lean) = (ScrapeCache::new(false), ScrapeCache::new(true));
            for (k, scrape) in scrapes.iter().enumerate() {
                let body = scrape.as_ref().map(|set| set.iter().map(|i| format!("m{{a=\"{i}\"}} 1\n")).collect::<String>());
                let t = 1000 * (k as i64 + 1);
                let want = stale_after(&mut full, body.as_deref(), &job, t);
                proptest::prop_assert_eq!(stale_after(&mut lean, body.as_deref(), &job, t), want, "scrape {}", k);
            }
        }
    }

    #[test]
    fn series_added_counts_the_series_the_cache_did_not_have_lean_or_not() {
        let job = JobSettings::new("j");
        let target = Labels::from_pairs([("instance", "t:1"), ("job", "j")]);
        for lean in [false, true] {
            let mut cache = ScrapeCache::new(lean);
            let mut added = |body: &str, t: i64| {
                let mut scraped = crate::exposition::parse_body(
                    body.as_bytes(),
                    "text/plain",
                    &job,
                    &Default::default(),
                    &cache,
                    &target,
                )
                .unwrap();
                let (counts, result) =
                    append_scraped(&mut cache, &mut Recorder::default(), &mut scraped, &target, &job, t, t);
                result.unwrap();
                counts.series_added
            };
            assert_eq!(added("a 1\nb 1\n", 1000), 2, "lean {lean}");
            assert_eq!(added("a 2\nb 2\n", 2000), 0, "lean {lean}");
            assert_eq!(added("a 3\nc 3\n", 3000), 1, "lean {lean}");
        }
    }

    #[test]
    fn a_series_goes_stale_once_when_missing_whatever_its_spelling() {
        for lean in [false, true] {
            goes_stale_once_when_missing(ScrapeCache::new(lean));
        }
    }

    fn goes_stale_once_when_missing(mut cache: ScrapeCache) {
        let job = JobSettings::new("j");
        let cache = &mut cache;
        let none: Vec<String> = Vec::new();
        // Own timestamps are not tracked; the first scrape marks nothing.
        let first = "m{a=\"1\",b=\"x\"} 1\nm{a=\"2\"} 1\nm{a=\"ts\"} 1 500\n";
        assert_eq!(stale_after(cache, Some(first), &job, 1000), none);
        // The same series spelt otherwise is not missing; a=2 is.
        let respelt = "m{b=\"x\",a=\"1\"} 2\n";
        assert_eq!(stale_after(cache, Some(respelt), &job, 2000), vec!["2"]);
        // Marked once: not again in the scrape after.
        assert_eq!(stale_after(cache, Some(respelt), &job, 3000), none);
        // Both spellings in one scrape: the second is a duplicate, nothing goes stale.
        let both = "m{b=\"x\",a=\"1\"} 4\nm{a=\"1\",b=\"x\"} 4\nm{a=\"3\"} 4\n";
        assert_eq!(stale_after(cache, Some(both), &job, 4000), none);
        // A failed scrape marks what the last one had, once.
        assert_eq!(stale_after(cache, None, &job, 5000), vec!["1", "3"]);
        assert_eq!(stale_after(cache, None, &job, 6000), none);
        assert_eq!(stale_after(cache, Some(both), &job, 7000), none);
        assert_eq!(stale_after(cache, Some(respelt), &job, 8000), vec!["3"]);
    }

    #[test]
    fn an_inherited_scrape_marks_stale_what_the_first_scrape_here_lacks() {
        let job = JobSettings::new("j");
        let none: Vec<String> = Vec::new();
        let inherited = |a: &str| {
            SharedEncodedLabels::new(&Labels::from_pairs([
                ("__name__", "m"),
                ("a", a),
                ("instance", "t:1"),
                ("job", "j"),
            ]))
        };
        for lean in [false, true] {
            let mut cache = ScrapeCache::new(lean);
            cache.inherit(vec![inherited("kept"), inherited("gone")]);
            // The body spells `kept` with its labels in another order.
            let body = "m{a=\"kept\",b=\"\"} 1\nm{a=\"new\"} 1\n";
            assert_eq!(
                stale_after(&mut cache, Some(body), &job, 1000),
                vec!["gone"],
                "lean {lean}"
            );
            assert_eq!(stale_after(&mut cache, Some(body), &job, 2000), none, "lean {lean}");
            // A failed first scrape marks everything inherited, once.
            let mut cache = ScrapeCache::new(lean);
            cache.inherit(vec![inherited("kept"), inherited("gone")]);
            assert_eq!(
                stale_after(&mut cache, None, &job, 1000),
                vec!["gone", "kept"],
                "lean {lean}"
            );
            assert_eq!(stale_after(&mut cache, None, &job, 2000), none, "lean {lean}");
        }
    }
}
