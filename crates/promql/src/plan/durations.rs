//! A query's ranges, subquery steps and offsets in milliseconds. Written as
//! duration expressions, they are evaluated here, per query: `step()` and
//! `range()` stand for its step and its end minus its start (both 0 for an
//! instant query, as in Prometheus).

use std::time::Duration;

use promql_parser::parser::{DurationExpr, Offset};

use crate::QueryError;
use crate::eval::Result;
use crate::steps::Ctx;

#[derive(Debug, Clone, Copy)]
pub(crate) struct QueryTimes {
    step_ms: i64,
    range_ms: i64,
}

impl QueryTimes {
    pub fn of(ctx: &Ctx) -> Self {
        Self {
            step_ms: ctx.step,
            range_ms: ctx.end - ctx.start,
        }
    }

    /// What `step()` stands for, in seconds.
    pub fn step_secs(&self) -> f64 {
        self.step_ms as f64 / 1000.0
    }

    /// What `range()` stands for, in seconds.
    pub fn range_secs(&self) -> f64 {
        self.range_ms as f64 / 1000.0
    }

    /// A range vector's or subquery's range.
    pub fn range(&self, fixed: &Duration, expr: &Option<DurationExpr>) -> Result<i64> {
        match expr {
            Some(e) => self.eval(e, false),
            None => Ok(ms(fixed)),
        }
    }

    /// A subquery's step, `None` when not given.
    pub fn step(&self, fixed: &Option<Duration>, expr: &Option<DurationExpr>) -> Result<Option<i64>> {
        match (fixed, expr) {
            (_, Some(e)) => self.eval(e, false).map(Some),
            (Some(d), None) => Ok(Some(ms(d))),
            (None, None) => Ok(None),
        }
    }

    pub fn offset(&self, offset: &Option<Offset>) -> Result<i64> {
        Ok(match offset {
            None => 0,
            Some(Offset::Pos(d)) => ms(d),
            Some(Offset::Neg(d)) => -ms(d),
            Some(Offset::Expr(e)) => self.eval(e, true)?,
        })
    }

    fn eval(&self, e: &DurationExpr, allow_negative: bool) -> Result<i64> {
        e.eval_ms(self.step_ms, self.range_ms, allow_negative)
            .map_err(|why| QueryError::BadData(format!("invalid parameter \"query\": {why}")))
    }
}

fn ms(d: &Duration) -> i64 {
    d.as_millis() as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use promql_parser::parser::{Expr, parse};

    fn range_query(start: i64, end: i64, step: i64) -> QueryTimes {
        QueryTimes::of(&Ctx { start, end, step })
    }

    fn matrix_range(query: &str, times: QueryTimes) -> Result<i64> {
        let Ok(Expr::MatrixSelector(ms)) = parse(query) else {
            panic!("{query}")
        };
        times.range(&ms.range, &ms.range_expr)
    }

    #[test]
    fn step_and_range_are_the_querys() {
        let times = range_query(50_000, 60_000, 5_000);
        assert_eq!(matrix_range("x[step()+1]", times).unwrap(), 6_000);
        assert_eq!(matrix_range("x[range()]", times).unwrap(), 10_000);
        assert_eq!(matrix_range("x[min_of(range(), 8s)]", times).unwrap(), 8_000);
        assert_eq!(matrix_range("x[5m]", times).unwrap(), 300_000);
        let Ok(Expr::Subquery(sq)) = parse("x[range():step()*2]") else {
            panic!()
        };
        assert_eq!(times.step(&sq.step, &sq.step_expr).unwrap(), Some(10_000));
        let Ok(Expr::VectorSelector(vs)) = parse("x offset -step()") else {
            panic!()
        };
        assert_eq!(times.offset(&vs.offset).unwrap(), -5_000);
    }

    #[test]
    fn an_instant_query_has_no_step_or_range() {
        let instant = QueryTimes::of(&Ctx {
            start: 50_000,
            end: 50_000,
            step: 0,
        });
        let Ok(Expr::VectorSelector(vs)) = parse("x offset range()") else {
            panic!()
        };
        assert_eq!(instant.offset(&vs.offset).unwrap(), 0);
        let err = matrix_range("x[step()]", instant).unwrap_err().to_string();
        assert!(err.ends_with("duration must be greater than 0"), "{err}");
    }

    #[test]
    fn errors_are_bad_data_in_prometheus_words() {
        let times = range_query(0, 10_000, 5_000);
        let err = matrix_range("x[1m/(step()-5)]", times).unwrap_err();
        assert!(
            matches!(&err, QueryError::BadData(m) if m.ends_with("division by zero")),
            "{err}"
        );
        let err = matrix_range("x[1m-range()*10]", times).unwrap_err();
        assert!(
            matches!(&err, QueryError::BadData(m) if m.ends_with("duration must be greater than 0")),
            "{err}"
        );
    }
}
