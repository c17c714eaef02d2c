//! Which queries are small enough to evaluate on the caller's thread.
//!
//! The HTTP API runs queries on tokio's blocking pool, so a long query never
//! holds up an async worker. For the many tiny queries of dashboards and
//! rules (one host's panel: a few series), the hand-offs to that pool and
//! back cost about as much as the evaluation. A query is small when its
//! selectors match at most [`MAX_SERIES`] series in all, each over at most
//! [`MAX_SPAN_MS`] of data, with no subquery: at most a few hundred
//! thousand samples, well under a millisecond.

use cairn_storage::Queryable;
use promql_parser::parser::{Expr, VectorSelector};

use crate::eval::{convert_matchers, offset_ms};

/// Series a small query may select, over all its selectors (the bound the
/// index gives before reading anything; a series in two day partitions
/// counts twice).
const MAX_SERIES: usize = 16;

/// Time a small query's selector may reach over: its steps' span plus its
/// range or lookback.
const MAX_SPAN_MS: i64 = 24 * 3_600_000;

/// Whether `ast` evaluated over `[start, end]` (ms) with `lookback` is
/// small (see the module documentation). Errors count as not small: the
/// full evaluation reports them.
pub(crate) fn is_small(q: &dyn Queryable, ast: &Expr, start: i64, end: i64, lookback: i64) -> bool {
    let mut selectors = Vec::new();
    if !collect(ast, lookback, &mut selectors) {
        return false;
    }
    // One read view over every selector's reach: bounds per day partition
    // do not need each selector's own.
    let (mut mint, mut maxt) = (i64::MAX, i64::MIN);
    for &(vs, reach) in &selectors {
        let offset = offset_ms(&vs.offset);
        let (span, lo, hi) = match &vs.at {
            // Pinned to one time: one window of data, somewhere in the store.
            Some(_) => (reach, i64::MIN, i64::MAX),
            None => (
                end - start + reach,
                start.saturating_sub(offset).saturating_sub(reach),
                end.saturating_sub(offset),
            ),
        };
        if span > MAX_SPAN_MS {
            return false;
        }
        (mint, maxt) = (mint.min(lo), maxt.max(hi));
    }
    if selectors.is_empty() {
        return true;
    }
    let Ok(querier) = q.querier(mint, maxt) else {
        return false;
    };
    let mut series = 0usize;
    for (vs, _) in selectors {
        let Ok(sets) = convert_matchers(vs) else {
            return false;
        };
        for matchers in &sets {
            match querier.series_upper_bound(matchers) {
                Ok(n) => series = series.saturating_add(n),
                Err(_) => return false,
            }
            if series > MAX_SERIES {
                return false;
            }
        }
    }
    true
}

/// Adds every selector of `e` with how far back it reads (range or
/// lookback); false if `e` holds a subquery.
fn collect<'e>(e: &'e Expr, lookback: i64, out: &mut Vec<(&'e VectorSelector, i64)>) -> bool {
    match e {
        Expr::VectorSelector(vs) => {
            out.push((vs, lookback));
            true
        }
        Expr::MatrixSelector(ms) => {
            out.push((&ms.vs, ms.range.as_millis() as i64));
            true
        }
        Expr::Subquery(_) | Expr::Extension(_) => false,
        Expr::Aggregate(a) => {
            a.param.as_deref().is_none_or(|p| collect(p, lookback, out)) && collect(&a.expr, lookback, out)
        }
        Expr::Unary(u) => collect(&u.expr, lookback, out),
        Expr::Binary(b) => collect(&b.lhs, lookback, out) && collect(&b.rhs, lookback, out),
        Expr::Paren(p) => collect(&p.expr, lookback, out),
        Expr::Call(call) => call.args.args.iter().all(|a| collect(a, lookback, out)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use cairn_model::{Labels, Matcher, Sample};
    use cairn_storage::{Appendable, MemStorage, Querier, Queryable, SelectHints, SeriesSet, StorageError};

    use crate::{Engine, QueryOptions};

    const HOUR: i64 = 3_600_000;

    /// `MemStorage` (which knows no bound without reading) with an exact
    /// `series_upper_bound`, as the TSDB's index gives.
    struct Bounded(MemStorage);
    struct BoundedQuerier(Box<dyn Querier>);

    impl Queryable for Bounded {
        fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
            Ok(Box::new(BoundedQuerier(self.0.querier(mint, maxt)?)))
        }
    }

    impl Querier for BoundedQuerier {
        fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
            self.0.select(hints, matchers)
        }
        fn series_upper_bound(&self, matchers: &[Matcher]) -> Result<usize, StorageError> {
            Ok(self.0.select(&SelectHints::default(), matchers)?.count())
        }
        fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError> {
            self.0.label_names(matchers, limit)
        }
        fn label_values(
            &self,
            name: &str,
            matchers: &[Matcher],
            limit: Option<usize>,
        ) -> Result<Vec<String>, StorageError> {
            self.0.label_values(name, matchers, limit)
        }
    }

    /// 20 series of `m`, one per `host`.
    fn storage() -> MemStorage {
        let s = MemStorage::new();
        let mut app = s.appender();
        for i in 0..20 {
            let labels = Labels::from_pairs([("__name__", "m"), ("host", &i.to_string())]);
            app.append(&labels, &[Sample::new(HOUR, 1.0)]).unwrap();
        }
        app.commit().unwrap();
        s
    }

    #[test]
    fn few_series_over_at_most_a_day_without_subqueries() {
        let e = Engine::default();
        let bounded = Bounded(storage());
        let small = |q: &str, start: i64, end: i64| e.is_small(&bounded, q, start, end, &QueryOptions::default());
        assert!(small(r#"rate(m{host="1"}[5m])"#, 0, 12 * HOUR));
        assert!(small(r#"m{host=~"1|2"} / on (host) m{host=~"2|3"}"#, 0, 12 * HOUR));
        assert!(small(r#"sum(m{host="1"} @ 100)"#, 0, 30 * 24 * HOUR), "pinned by @");
        assert!(small("1 + 2", 0, 30 * 24 * HOUR));
        assert!(small("rate(", 0, HOUR), "parse errors answer at once");
        assert!(!small("sum(m)", 0, HOUR), "20 series");
        assert!(!small(r#"m{host=~"1.*"} + m{host=~"1.*"}"#, 0, HOUR), "11 + 11 series");
        assert!(!small(r#"rate(m{host="1"}[5m])"#, 0, 24 * HOUR), "a day plus the range");
        assert!(!small(r#"max_over_time(m{host="1"}[10m:1m])"#, 0, HOUR), "subquery");
        // Without a cheap bound, nothing is small.
        let unbounded = storage();
        assert!(!e.is_small(&unbounded, r#"m{host="1"}"#, 0, HOUR, &QueryOptions::default()));
    }
}
