//! Appending one scrape through a lean cache (agent mode), which holds no
//! series: every sample's labels are merged with the target's straight into
//! one reused buffer, and the series is known by the hash of that encoding.
//! Metric relabelling, label limits, legacy name validation and label
//! conflicts without `honor_labels` take the general path of append.rs,
//! which builds the label set first.

use cairn_model::{EncodedLabels, Label, LabelText, Labels, SharedEncodedLabels, SortedLabelsWriter};
use cairn_storage::Appender;

use crate::append::{Admission, AppendCounts, store, stored_labels, write_stale_markers};
use crate::cache::{ScrapeCache, labels_hash};
use crate::exposition::ParsedBody;
use crate::settings::JobSettings;
use cairn_protocols::exposition::Exposition;

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
    let Exposition {
        samples,
        metadata,
        labels: encoded,
    } = &mut scraped.exposition;
    cache.set_metadata(metadata);
    let merge = merges_directly(job);
    let mut admission = Admission::default();
    let mut buf = Vec::new();
    for s in samples {
        counts.total += 1;
        let own_t = if job.honor_timestamps { s.timestamp_ms } else { None };
        let t = own_t.unwrap_or(default_t);
        let exposed = s.encoded.and_then(|at| encoded.get(at as usize));
        buf.clear();
        let built: SharedEncodedLabels;
        let merged = match exposed {
            _ if !merge => None,
            Some(exposed) => merged_labels(
                exposed.text_pairs(),
                &s.empty_labels,
                target,
                job.honor_labels,
                &mut buf,
            ),
            None => {
                let exposed = s
                    .labels
                    .iter()
                    .map(|l| (l.name.as_str().into(), l.value.as_str().into()));
                merged_labels(exposed, &s.empty_labels, target, job.honor_labels, &mut buf)
            }
        };
        let labels: EncodedLabels<'_> = match merged {
            Some(labels) => labels,
            None => {
                if let Some(exposed) = exposed {
                    s.labels = exposed.decode();
                }
                let Some(lset) = stored_labels(s, target, job, counts)? else {
                    continue;
                };
                built = SharedEncodedLabels::new(&lset);
                built.get()
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

/// Whether a job's samples can be stored under their exposed labels merged
/// with the target's, with nothing to check or rewrite in between.
fn merges_directly(job: &JobSettings) -> bool {
    job.metric_relabel.is_empty()
        && !job.legacy_name_validation
        && job.label_limit == 0
        && job.label_name_length_limit == 0
        && job.label_value_length_limit == 0
}

/// The labels [`crate::append::sample_labels`] gives a sample when metric
/// relabelling is off, written at the end of `out`. `None` when an exposed
/// label has a target label's name without `honor_labels` (the exposed one
/// is then renamed, which that function does); `out` may then hold part of
/// an encoding.
fn merged_labels<'x, 'a>(
    exposed: impl Iterator<Item = (LabelText<'x>, LabelText<'x>)>,
    exposed_empty: &[Label],
    target: &'x Labels,
    honor_labels: bool,
    out: &'a mut Vec<u8>,
) -> Option<EncodedLabels<'a>> {
    let mut w = SortedLabelsWriter::new(out);
    let mut exposed = exposed.peekable();
    let mut target = target
        .iter()
        .map(|l| (LabelText::from(l.name.as_str()), LabelText::from(l.value.as_str())))
        .peekable();
    loop {
        let next = match (exposed.peek(), target.peek()) {
            (None, None) => break,
            (Some(e), Some(t)) if e.0 == t.0 => {
                if !honor_labels {
                    return None;
                }
                target.next();
                exposed.next()
            }
            (Some(e), Some(t)) if e.0 < t.0 => exposed.next(),
            (Some(_), None) => exposed.next(),
            (_, Some(_)) => {
                let t = target.next();
                // With honor_labels an exposed empty value keeps the target's label off.
                if honor_labels && t.is_some_and(|t| exposed_empty.iter().any(|e| e.name.as_bytes() == t.0.as_bytes()))
                {
                    continue;
                }
                t
            }
        };
        let (name, value) = next?;
        w.push_text(name, value).ok()?;
    }
    Some(w.finish())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

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
            let mut out = Vec::new();
            let pairs = exposed.iter().map(|l| (l.name.as_str().into(), l.value.as_str().into()));
            match merged_labels(pairs, &exposed_empty, &target, honor_labels, &mut out) {
                Some(merged) => prop_assert_eq!(Some(merged.decode()), general),
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
