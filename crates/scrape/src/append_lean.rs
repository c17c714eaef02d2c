//! Appending one scrape through a lean cache (agent mode), which holds no
//! series: every sample's labels are merged with the target's as the body
//! is read ([`merging_writer`]), in the form remote write sends them
//! ([`WireLabels`]), and the series is known by the hash of those bytes.
//! Agent mode's storage copies them into its requests as they are.
//! Metric relabelling, label limits, legacy name validation and label
//! conflicts without `honor_labels` take the general path of append.rs,
//! which builds the label set first.

use cairn_model::{
    EncodedLabels, HistogramSample, LabelText, Labels, Sample, WireLabel, WireLabels, WireLabelsBuf, WireLabelsWriter,
};
use cairn_storage::Appender;

use crate::append::{Admission, AppendCounts, Stored, stored_labels, write_stale_markers};
use crate::cache::{ScrapeCache, labels_hash};
use crate::exposition::ParsedBody;
use crate::settings::JobSettings;
use cairn_protocols::exposition::{Exposition, LabelPairs};

#[allow(clippy::too_many_arguments)]
pub(crate) fn append_samples(
    cache: &mut ScrapeCache,
    app: &mut dyn Appender,
    scraped: &mut ParsedBody<'_>,
    target: &Labels,
    job: &JobSettings,
    default_t: i64,
    now_ms: i64,
    counts: &mut AppendCounts,
) -> Result<(), String> {
    let ParsedBody {
        exposition: Exposition {
            samples,
            metadata,
            labels: encoded,
        },
        merged: by_reader,
        ..
    } = scraped;
    cache.set_metadata(metadata);
    let merge = merges_directly(job);
    // Written only for samples the reader did not merge (protobuf bodies).
    let mut wired_target: Option<Vec<WireLabel>> = None;
    let mut admission = Admission::default();
    let (mut merged_buf, mut built_buf) = (Vec::new(), Vec::new());
    for s in samples {
        counts.total += 1;
        let own_t = if job.honor_timestamps { s.timestamp_ms } else { None };
        let t = own_t.unwrap_or(default_t);
        merged_buf.clear();
        let merged = match s.encoded {
            // Merged by `merging_writer` as the body was read.
            Some(at) if at.by_reader => Some(
                by_reader
                    .get(at.index as usize)
                    .ok_or("a series the reader wrote is missing")?,
            ),
            Some(at) => {
                s.labels = encoded
                    .get(at.index as usize)
                    .map(EncodedLabels::decode)
                    .unwrap_or_default();
                None
            }
            None if merge => {
                let mut exposed: Vec<(LabelText<'_>, LabelText<'_>)> = s
                    .labels
                    .iter()
                    .chain(&s.empty_labels)
                    .map(|l| (text(&l.name), text(&l.value)))
                    .collect();
                exposed.sort_unstable_by_key(|(name, _)| *name);
                let mut w = WireLabelsWriter::new(&mut merged_buf);
                let target = wired_target.get_or_insert_with(|| wire_target(target));
                merged_labels(exposed.into_iter(), target, job.honor_labels, &mut w).map(|()| w.finish())
            }
            None => None,
        };
        let labels: WireLabels<'_> = match merged {
            Some(labels) => labels,
            None => {
                let Some(lset) = stored_labels(s, target, job, counts)? else {
                    continue;
                };
                built_buf.clear();
                WireLabels::of_labels(&lset, &mut built_buf)
            }
        };
        let Some(seen) = cache.lean_lookup(labels_hash(labels.as_bytes())) else {
            return Err("a lean append without a lean cache".into());
        };
        let added = if cache.lean_tracked_now(seen) && own_t.is_none() {
            // The same series twice in one scrape: Prometheus refuses the
            // second as a duplicate sample and carries on.
            counts.duplicates += 1;
            false
        } else {
            match admission.admit(&s.value, t, now_ms, job, counts) {
                Some(value) => {
                    store(app, labels, t, value)?;
                    true
                }
                None => false,
            }
        };
        if added && seen.is_new() && !admission.limit_hit() {
            counts.series_added += 1;
        }
        if added && (own_t.is_none() || job.track_timestamps_staleness) {
            cache.lean_track(seen, labels.as_bytes());
        }
        counts.added += 1;
    }
    admission.finish(counts)?;
    write_stale_markers(cache, app, default_t)?;
    cache.iter_done(true);
    Ok(())
}

/// Appends one admitted sample of a series in remote write's form.
fn store(app: &mut dyn Appender, labels: WireLabels<'_>, t: i64, value: Stored) -> Result<(), String> {
    match value {
        Stored::Float(v) => app.append_wire(labels, &[Sample::new(t, v)]),
        Stored::Histogram(h) => app.append_histograms(&labels.decode(), &[HistogramSample { t, h }]),
    }
    .map_err(|e| e.to_string())
}

/// The writer a lean cache reads text bodies with
/// ([`cairn_protocols::exposition::parse_encoded`]): each sample's labels
/// are merged with the target's as the body is read, into `merged` in
/// remote write's form, so that a series is written once. `None` when the
/// job's samples do not merge directly.
pub(crate) fn merging_writer<'t>(
    target: &Labels,
    job: &JobSettings,
    merged: &'t mut WireLabelsBuf,
) -> Option<impl FnMut(&LabelPairs<'_>) -> Option<u32> + 't> {
    if !merges_directly(job) {
        return None;
    }
    let honor_labels = job.honor_labels;
    let target = wire_target(target);
    Some(move |pairs: &LabelPairs<'_>| {
        let exposed = pairs.iter().map(|(name, value)| (text(name), text(value)));
        let at = merged.push_with(|w| merged_labels(exposed, &target, honor_labels, w).ok_or(()));
        at.ok().and_then(|at| u32::try_from(at).ok())
    })
}

