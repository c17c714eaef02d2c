//! `info(v, {label selector})`: each series of `v` gets, at each step, the
//! data labels of the info series sharing its identifying labels.
//!
//! The info series read are those of the plan's select ([`Info`]) whose
//! identifying labels take values `v`'s series have. At each step an info
//! series counts with its sample of that step's lookback, read at the time
//! of `v`'s first selector; of several with the same name and identifying
//! labels, the one with the newest sample wins (equal times are an error).
//! A label `v`'s series already has is not added; two info metrics adding
//! one label with different values are an error.

use std::collections::{BTreeMap, BTreeSet};

use foldhash::{HashMap, HashSet};

use cairn_model::{Label, Labels, METRIC_NAME, MatchOp, Matcher};

use crate::QueryError;
use crate::eval::{Ev, Result};
use crate::operand::{Operand, Value};
use crate::plan::{Info, Selector};
use crate::select::ReadOpts;
use crate::series::{OutAcc, Series, StepIter, Val};
use crate::steps::Ctx;

/// The labels that tie a series to its info series.
const IDENTIFYING_LABELS: [&str; 2] = ["instance", "job"];

pub(crate) fn eval(ev: &mut Ev, info: &Info, c: Ctx) -> Result<Val> {
    let input = ev.eval_vector(&info.input, c)?;
    let is_info: Vec<bool> = input
        .iter()
        .map(|s| {
            let name = s.labels.metric_name().unwrap_or("");
            info.names.iter().all(|m| m.matches(name))
        })
        .collect();
    let infos = match identified_select(&info.select, &input, &is_info)? {
        Some(sel) => read_info_series(ev, &sel, c)?,
        None => Vec::new(),
    };
    let data = DataLabels::of(&info.data);
    combine(input, &is_info, &infos, &data, c).map(Val::Vector)
}

/// `sel` narrowed to the identifying labels' values of the series to
/// enrich; `None` when they have none.
fn identified_select(sel: &Selector, input: &[Series], is_info: &[bool]) -> Result<Option<Selector>> {
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (s, _) in input.iter().zip(is_info).filter(|(_, info)| !**info) {
        for name in IDENTIFYING_LABELS {
            if let Some(v) = s.labels.get(name) {
                values.entry(name).or_default().insert(v);
            }
        }
    }
    if values.is_empty() {
        return Ok(None);
    }
    let mut matchers = Vec::with_capacity(values.len());
    for (name, vs) in values {
        let alternatives: Vec<String> = vs.into_iter().map(regex::escape).collect();
        let m = Matcher::new(MatchOp::RegexMatch, name, alternatives.join("|"))
            .map_err(|e| QueryError::Internal(e.to_string()))?;
        matchers.push(m);
    }
    let mut sel = sel.clone();
    for set in &mut sel.sets {
        set.matchers.extend(matchers.iter().cloned());
    }
    Ok(Some(sel))
}

/// The info series of `sel` at the steps of `c`: each point is the time
/// (seconds) of the sample the step reads. An info series read as a
/// native histogram at some step is an error.
fn read_info_series(ev: &mut Ev, sel: &Selector, c: Ctx) -> Result<Vec<Series>> {
    let (at, mint, maxt, mut hints) = ev.instant_window(sel, c);
    hints.func = Some("info".into());
    let (off, lookback) = (sel.offset, ev.lookback);
    let opts = ReadOpts {
        drop_stale: false,
        count_output: true,
        detect_resets: false,
    };
    ev.select(sel, mint, maxt, hints, opts, &|labels, samples| {
        let reads_histogram = !samples.hs.is_empty()
            && crate::lookback::instant_points(samples, c, at, off, lookback, false)
                .is_some_and(|(_, hs)| !hs.is_empty());
        if reads_histogram {
            return Err(QueryError::Execution(format!(
                "this should be an info metric, with float samples: {labels}"
            )));
        }
        Ok(crate::lookback::instant_points(samples, c, at, off, lookback, true)
            .map(|(pts, _)| Series::floats(labels, false, pts)))
    })
}

