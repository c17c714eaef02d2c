//! A target taken over from another process of a cluster: the series that
//! process's last scrape of it wrote, read back from storage, are owed a
//! staleness marker by the new loop's first scrape if it lacks them, as the
//! process that gave the target up would have marked them. A target that
//! moves keeps Prometheus' staleness that way, whether its last owner
//! handed it over or died.
//!
//! That scrape's time is the time of the target's newest `up` sample: the
//! series inherited are those with the target's labels whose newest sample
//! is a value at exactly that time. Series of another target with the same
//! labels and more, and series exposed with their own timestamps (which
//! Prometheus does not mark stale either), are scraped at other times and
//! left alone. Series whose target labels metric relabelling or
//! `honor_labels` replaced are not found, and end with the lookback.

use std::time::Duration;

use cairn_model::{Labels, Matcher, SharedEncodedLabels};
use cairn_storage::{Queryable, SelectHints};

/// How far back the last scrape is looked for: PromQL's default lookback,
/// so that a dead owner's series are found however long its death took to see.
const WINDOW: Duration = Duration::from_secs(300);

/// The series the last scrape of the target with `target` labels wrote
/// before `now_ms`, its report series (`report`) left out.
pub(crate) fn last_scraped(
    queryable: &dyn Queryable,
    target: &Labels,
    report: &[Labels],
    interval: Duration,
    now_ms: i64,
) -> Result<Vec<SharedEncodedLabels>, String> {
    let Some(up) = report.first().filter(|_| !target.is_empty()) else {
        return Ok(Vec::new());
    };
    let matchers: Vec<Matcher> = target
        .iter()
        .map(|l| Matcher::equal(l.name.as_str(), l.value.as_str()))
        .collect();
    let mint = now_ms - WINDOW.max(2 * interval).as_millis() as i64;
    let querier = queryable.querier(mint, now_ms).map_err(|e| e.to_string())?;
    let set = querier
        .select(&SelectHints::default(), &matchers)
        .map_err(|e| e.to_string())?;
    let mut scrape_time = None;
    let mut live = Vec::new();
    for series in set {
        let mut series = series.map_err(|e| e.to_string())?;
        let newest = series.newest().map_err(|e| e.to_string())?;
        if series.labels == *up {
            scrape_time = newest.map(|(t, _)| t);
        } else if let Some((t, true)) = newest
            && !report.contains(&series.labels)
        {
            live.push((series.labels, t));
        }
    }
    let Some(scrape_time) = scrape_time else {
        return Ok(Vec::new());
    };
    Ok(live
        .into_iter()
        .filter(|&(_, t)| t == scrape_time)
        .map(|(labels, _)| SharedEncodedLabels::new(&labels))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::{Sample, stale_nan};
    use cairn_storage::{Appendable, MemStorage};

    #[test]
    fn the_last_scrape_is_what_the_target_wrote_with_its_last_up() {
        let storage = MemStorage::new();
        let target = Labels::from_pairs([("instance", "t:1"), ("job", "j")]);
        let with = |pairs: &[(&str, &str)]| {
            let mut l = target.clone();
            for (k, v) in pairs {
                l.set(k, v);
            }
            l
        };
        let report = crate::append::report_labels(&target, false);
        let (now, last, before) = (1_000_000, 990_000, 975_000);
        let mut app = storage.appender();
        let mut write = |l: &Labels, t: i64, v: f64| app.append(l, &[Sample::new(t, v)]).unwrap();
        write(&with(&[("__name__", "up")]), before, 1.0);
        write(&with(&[("__name__", "up")]), last, 1.0);
        write(&with(&[("__name__", "scrape_series_added")]), last, 0.0);
        write(&with(&[("__name__", "live")]), last, 1.0);
        write(&with(&[("__name__", "live"), ("x", "2")]), last, 1.0);
        // `up` with a label of its own is one of the target's series.
        write(&with(&[("__name__", "up"), ("x", "1")]), last, 1.0);
        write(&with(&[("__name__", "ended")]), before, 1.0);
        write(&with(&[("__name__", "ended")]), last, stale_nan());
        write(&with(&[("__name__", "gone_before")]), before, 1.0);
        // Its own timestamp, exposed as is.
        write(&with(&[("__name__", "own_time")]), last - 500, 1.0);
        // Another target with the same labels and one more, scraped at another time.
        write(&with(&[("__name__", "theirs"), ("shard", "b")]), last - 2_000, 1.0);
        let mut other = with(&[("__name__", "live")]);
        other.set("instance", "t:2");
        write(&other, last, 1.0);
        app.commit().unwrap();
        let found = last_scraped(&storage, &target, &report, Duration::from_secs(15), now).unwrap();
        let mut found: Vec<Labels> = found.iter().map(|l| l.get().decode()).collect();
        found.sort();
        let mut want = vec![
            with(&[("__name__", "live")]),
            with(&[("__name__", "live"), ("x", "2")]),
            with(&[("__name__", "up"), ("x", "1")]),
        ];
        want.sort();
        assert_eq!(found, want);
        // No `up` in the window: no last scrape to go on from.
        let found = last_scraped(&storage, &target, &report, Duration::from_secs(15), now + 400_000).unwrap();
        assert!(found.is_empty());
    }
}
