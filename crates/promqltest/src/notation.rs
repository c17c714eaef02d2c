//! Prometheus' notation of native histograms in test scripts:
//! `{{schema:0 sum:5 count:4 z_bucket:1 z_bucket_w:0.001 buckets:[1 2 1]
//! offset:1 n_buckets:[1] n_offset:0 custom_values:[1 2]
//! counter_reset_hint:gauge}}`, each key optional; buckets are listed
//! densely from their offset.

use std::sync::Arc;

use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, Histogram, ResetHint};

/// A histogram as a script states it: `hint_set` tells whether the script
/// named a counter reset hint (only then is the hint compared).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stated {
    pub h: Histogram,
    pub hint_set: bool,
}

/// Parses the inside of `{{...}}`.
pub(crate) fn parse_histogram(inner: &str) -> Result<Stated, String> {
    let mut h = Histogram::default();
    let mut hint_set = false;
    let (mut buckets, mut offset, mut n_buckets, mut n_offset) = (Vec::new(), 0i32, Vec::new(), 0i32);
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once(':')
            .ok_or_else(|| format!("bad histogram item in {inner:?}"))?;
        let key = key.trim();
        let after = after.trim_start();
        let (value, next) = if let Some(list) = after.strip_prefix('[') {
            let (list, next) = list
                .split_once(']')
                .ok_or_else(|| format!("unclosed list in {inner:?}"))?;
            (list, next)
        } else {
            after.split_at(after.find(char::is_whitespace).unwrap_or(after.len()))
        };
        rest = next.trim_start();
        let num = || number(value).ok_or_else(|| format!("bad number {value:?} for {key}"));
        let list = || {
            value
                .split_whitespace()
                .map(|v| number(v).ok_or_else(|| format!("bad number {v:?}")))
                .collect::<Result<Vec<f64>, String>>()
        };
        match key {
            "schema" => h.schema = value.parse().map_err(|_| format!("bad schema {value:?}"))?,
            "sum" => h.sum = num()?,
            "count" => h.count = num()?,
            "z_bucket" => h.zero_count = num()?,
            "z_bucket_w" => h.zero_threshold = num()?,
            "buckets" => buckets = list()?,
            "n_buckets" => n_buckets = list()?,
            "offset" => offset = value.parse().map_err(|_| format!("bad offset {value:?}"))?,
            "n_offset" => n_offset = value.parse().map_err(|_| format!("bad offset {value:?}"))?,
            "custom_values" => h.custom_bounds = Some(Arc::from(list()?)),
            "counter_reset_hint" => {
                hint_set = true;
                h.reset_hint = match value {
                    "unknown" => ResetHint::Unknown,
                    "reset" => ResetHint::Reset,
                    "not_reset" => ResetHint::NotReset,
                    "gauge" => ResetHint::Gauge,
                    _ => return Err(format!("bad counter_reset_hint {value:?}")),
                };
            }
            _ => return Err(format!("unknown histogram key {key:?}")),
        }
    }
    if h.custom_bounds.is_some() {
        h.schema = CUSTOM_BUCKETS_SCHEMA;
    }
    let dense = |counts: Vec<f64>, from: i32| counts.into_iter().zip(from..).map(|(c, i)| (i, c)).collect();
    h.positive = dense(buckets, offset);
    h.negative = dense(n_buckets, n_offset);
    Ok(Stated { h, hint_set })
}

fn number(s: &str) -> Option<f64> {
    match s.trim_start_matches('+').to_ascii_lowercase().as_str() {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        t => t.parse().ok(),
    }
}

/// A values token that starts with `{{`: one histogram (`{{..}}`), a
/// repetition (`{{..}}x3`: four values), or a series growing or shrinking
/// by a step (`{{..}}+{{..}}x3`). Returns the histograms and the rest of
/// the line.
pub(crate) fn parse_histogram_token(s: &str) -> Result<(Vec<Stated>, &str), String> {
    let (base, rest) = braced(s)?;
    if let Some(r) = rest.strip_prefix('x') {
        let (n, rest) = count(r)?;
        return Ok((vec![base; n + 1], rest));
    }
    let sign = match rest.as_bytes().first() {
        Some(b'+') => 1.0,
        Some(b'-') => -1.0,
        _ => return Ok((vec![base], rest)),
    };
    let (inc, rest) = braced(&rest[1..])?;
    let rest = rest
        .strip_prefix('x')
        .ok_or_else(|| format!("expected x<n> after {s:?}"))?;
    let (n, rest) = count(rest)?;
    let mut out = vec![Stated {
        h: base.h,
        hint_set: inc.hint_set,
    }];
    for _ in 0..n {
        let mut next = out[out.len() - 1].h.clone();
        let done = if sign > 0.0 { next.add(&inc.h) } else { next.sub(&inc.h) };
        done.map_err(|_| "cannot combine custom and exponential buckets".to_string())?;
        out.push(Stated {
            h: next,
            hint_set: inc.hint_set,
        });
    }
    Ok((out, rest))
}

