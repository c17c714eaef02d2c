//! PromQL's binary operators and aggregations, resolved once from the
//! parser's tokens.
//!
//! Evaluation matches on these enums, never on operator names, and what
//! each one is (a comparison, a set operation, accumulated step by step,
//! sensitive to the order of its input) is written here only.

use promql_parser::parser::token::TokenType;

use crate::QueryError;

/// The entry called `name` of a table of names.
pub(crate) fn by_name<T: Copy>(table: &[(&'static str, T)], name: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
}

/// The name of `v` in a table of names.
pub(crate) fn name_in<T: PartialEq>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|(_, x)| *x == v).map_or("", |(n, _)| n)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Atan2,
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    And,
    Or,
    Unless,
    /// `</`: the part of a histogram below a float.
    TrimUpper,
    /// `>/`: the part of a histogram above a float.
    TrimLower,
}

/// Whether the engine evaluates the binary operator or aggregation spelled
/// `name` (`+`, `and`, `atan2`, `topk`, ...).
pub fn supports_operator(name: &str) -> bool {
    BinOp::ALL.iter().any(|(n, _)| *n == name) || AggOp::ALL.iter().any(|(n, _)| *n == name)
}

impl BinOp {
    const ALL: [(&'static str, BinOp); 18] = [
        ("+", Self::Add),
        ("-", Self::Sub),
        ("*", Self::Mul),
        ("/", Self::Div),
        ("%", Self::Mod),
        ("^", Self::Pow),
        ("atan2", Self::Atan2),
        ("==", Self::Eq),
        ("!=", Self::Ne),
        (">", Self::Gt),
        ("<", Self::Lt),
        (">=", Self::Ge),
        ("<=", Self::Le),
        ("and", Self::And),
        ("or", Self::Or),
        ("unless", Self::Unless),
        ("</", Self::TrimUpper),
        (">/", Self::TrimLower),
    ];

    pub fn of(token: TokenType) -> Result<Self, QueryError> {
        let name = token.to_string();
        by_name(&Self::ALL, &name).ok_or_else(|| QueryError::BadData(format!("operator {name:?} not allowed here")))
    }

    pub fn name(self) -> &'static str {
        name_in(&Self::ALL, self)
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, Self::Eq | Self::Ne | Self::Gt | Self::Lt | Self::Ge | Self::Le)
    }

    /// `</`, `>/`: defined between a histogram and a float only.
    pub fn is_trim(self) -> bool {
        matches!(self, Self::TrimUpper | Self::TrimLower)
    }

    /// Whether the result is a new quantity, which loses the metric name
    /// (Prometheus' `changesMetricSchema`); comparisons and trims keep it.
    pub fn changes_metric_schema(self) -> bool {
        !(self.is_comparison() || self.is_trim() || self.is_set())
    }

    /// `and`, `or`, `unless`: defined between vectors only.
    pub fn is_set(self) -> bool {
        matches!(self, Self::And | Self::Or | Self::Unless)
    }

    /// `(value, keep)` of `l op r`: a comparison keeps `l` when it holds,
    /// arithmetic always keeps its result. Set operations have no element
    /// result (the parser allows them between vectors only, which match by
    /// labels instead).
    #[inline]
    pub fn apply(self, l: f64, r: f64) -> (f64, bool) {
        match self {
            Self::Add => (l + r, true),
            Self::Sub => (l - r, true),
            Self::Mul => (l * r, true),
            Self::Div => (l / r, true),
            Self::Mod => (l % r, true),
            Self::Pow => (l.powf(r), true),
            Self::Atan2 => (l.atan2(r), true),
            Self::Eq => (l, l == r),
            Self::Ne => (l, l != r),
            Self::Gt => (l, l > r),
            Self::Lt => (l, l < r),
            Self::Ge => (l, l >= r),
            Self::Le => (l, l <= r),
            Self::And | Self::Or | Self::Unless => {
                debug_assert!(false, "{self:?} has no element result");
                (l, true)
            }
            // Two floats do not trim: the pair is dropped (callers note why).
            Self::TrimUpper | Self::TrimLower => (l, false),
        }
    }

    /// `self`, or an error for a set operation where values are combined
    /// one by one.
    pub fn element_wise(self) -> Result<Self, QueryError> {
        if self.is_set() {
            return Err(QueryError::BadData(format!(
                "operator {:?} not allowed here",
                self.name()
            )));
        }
        Ok(self)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggOp {
    Sum,
    Avg,
    Count,
    Min,
    Max,
    Group,
    Stddev,
    Stdvar,
    Quantile,
    Topk,
    Bottomk,
    Limitk,
    LimitRatio,
    CountValues,
}

impl AggOp {
    const ALL: [(&'static str, AggOp); 14] = [
        ("sum", Self::Sum),
        ("avg", Self::Avg),
        ("count", Self::Count),
        ("min", Self::Min),
        ("max", Self::Max),
        ("group", Self::Group),
        ("stddev", Self::Stddev),
        ("stdvar", Self::Stdvar),
        ("quantile", Self::Quantile),
        ("topk", Self::Topk),
        ("bottomk", Self::Bottomk),
        ("limitk", Self::Limitk),
        ("limit_ratio", Self::LimitRatio),
        ("count_values", Self::CountValues),
    ];

    pub fn of(token: TokenType) -> Result<Self, QueryError> {
        let name = token.to_string();
        by_name(&Self::ALL, &name)
            .ok_or_else(|| QueryError::BadData(format!("aggregation \"{name}\" is not supported")))
    }

    pub fn name(self) -> &'static str {
        name_in(&Self::ALL, self)
    }

    /// Reduces each group to one value per step from the values alone, in
    /// an accumulator per (group, step) (`aggregate/accumulate.rs`).
    pub fn accumulates(self) -> bool {
        matches!(
            self,
            Self::Sum
                | Self::Avg
                | Self::Count
                | Self::Min
                | Self::Max
                | Self::Group
                | Self::Stddev
                | Self::Stdvar
                | Self::Quantile
        )
    }

    /// Accumulates a value and its compensation only (no count, mean or
    /// list of values).
    pub fn plain(self) -> bool {
        matches!(self, Self::Sum | Self::Count | Self::Min | Self::Max | Self::Group)
    }

    /// Combines a step's values in the order of its input series, where
    /// another order may change a last bit (float sums) or the sign of a
    /// zero (`min`, `max` keep the first of `-0` and `0`).
    pub fn combines_in_input_order(self) -> bool {
        matches!(
            self,
            Self::Sum | Self::Avg | Self::Stddev | Self::Stdvar | Self::Min | Self::Max
        )
    }

    /// The answer at a step depends on the order of the input series (which
    /// of equal values `topk` keeps, the first k of `limitk`) or the order
    /// of the output on other steps (`count_values`, and `topk`'s own).
    pub fn order_sensitive(self) -> bool {
        matches!(
            self,
            Self::Topk | Self::Bottomk | Self::Limitk | Self::LimitRatio | Self::CountValues
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promql_parser::parser::Expr;

    fn binop(q: &str) -> BinOp {
        let Expr::Binary(b) = crate::parse(q).unwrap() else {
            panic!("{q}")
        };
        BinOp::of(b.op).unwrap()
    }

    fn aggop(q: &str) -> AggOp {
        let Expr::Aggregate(a) = crate::parse(q).unwrap() else {
            panic!("{q}")
        };
        AggOp::of(a.op).unwrap()
    }

    #[test]
    fn tokens_resolve_to_their_operators() {
        assert_eq!(binop("a + b"), BinOp::Add);
        assert_eq!(binop("a atan2 b"), BinOp::Atan2);
        assert_eq!(binop("a >= bool b"), BinOp::Ge);
        assert_eq!(binop("a unless b"), BinOp::Unless);
        assert!(binop("a != b").is_comparison() && !binop("a ^ b").is_comparison());
        assert!(binop("a or b").is_set());
        assert_eq!(binop("a </ 1"), BinOp::TrimUpper);
        assert_eq!(binop("a >/ on (x) b"), BinOp::TrimLower);
        assert!(binop("a </ 1").is_trim() && !binop("a </ 1").is_comparison());
        assert!(!binop("a >/ 1").changes_metric_schema() && !binop("a > 1").changes_metric_schema());
        assert!(binop("a atan2 b").changes_metric_schema() && !binop("a and b").changes_metric_schema());
        assert_eq!(aggop("sum by (x) (a)"), AggOp::Sum);
        assert_eq!(aggop("limit_ratio(0.5, a)"), AggOp::LimitRatio);
        assert_eq!(aggop(r#"count_values("v", a)"#), AggOp::CountValues);
        assert!(aggop("quantile(0.5, a)").accumulates() && !aggop("quantile(0.5, a)").plain());
        assert!(aggop("topk(1, a)").order_sensitive() && !aggop("topk(1, a)").accumulates());
    }

    #[test]
    fn names_round_trip() {
        for (name, op) in BinOp::ALL {
            assert_eq!(op.name(), name);
        }
        for (name, op) in AggOp::ALL {
            assert_eq!(op.name(), name);
        }
    }

    #[test]
    fn comparisons_keep_the_left_value_when_they_hold() {
        assert_eq!(BinOp::Gt.apply(2.0, 1.0), (2.0, true));
        assert_eq!(BinOp::Le.apply(2.0, 1.0), (2.0, false));
        assert!(!BinOp::Eq.apply(f64::NAN, f64::NAN).1);
        assert_eq!(BinOp::Pow.apply(2.0, 10.0), (1024.0, true));
        assert_eq!(BinOp::Mod.apply(-7.0, 3.0), (-1.0, true));
    }
}