/// Which labels of the info series are added, and what becomes of a series
/// no info series matches.
struct DataLabels {
    /// The labels named by the data matchers; empty: all.
    names: HashSet<String>,
    /// Whether a series no info series matches is kept (unchanged).
    keep_unmatched: bool,
}

impl DataLabels {
    fn of(data: &[Matcher]) -> Self {
        Self {
            names: data.iter().map(|m| m.name.clone()).collect(),
            keep_unmatched: data.iter().all(Matcher::matches_empty),
        }
    }

    fn adds(&self, name: &str) -> bool {
        name != METRIC_NAME && (self.names.is_empty() || self.names.contains(name))
    }
}

/// An info series as the join sees it.
struct InfoKey {
    /// Its metric name's index among the info metrics read.
    name: usize,
    /// Its identifying labels.
    ids: Labels,
}

/// The identifying labels `labels` has.
fn identifying(labels: &Labels) -> Labels {
    let ids = IDENTIFYING_LABELS
        .iter()
        .filter_map(|&name| labels.get(name).map(|v| Label::new(name, v)))
        .collect();
    crate::series::labels_from(ids)
}

/// The info series that count at one step, by identifying labels: of each
/// info metric, the one read with the newest sample.
#[derive(Default)]
struct StepInfos<'a> {
    by_ids: HashMap<&'a Labels, Vec<(usize, f64)>>,
}

impl<'a> StepInfos<'a> {
    /// Puts info series `k`, read with the sample of time `t` (seconds).
    fn put(&mut self, keys: &'a [InfoKey], infos: &[Series], k: usize, t: f64) -> Result<()> {
        let candidates = self.by_ids.entry(&keys[k].ids).or_default();
        let Some(slot) = candidates
            .iter_mut()
            .find(|(other, _)| keys[*other].name == keys[k].name)
        else {
            candidates.push((k, t));
            return Ok(());
        };
        if t == slot.1 {
            return Err(QueryError::Execution(format!(
                "found duplicate series for info metric: existing {} @ {}, new {} @ {}",
                infos[slot.0].labels,
                seconds_to_ms(slot.1),
                infos[k].labels,
                seconds_to_ms(t)
            )));
        }
        if t > slot.1 {
            *slot = (k, t);
        }
        Ok(())
    }
}