fn braced(s: &str) -> Result<(Stated, &str), String> {
    let inner = s.strip_prefix("{{").ok_or_else(|| format!("expected {{{{ in {s:?}"))?;
    let end = inner.find("}}").ok_or_else(|| format!("unclosed {{{{ in {s:?}"))?;
    Ok((parse_histogram(&inner[..end])?, &inner[end + 2..]))
}

fn count(s: &str) -> Result<(usize, &str), String> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = s[..end].parse().map_err(|_| format!("bad repeat count in {s:?}"))?;
    Ok((n, &s[end..]))
}

/// Whether two histograms are equal as Prometheus' test scripts compare
/// them: empty buckets ignored, floats within `close`, the reset hint only
/// when the expectation states it.
pub(crate) fn histograms_match(want: &Stated, got: &Histogram, close: impl Fn(f64, f64) -> bool) -> bool {
    let (w, g) = (&want.h, got);
    let buckets_match = |a: &[(i32, f64)], b: &[(i32, f64)]| {
        let a: Vec<_> = a.iter().filter(|x| x.1 != 0.0).collect();
        let b: Vec<_> = b.iter().filter(|x| x.1 != 0.0).collect();
        a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.0 == y.0 && close(x.1, y.1))
    };
    w.schema == g.schema
        && close(w.count, g.count)
        && close(w.sum, g.sum)
        && (!w.uses_custom_buckets() || w.bounds() == g.bounds())
        && w.zero_threshold == g.zero_threshold
        && close(w.zero_count, g.zero_count)
        && buckets_match(&w.negative, &g.negative)
        && buckets_match(&w.positive, &g.positive)
        && (!want.hint_set || w.reset_hint == g.reset_hint)
}

/// A histogram in the script's notation, for failure messages.
pub(crate) fn describe(h: &Histogram) -> String {
    let mut s = format!("{{{{schema:{} count:{} sum:{}", h.schema, h.count, h.sum);
    if h.zero_count != 0.0 || h.zero_threshold != 0.0 {
        s += &format!(" z_bucket:{} z_bucket_w:{}", h.zero_count, h.zero_threshold);
    }
    let side = |name: &str, b: &[(i32, f64)]| {
        if b.is_empty() {
            return String::new();
        }
        let counts: Vec<String> = b.iter().map(|x| format!("{}@{}", x.1, x.0)).collect();
        format!(" {name}:[{}]", counts.join(" "))
    };
    s += &side("buckets", &h.positive);
    s += &side("n_buckets", &h.negative);
    if let Some(b) = &h.custom_bounds {
        s += &format!(" custom_values:{b:?}");
    }
    if h.reset_hint != ResetHint::Unknown {
        s += &format!(" counter_reset_hint:{:?}", h.reset_hint);
    }
    s + "}}"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_reads_every_key() {
        let s = parse_histogram(
            "schema:1 sum:5 count:4 z_bucket:1 z_bucket_w:0.001 buckets:[1 2 1] n_buckets:[3] offset:1 n_offset:-2 counter_reset_hint:gauge",
        )
        .unwrap();
        assert_eq!(s.h.schema, 1);
        assert_eq!(
            (s.h.sum, s.h.count, s.h.zero_count, s.h.zero_threshold),
            (5.0, 4.0, 1.0, 0.001)
        );
        assert_eq!(s.h.positive, [(1, 1.0), (2, 2.0), (3, 1.0)]);
        assert_eq!(s.h.negative, [(-2, 3.0)]);
        assert_eq!(s.h.reset_hint, ResetHint::Gauge);
        assert!(s.hint_set);
    }

    #[test]
    fn notation_custom_values_mean_custom_buckets() {
        let s = parse_histogram("custom_values:[1 2] buckets:[1 0 3] count:4 sum:3").unwrap();
        assert_eq!(s.h.schema, CUSTOM_BUCKETS_SCHEMA);
        assert_eq!(s.h.bounds(), [1.0, 2.0]);
        assert!(!s.hint_set);
    }

    #[test]
    fn notation_series_grow_by_a_step() {
        let (hs, rest) =
            parse_histogram_token("{{sum:1 count:1 buckets:[1]}}+{{sum:2 count:2 buckets:[2]}}x2 5").unwrap();
        assert_eq!(rest, " 5");
        let counts: Vec<f64> = hs.iter().map(|s| s.h.count).collect();
        assert_eq!(counts, [1.0, 3.0, 5.0]);
        assert_eq!(hs[2].h.positive, [(0, 5.0)]);
        let (hs, _) = parse_histogram_token("{{count:1}}x3").unwrap();
        assert_eq!(hs.len(), 4);
    }

    #[test]
    fn comparison_ignores_empty_buckets() {
        let want = parse_histogram("count:2 sum:1 buckets:[1 0 1]").unwrap();
        let mut got = want.h.clone();
        got.positive = vec![(0, 1.0), (2, 1.0 + 1e-9)];
        assert!(histograms_match(&want, &got, |a, b| (a - b).abs() < 1e-6));
        got.positive = vec![(0, 1.0), (1, 1.0)];
        assert!(!histograms_match(&want, &got, |a, b| (a - b).abs() < 1e-6));
    }
}
