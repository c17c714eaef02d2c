//! A target taken over from another process of a cluster: the series that
//! process's last scrape of it wrote, read back from storage, become the
//! new loop's previous scrape, so that its first scrape marks stale those
//! the target no longer exposes, as the process that gave the target up
//! would have. A target that moves keeps Prometheus' staleness that way,
//! whether its last owner handed it over or died.
//!
//! Series are found by the target's labels: those metric relabelling or
//! `honor_labels` took the target's labels from are not found, and go
//! stale by the lookback as after any unmarked end.

use std::time::Duration;

use cairn_model::{Labels, Matcher, SharedEncodedLabels, is_stale_nan};
use cairn_storage::{Queryable, SelectHints, collect_samples};

use crate::append::REPORT_SERIES;

/// How far back a series counts as live: PromQL's default lookback, so
/// that a dead owner's series go stale however long its death took to see.
const WINDOW: Duration = Duration::from_secs(300);

/// The series with `target`'s labels whose newest sample in the
/// [`WINDOW`] (or two intervals) before `now_ms` is a value, not a
/// staleness marker; the target's report series left out (every scrape
/// writes them).
pub(crate) fn last_scraped(
    queryable: &dyn Queryable,
    target: &Labels,
    interval: Duration,
    now_ms: i64,
) -> Result<Vec<SharedEncodedLabels>, String> {
    if target.is_empty() {
        return Ok(Vec::new());
    }
    let matchers: Vec<Matcher> = target
        .iter()
        .map(|l| Matcher::equal(l.name.as_str(), l.value.as_str()))
        .collect();
    let mint = now_ms - WINDOW.max(2 * interval).as_millis() as i64;
    let querier = queryable.querier(mint, now_ms).map_err(|e| e.to_string())?;
    let set = querier
        .select(&SelectHints::default(), &matchers)
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for series in set {
        let mut series = series.map_err(|e| e.to_string())?;
        if is_report_series(&series.labels, target) {
            continue;
        }
        let samples = collect_samples(series.samples.as_mut()).map_err(|e| e.to_string())?;
        let newest_float = samples.last().map(|s| (s.t, !is_stale_nan(s.v)));
        let newest_histogram = series.histograms.last().map(|h| (h.t, !h.h.is_stale_marker()));
        if newest_float.max(newest_histogram).is_some_and(|(_, live)| live) {
            out.push(SharedEncodedLabels::new(&series.labels));
        }
    }
    Ok(out)
}

fn is_report_series(labels: &Labels, target: &Labels) -> bool {
    let Some(name) = labels.metric_name() else {
        return false;
    };
    REPORT_SERIES.contains(&name) && labels.len() == target.len() + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::{Sample, stale_nan};
    use cairn_storage::{Appendable, MemStorage};

    #[test]
    fn the_last_scrape_is_the_targets_live_series_but_its_report() {
        let storage = MemStorage::new();
        let target = Labels::from_pairs([("instance", "t:1"), ("job", "j")]);
        let with = |pairs: &[(&str, &str)]| {
            let mut l = target.clone();
            for (k, v) in pairs {
                l.set(k, v);
            }
            l
        };
        let now = 1_000_000;
        let mut app = storage.appender();
        let mut write = |l: &Labels, t: i64, v: f64| app.append(l, &[Sample::new(t, v)]).unwrap();
        write(&with(&[("__name__", "live")]), now - 10_000, 1.0);
        write(&with(&[("__name__", "live"), ("x", "2")]), now - 250_000, 1.0);
        write(&with(&[("__name__", "ended")]), now - 20_000, 1.0);
        write(&with(&[("__name__", "ended")]), now - 10_000, stale_nan());
        write(&with(&[("__name__", "long_gone")]), now - 400_000, 1.0);
        write(&with(&[("__name__", "up")]), now - 10_000, 1.0);
        // `up` with a label of its own is the target's series, not its report.
        write(&with(&[("__name__", "up"), ("x", "1")]), now - 10_000, 1.0);
        let mut other = with(&[("__name__", "live")]);
        other.set("instance", "t:2");
        write(&other, now - 10_000, 1.0);
        app.commit().unwrap();
        let found = last_scraped(&storage, &target, Duration::from_secs(15), now).unwrap();
        let mut found: Vec<Labels> = found.iter().map(|l| l.get().decode()).collect();
        found.sort();
        let mut want = vec![
            with(&[("__name__", "live")]),
            with(&[("__name__", "live"), ("x", "2")]),
            with(&[("__name__", "up"), ("x", "1")]),
        ];
        want.sort();
        assert_eq!(found, want);
    }
}
