//! Graphite plaintext protocol, as Carbon's line receiver reads it (one
//! metric per line on a TCP connection):
//!
//! ```text
//! path.to.metric[;tag=value...] value [timestamp]
//! ```
//!
//! - The path is the metric name, dots and all (as VictoriaMetrics stores
//!   it); `;tag=value` segments (Graphite 1.1 tags) are labels.
//! - The value is a float (`NaN` and `Inf` included, as Carbon's `float()`).
//! - The timestamp is Unix seconds, fractions allowed; missing or `-1`
//!   means the time the line arrived.
//! - Fields are separated by spaces or tabs; blank lines are skipped; a bad
//!   line is counted and skipped (see [`crate::text_import`]).

use cairn_model::{Label, METRIC_NAME, Sample};

use crate::text_import::{ImportResult, finish_labels, lines, seconds_to_ms, truncate};
use crate::{DecodeLimits, SeriesSamples};

/// Decodes a run of complete lines; `now_ms` stamps lines without a timestamp.
pub fn decode_graphite(body: &[u8], now_ms: i64, limits: &DecodeLimits) -> ImportResult {
    let mut out = ImportResult::default();
    for (n, line) in lines(body) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match read_line(line, now_ms, limits) {
            Ok(series) => out.batch.extend([series]),
            Err(reason) => out.reject(n, reason),
        }
    }
    out
}

fn read_line(line: &[u8], now_ms: i64, limits: &DecodeLimits) -> Result<SeriesSamples, String> {
    let line = std::str::from_utf8(line).map_err(|_| "invalid UTF-8".to_string())?;
    let mut tokens = line.split_ascii_whitespace();
    let (Some(path), Some(value)) = (tokens.next(), tokens.next()) else {
        return Err("want \"path value [timestamp]\"".into());
    };
    let timestamp = tokens.next();
    if tokens.next().is_some() {
        return Err("more than three fields".into());
    }
    let mut segments = path.split(';');
    let name = segments.next().unwrap_or_default();
    if name.is_empty() {
        return Err("empty metric path".into());
    }
    let mut labels = vec![Label::new(METRIC_NAME, name)];
    for tag in segments {
        let Some((key, value)) = tag.split_once('=') else {
            return Err(format!("tag {:?} is not key=value", truncate(tag)));
        };
        if key.is_empty() || value.is_empty() {
            return Err(format!("tag {:?} has an empty key or value", truncate(tag)));
        }
        labels.push(Label::new(key, value));
    }
    let v: f64 = value
        .parse()
        .map_err(|_| format!("invalid value {:?}", truncate(value)))?;
    let t = match timestamp {
        // Carbon compares the number: `-1.0` means now too.
        Some(ts) if ts.parse::<f64>() == Ok(-1.0) => now_ms,
        None => now_ms,
        Some(ts) => seconds_to_ms(ts).ok_or_else(|| format!("invalid timestamp {:?}", truncate(ts)))?,
    };
    let labels = finish_labels(labels, &[], limits)?;
    Ok(SeriesSamples::new(labels, vec![Sample::new(t, v)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn flat(body: &str) -> (Vec<(String, i64, f64)>, ImportResult) {
        let r = decode_graphite(body.as_bytes(), NOW, &DecodeLimits::default());
        let flat = r
            .batch
            .to_series()
            .iter()
            .flat_map(|s| s.samples.iter().map(|x| (s.labels.to_string(), x.t, x.v)))
            .collect();
        (flat, r)
    }

    #[test]
    fn paths_tags_values_and_timestamps() {
        let (got, r) = flat(
            "servers.web01.cpu.load 0.75 1700000000\n\
             disk.used;host=web01;mount=/var 12e9 1700000000.5\n\
             \tqueue.depth\t7\n\
             temp -3 -1\r\n\
             temp2 4 -1.0\n",
        );
        assert_eq!(r.first_error, None);
        assert_eq!(
            got,
            vec![
                (r#"servers.web01.cpu.load"#.into(), 1_700_000_000_000, 0.75),
                (
                    r#"disk.used{host="web01", mount="/var"}"#.into(),
                    1_700_000_000_500,
                    12e9
                ),
                (r#"queue.depth"#.into(), NOW, 7.0),
                (r#"temp"#.into(), NOW, -3.0),
                (r#"temp2"#.into(), NOW, 4.0),
            ]
        );
        // Only the number -1 means now: a time near it is a time.
        let (got, _) = flat("near -3 -1.0000000000123\n");
        assert_eq!(got, vec![("near".into(), -1000, -3.0)]);
        let (got, _) = flat("a NaN 1\nb -Inf 1\n");
        assert!(got[0].2.is_nan());
        assert_eq!(got[1].2, f64::NEG_INFINITY);
    }

    #[test]
    fn bad_lines_are_counted_good_ones_kept() {
        let body = "ok 1 1\nonlyname\na;b 1 1\na;=x 1 1\na x 1\na 1 x\na 1 1 extra\n;t=v 1 1\nok 2 2\n\n";
        let (got, r) = flat(body);
        assert_eq!(got.len(), 2);
        assert_eq!(r.bad_lines, 7);
        assert_eq!(r.first_error.unwrap().line, 2);
        for (line, want) in [
            ("onlyname", "want"),
            ("a;b 1 1", "not key=value"),
            ("a;=x 1 1", "empty key"),
            ("a x 1", "invalid value"),
            ("a 1 x", "invalid timestamp"),
            ("a 1 1e300", "invalid timestamp"),
            ("a 1 1 extra", "more than three"),
            (";t=v 1 1", "empty metric path"),
            ("a;t=1;t=2 1 1", "duplicate label"),
        ] {
            let (_, r) = flat(line);
            let reason = r.first_error.unwrap().reason;
            assert!(reason.contains(want), "{line:?}: {reason}");
        }
    }

    #[test]
    fn timestamps_in_seconds() {
        assert_eq!(seconds_to_ms("1700000000"), Some(1_700_000_000_000));
        assert_eq!(seconds_to_ms("1700000000.123"), Some(1_700_000_000_123));
        assert_eq!(seconds_to_ms("-2"), Some(-2000));
        // Found by fuzz/graphite (a harness bug, kept as a check of negative fractions).
        assert_eq!(seconds_to_ms("-6.1"), Some(-6100));
        assert_eq!(seconds_to_ms("9223372036854775807"), None);
        assert_eq!(seconds_to_ms("NaN"), None);
        assert_eq!(seconds_to_ms("inf"), None);
    }
}