fn text(s: &str) -> LabelText<'_> {
    LabelText::from(s)
}

/// Whether a job's samples can be stored under their exposed labels merged
/// with the target's, with nothing to check or rewrite in between.
fn merges_directly(job: &JobSettings) -> bool {
    job.metric_relabel.is_empty()
        && !job.legacy_name_validation
        && job.label_limit == 0
        && job.label_name_length_limit == 0
        && job.label_value_length_limit == 0
}

/// Writes the labels [`crate::append::sample_labels`] gives a sample when
/// metric relabelling is off, from its exposed labels sorted by name with no
/// name twice (those given empty among them). `None` when an exposed label
/// has a target label's name without `honor_labels` (the exposed one is
/// then renamed, which that function does); `w` may then hold part of an
/// encoding.
fn merged_labels<'x>(
    exposed: impl Iterator<Item = (LabelText<'x>, LabelText<'x>)>,
    target: &[WireLabel],
    honor_labels: bool,
    w: &mut WireLabelsWriter<'_>,
) -> Option<()> {
    // Both sides are sorted and free of repeated names, so the merge is
    // written in order without checking it again.
    let mut next_target = 0;
    for (name, value) in exposed {
        while let Some(t) = target.get(next_target)
            && t.name() < name
        {
            w.push_label_in_order(t);
            next_target += 1;
        }
        match target.get(next_target) {
            Some(t) if t.name() == name => {
                next_target += 1;
                match (value.is_empty(), honor_labels) {
                    // An exposed empty value keeps the target's label off
                    // with honor_labels, and is no label without.
                    (true, true) => {}
                    (true, false) => w.push_label_in_order(t),
                    (false, true) => w.push_text_in_order(name, value),
                    (false, false) => return None,
                }
            }
            _ => w.push_text_in_order(name, value),
        }
    }
    for t in target.get(next_target..).unwrap_or_default() {
        w.push_label_in_order(t);
    }
    Some(())
}

/// A target's labels, each written once for all the series of a scrape.
fn wire_target(target: &Labels) -> Vec<WireLabel> {
    target.iter().map(|l| WireLabel::new(&l.name, &l.value)).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use cairn_model::Label;

    use super::*;
    use crate::append::sample_labels;

    fn label_set() -> impl Strategy<Value = Vec<(String, String)>> {
        // Few names, so that exposed and target labels often meet.
        let name = prop_oneof![
            Just("__name__".to_string()),
            Just("job".to_string()),
            Just("instance".to_string()),
            Just("exported_job".to_string()),
            Just("A".to_string()),
            "[a-z]{1,3}",
        ];
        let value = prop_oneof![Just(String::new()), "[a-zü]{1,4}"];
        proptest::collection::vec((name, value), 0..6)
    }

    fn labels_of(pairs: &[(String, String)]) -> (Labels, Vec<Label>) {
        let mut seen = std::collections::HashSet::new();
        let pairs: Vec<&(String, String)> = pairs.iter().filter(|(n, _)| seen.insert(n.clone())).collect();
        let labels = Labels::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let mut empty: Vec<Label> = pairs
            .iter()
            .filter(|(_, v)| v.is_empty())
            .map(|(n, _)| Label::new(n.as_str(), ""))
            .collect();
        empty.sort_by(|a, b| a.name.cmp(&b.name));
        (labels, empty)
    }

    proptest! {
        /// Whatever the labels, the merge stores a sample where the general
        /// path does, or leaves it to that path.
        #[test]
        fn the_merge_stores_what_the_general_path_stores(
            exposed in label_set(),
            target in label_set(),
            honor_labels: bool,
        ) {
            let (exposed, exposed_empty) = labels_of(&exposed);
            let (target, _) = labels_of(&target);
            let mut job = JobSettings::new("j");
            job.honor_labels = honor_labels;
            let honoured: Vec<Label> = if honor_labels {
                exposed_empty.iter().filter(|l| target.get(&l.name).is_some()).cloned().collect()
            } else {
                Vec::new()
            };
            let general = sample_labels(exposed.clone(), &honoured, &target, &job);
            let mut pairs: Vec<(LabelText<'_>, LabelText<'_>)> =
                exposed.iter().chain(&exposed_empty).map(|l| (text(&l.name), text(&l.value))).collect();
            pairs.sort_unstable_by_key(|(name, _)| *name);
            let mut out = Vec::new();
            let mut w = WireLabelsWriter::new(&mut out);
            match merged_labels(pairs.into_iter(), &wire_target(&target), honor_labels, &mut w) {
                Some(()) => {
                    let merged = w.finish();
                    // Written in order, as a checked reading confirms.
                    prop_assert!(WireLabels::new(merged.as_bytes()).is_ok());
                    prop_assert_eq!(Some(merged.decode()), general);
                }
                None => prop_assert!(!honor_labels && exposed.iter().any(|l| target.get(&l.name).is_some())),
            }
        }
    }

    #[test]
    fn only_jobs_without_relabelling_limits_or_legacy_names_merge_directly() {
        let mut job = JobSettings::new("j");
        assert!(merges_directly(&job));
        job.label_limit = 3;
        assert!(!merges_directly(&job));
        let mut job = JobSettings::new("j");
        job.metric_relabel = crate::Relabeling::new(|l| Some(l.clone()));
        assert!(!merges_directly(&job));
        let mut job = JobSettings::new("j");
        job.legacy_name_validation = true;
        assert!(!merges_directly(&job));
    }
}