fn seconds_to_ms(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

/// The input's series with the data labels of their info series, step by
/// step; info series among the input are passed on unchanged.
fn combine(input: Vec<Series>, is_info: &[bool], infos: &[Series], data: &DataLabels, c: Ctx) -> Result<Vec<Series>> {
    if infos.is_empty() && data.keep_unmatched {
        return Ok(input);
    }
    let mut names: Vec<&str> = Vec::new();
    let keys: Vec<InfoKey> = infos
        .iter()
        .map(|s| {
            let name = s.labels.metric_name().unwrap_or("");
            let idx = names.iter().position(|n| *n == name).unwrap_or_else(|| {
                names.push(name);
                names.len() - 1
            });
            InfoKey {
                name: idx,
                ids: identifying(&s.labels),
            }
        })
        .collect();
    let input_ids: Vec<Labels> = input.iter().map(|s| identifying(&s.labels)).collect();
    let mut input_steps: StepIter<Value> = StepIter::new(&input, c);
    let mut info_steps: StepIter<f64> = StepIter::new(infos, c);
    // The labels each input series had at its last step, by the info
    // series that gave them: most steps repeat the last.
    let mut last: Vec<Option<(Vec<usize>, Labels)>> = vec![None; input.len()];
    let mut acc = OutAcc::new();
    let mut points: Vec<(usize, Value)> = Vec::new();
    let mut matched: Vec<usize> = Vec::new();
    for i in 0..c.n() {
        let t = c.ts(i);
        points.clear();
        input_steps.at(t, |j, v| points.push((j, v.clone())));
        if points.is_empty() {
            continue;
        }
        let mut step = StepInfos::default();
        let mut failed = None;
        info_steps.at(t, |k, &origin| {
            if failed.is_none()
                && let Err(e) = step.put(&keys, infos, k, origin)
            {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        for (j, v) in points.drain(..) {
            let s = &input[j];
            let labels = if is_info[j] {
                s.labels.clone()
            } else {
                matched.clear();
                if let Some(candidates) = step.by_ids.get(&input_ids[j]) {
                    matched.extend(candidates.iter().map(|(k, _)| *k));
                    matched.sort_unstable();
                }
                if matched.is_empty() && !data.keep_unmatched {
                    continue;
                }
                match &last[j] {
                    Some((ks, labels)) if *ks == matched => labels.clone(),
                    _ => {
                        let labels = enriched(&s.labels, matched.iter().map(|&k| &infos[k].labels), data)?;
                        last[j] = Some((matched.clone(), labels.clone()));
                        labels
                    }
                }
            };
            let slot = acc.slot(&labels);
            Value::push(&mut acc, slot, s.drop_name, t, v)?;
        }
    }
    Ok(acc.series)
}

/// `base` with the data labels of the info series `infos` it does not have.
fn enriched<'a>(base: &Labels, infos: impl Iterator<Item = &'a Labels>, data: &DataLabels) -> Result<Labels> {
    let mut added: BTreeMap<&str, &str> = BTreeMap::new();
    for info in infos {
        for l in info.iter().filter(|l| data.adds(&l.name)) {
            if added.get(l.name.as_str()).is_some_and(|v| *v != l.value) {
                return Err(QueryError::Execution(format!("conflicting label: {}", l.name)));
            }
            if base.get(&l.name).is_none() {
                added.insert(&l.name, &l.value);
            }
        }
    }
    let mut out = base.clone();
    for (name, value) in added {
        out.set(name, value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        crate::series::labels_from(pairs.iter().map(|(n, v)| Label::new(*n, *v)).collect())
    }

    fn data(matchers: &[(&str, MatchOp, &str)]) -> DataLabels {
        let ms: Vec<Matcher> = matchers
            .iter()
            .map(|(n, op, v)| Matcher::new(*op, *n, *v).unwrap())
            .collect();
        DataLabels::of(&ms)
    }

    const C: Ctx = Ctx {
        start: 0,
        end: 120_000,
        step: 60_000,
    };

    fn series(l: &[(&str, &str)], pts: &[(i64, f64)]) -> Series {
        Series::floats(labels(l), false, pts.to_vec())
    }

    #[test]
    fn data_labels_are_added_unless_the_series_has_them() {
        let base = labels(&[("__name__", "m"), ("instance", "a"), ("data", "base")]);
        let info = labels(&[
            ("__name__", "target_info"),
            ("instance", "a"),
            ("data", "info"),
            ("x", "1"),
        ]);
        let got = enriched(&base, [&info].into_iter(), &data(&[])).unwrap();
        assert_eq!(
            got,
            labels(&[("__name__", "m"), ("data", "base"), ("instance", "a"), ("x", "1")])
        );
        let only_data = enriched(
            &base,
            [&info].into_iter(),
            &data(&[("data", MatchOp::RegexMatch, ".+")]),
        )
        .unwrap();
        assert_eq!(only_data, base);
    }

    #[test]
    fn two_info_metrics_giving_one_label_two_values_conflict() {
        let base = labels(&[("__name__", "m"), ("instance", "a")]);
        let a = labels(&[("__name__", "a_info"), ("instance", "a"), ("x", "1")]);
        let b = labels(&[("__name__", "b_info"), ("instance", "a"), ("x", "2")]);
        let err = enriched(&base, [&a, &b].into_iter(), &data(&[])).unwrap_err();
        assert!(err.to_string().contains("conflicting label: x"), "{err}");
    }

    #[test]
    fn the_newest_info_sample_wins_and_unmatched_steps_fall_back() {
        let input = vec![series(
            &[("__name__", "m"), ("instance", "a")],
            &[(0, 1.0), (60_000, 2.0), (120_000, 3.0)],
        )];
        let infos = vec![
            series(
                &[("__name__", "target_info"), ("instance", "a"), ("v", "old")],
                &[(0, 0.0), (60_000, 0.0)],
            ),
            series(
                &[("__name__", "target_info"), ("instance", "a"), ("v", "new")],
                &[(60_000, 60.0)],
            ),
        ];
        let out = combine(input, &[false], &infos, &data(&[]), C).unwrap();
        let mut got: Vec<(String, Vec<(i64, f64)>)> =
            out.iter().map(|s| (s.labels.to_string(), s.pts.clone())).collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            got,
            [
                ("m{instance=\"a\", v=\"new\"}".to_string(), vec![(60_000, 2.0)]),
                ("m{instance=\"a\", v=\"old\"}".to_string(), vec![(0, 1.0)]),
                ("m{instance=\"a\"}".to_string(), vec![(120_000, 3.0)]),
            ]
        );
    }

    #[test]
    fn info_samples_of_one_time_are_duplicates() {
        let input = vec![series(&[("__name__", "m"), ("instance", "a")], &[(0, 1.0)])];
        let infos = vec![
            series(
                &[("__name__", "target_info"), ("instance", "a"), ("v", "1")],
                &[(0, 0.0)],
            ),
            series(
                &[("__name__", "target_info"), ("instance", "a"), ("v", "2")],
                &[(0, 0.0)],
            ),
        ];
        let err = combine(input, &[false], &infos, &data(&[]), C).unwrap_err();
        assert!(
            err.to_string().contains("found duplicate series for info metric"),
            "{err}"
        );
    }

    #[test]
    fn unmatched_series_are_dropped_when_a_data_matcher_needs_a_value() {
        let input = vec![
            series(&[("__name__", "m"), ("instance", "b")], &[(0, 1.0)]),
            series(&[("__name__", "target_info"), ("instance", "b")], &[(0, 1.0)]),
        ];
        let out = combine(
            input,
            &[false, true],
            &[],
            &data(&[("data", MatchOp::RegexMatch, ".+")]),
            C,
        )
        .unwrap();
        // The info series among the input passes; the other has no match.
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].labels.metric_name(), Some("target_info"));
    }

    #[test]
    fn the_select_is_narrowed_to_the_identifying_values_of_non_info_series() {
        let sel = Selector {
            text: String::new(),
            offset: 0,
            at: None,
            sets: vec![crate::plan::MatcherSet {
                matchers: vec![Matcher::equal(METRIC_NAME, "target_info")],
                bound: usize::MAX,
                shards: 1,
            }],
            detect_resets: false,
            extended: None,
        };
        let input = vec![
            series(&[("instance", "a.b"), ("job", "j")], &[]),
            series(&[("instance", "c")], &[]),
            series(&[("instance", "info-only")], &[]),
        ];
        let narrowed = identified_select(&sel, &input, &[false, false, true]).unwrap().unwrap();
        let ms: Vec<(String, String)> = narrowed.sets[0]
            .matchers
            .iter()
            .map(|m| (m.name.clone(), m.value.clone()))
            .collect();
        assert_eq!(
            ms,
            [
                ("__name__".to_string(), "target_info".to_string()),
                ("instance".to_string(), r"a\.b|c".to_string()),
                ("job".to_string(), "j".to_string()),
            ]
        );
        let none = vec![series(&[("other", "x")], &[])];
        assert!(identified_select(&sel, &none, &[false]).unwrap().is_none());
    }
}
