//! PromQL's functions, resolved once from their names.
//!
//! Evaluation matches on these enums, never on names, and what a function
//! is (which argument is its range vector, whether it keeps `__name__`,
//! whether an aggregation of it can be folded into its select) is written
//! here only.

use crate::histogram_stats::HistogramStat;
use crate::ops::{by_name, name_in};
use crate::rate::Extrapolation;

/// A function call's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Time,
    Start,
    End,
    Pi,
    /// `min_of(a, b)` (`max` false) and `max_of(a, b)` of two scalars.
    ScalarExtremum {
        max: bool,
    },
    Vector,
    Scalar,
    /// A function of a range vector evaluated window by window.
    Range(RangeFn),
    AbsentOverTime,
    Absent,
    Timestamp,
    LabelReplace,
    LabelJoin,
    Sort {
        desc: bool,
    },
    SortByLabel {
        desc: bool,
    },
    HistogramQuantile,
    /// `histogram_quantile` of several quantiles, each labelled with its own.
    HistogramQuantiles,
    HistogramFraction,
    /// A statistic of each native histogram.
    HistogramStat(HistogramStat),
    Clamp(ClampFn),
    /// A field of the UTC calendar date of a value (or of the step time).
    Calendar(CalendarFn),
    /// An element-wise function of one value.
    Math(MathFn),
    /// The data labels of info series added to each series: lowered to
    /// [`crate::plan::Node::Info`], which selects the info series.
    Info,
}

impl Func {
    /// The function called `name`, if Cairn evaluates it.
    pub fn of(name: &str) -> Option<Self> {
        if let Some(f) = RangeFn::of(name) {
            return Some(Self::Range(f));
        }
        if let Some(f) = CalendarFn::of(name) {
            return Some(Self::Calendar(f));
        }
        if let Some(f) = MathFn::of(name) {
            return Some(Self::Math(f));
        }
        Some(match name {
            "time" => Self::Time,
            "start" => Self::Start,
            "end" => Self::End,
            "pi" => Self::Pi,
            "min_of" => Self::ScalarExtremum { max: false },
            "max_of" => Self::ScalarExtremum { max: true },
            "vector" => Self::Vector,
            "scalar" => Self::Scalar,
            "absent_over_time" => Self::AbsentOverTime,
            "absent" => Self::Absent,
            "timestamp" => Self::Timestamp,
            "label_replace" => Self::LabelReplace,
            "label_join" => Self::LabelJoin,
            "sort" => Self::Sort { desc: false },
            "sort_desc" => Self::Sort { desc: true },
            "sort_by_label" => Self::SortByLabel { desc: false },
            "sort_by_label_desc" => Self::SortByLabel { desc: true },
            "histogram_quantile" => Self::HistogramQuantile,
            "histogram_quantiles" => Self::HistogramQuantiles,
            "histogram_fraction" => Self::HistogramFraction,
            "histogram_count" => Self::HistogramStat(HistogramStat::Count),
            "histogram_sum" => Self::HistogramStat(HistogramStat::Sum),
            "histogram_avg" => Self::HistogramStat(HistogramStat::Avg),
            "histogram_stddev" => Self::HistogramStat(HistogramStat::Stddev),
            "histogram_stdvar" => Self::HistogramStat(HistogramStat::Stdvar),
            "clamp" => Self::Clamp(ClampFn::Clamp),
            "clamp_min" => Self::Clamp(ClampFn::Min),
            "clamp_max" => Self::Clamp(ClampFn::Max),
            "round" => Self::Clamp(ClampFn::Round),
            "info" => Self::Info,
            _ => return None,
        })
    }
}

/// Functions of one range vector, evaluated per window. Their other
/// arguments, if any, are scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeFn {
    Rate,
    Increase,
    Delta,
    Irate,
    Idelta,
    Deriv,
    PredictLinear,
    Changes,
    Resets,
    AvgOverTime,
    MinOverTime,
    MaxOverTime,
    SumOverTime,
    CountOverTime,
    LastOverTime,
    FirstOverTime,
    PresentOverTime,
    StddevOverTime,
    StdvarOverTime,
    MadOverTime,
    QuantileOverTime,
    TsOfMinOverTime,
    TsOfMaxOverTime,
    TsOfLastOverTime,
    TsOfFirstOverTime,
    DoubleExponentialSmoothing,
}

impl RangeFn {
    const ALL: [(&'static str, RangeFn); 26] = [
        ("rate", Self::Rate),
        ("increase", Self::Increase),
        ("delta", Self::Delta),
        ("irate", Self::Irate),
        ("idelta", Self::Idelta),
        ("deriv", Self::Deriv),
        ("predict_linear", Self::PredictLinear),
        ("changes", Self::Changes),
        ("resets", Self::Resets),
        ("avg_over_time", Self::AvgOverTime),
        ("min_over_time", Self::MinOverTime),
        ("max_over_time", Self::MaxOverTime),
        ("sum_over_time", Self::SumOverTime),
        ("count_over_time", Self::CountOverTime),
        ("last_over_time", Self::LastOverTime),
        ("first_over_time", Self::FirstOverTime),
        ("present_over_time", Self::PresentOverTime),
        ("stddev_over_time", Self::StddevOverTime),
        ("stdvar_over_time", Self::StdvarOverTime),
        ("mad_over_time", Self::MadOverTime),
        ("quantile_over_time", Self::QuantileOverTime),
        ("ts_of_min_over_time", Self::TsOfMinOverTime),
        ("ts_of_max_over_time", Self::TsOfMaxOverTime),
        ("ts_of_last_over_time", Self::TsOfLastOverTime),
        ("ts_of_first_over_time", Self::TsOfFirstOverTime),
        ("double_exponential_smoothing", Self::DoubleExponentialSmoothing),
    ];

    pub fn of(name: &str) -> Option<Self> {
        // Prometheus 2's name for double exponential smoothing.
        if name == "holt_winters" {
            return Some(Self::DoubleExponentialSmoothing);
        }
        by_name(&Self::ALL, name)
    }

    /// The name Prometheus gives it (also the storage's select hint).
    pub fn name(self) -> &'static str {
        name_in(&Self::ALL, self)
    }

    /// Which argument is the range vector: the others are scalars.
    pub fn range_arg(self) -> usize {
        match self {
            Self::QuantileOverTime => 1,
            _ => 0,
        }
    }

    /// How many scalar arguments it takes besides the range vector.
    pub fn scalar_args(self) -> usize {
        match self {
            Self::PredictLinear | Self::QuantileOverTime => 1,
            Self::DoubleExponentialSmoothing => 2,
            _ => 0,
        }
    }

    /// Whether the result keeps the input's `__name__` (every other range
    /// function drops it).
    pub fn keeps_name(self) -> bool {
        matches!(self, Self::LastOverTime | Self::FirstOverTime)
    }

    /// Whether an aggregation of it can take each series' result as the
    /// series is read (`fused.rs`): a result per window from the range
    /// vector alone, with no scalar argument evaluated per step.
    pub fn foldable(self) -> bool {
        self.scalar_args() == 0
    }

    /// How `rate`, `increase` and `delta` extrapolate; `None` for the others.
    pub fn extrapolation(self) -> Option<Extrapolation> {
        match self {
            Self::Rate => Some(Extrapolation::RATE),
            Self::Increase => Some(Extrapolation::INCREASE),
            Self::Delta => Some(Extrapolation::DELTA),
            _ => None,
        }
    }

    /// Whether Prometheus notes an input whose name does not look like a
    /// counter's.
    pub fn expects_counter(self) -> bool {
        matches!(self, Self::Rate | Self::Increase)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClampFn {
    Clamp,
    Min,
    Max,
    Round,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CalendarFn {
    DayOfMonth,
    DayOfWeek,
    DayOfYear,
    DaysInMonth,
    Hour,
    Minute,
    Month,
    Year,
}

impl CalendarFn {
    fn of(name: &str) -> Option<Self> {
        Some(match name {
            "day_of_month" => Self::DayOfMonth,
            "day_of_week" => Self::DayOfWeek,
            "day_of_year" => Self::DayOfYear,
            "days_in_month" => Self::DaysInMonth,
            "hour" => Self::Hour,
            "minute" => Self::Minute,
            "month" => Self::Month,
            "year" => Self::Year,
            _ => return None,
        })
    }

    /// The field of the UTC date at `v` seconds since the epoch.
    pub fn of_time(self, v: f64) -> f64 {
        // Go's int64(v) truncates toward zero, as `as` does; NaN, the
        // infinities and values beyond int64 become -2^63 (amd64's
        // conversion, where `as` would saturate), a time Go's calendar
        // wraps around to 292277026596-12-04 15:30:08, a Sunday.
        // -2^63 itself is that time too.
        const LIMIT: f64 = -(i64::MIN as f64);
        if v.is_nan() || v <= -LIMIT || v >= LIMIT {
            return match self {
                Self::DayOfMonth => 4.0,
                Self::DayOfWeek => 0.0,
                Self::DayOfYear => 339.0,
                Self::DaysInMonth => 31.0,
                Self::Hour => 15.0,
                Self::Minute => 30.0,
                Self::Month => 12.0,
                Self::Year => 292_277_026_596.0,
            };
        }
        let t = crate::calendar::civil(v as i64);
        (match self {
            Self::DayOfMonth => t.day,
            Self::DayOfWeek => t.weekday,
            Self::DayOfYear => t.day_of_year,
            Self::DaysInMonth => t.days_in_month,
            Self::Hour => t.hour,
            Self::Minute => t.minute,
            Self::Month => t.month,
            Self::Year => t.year,
        }) as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MathFn {
    Abs,
    Ceil,
    Floor,
    Exp,
    Sqrt,
    Ln,
    Log2,
    Log10,
    Sgn,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Asinh,
    Acosh,
    Atanh,
    Deg,
    Rad,
}

impl MathFn {
    fn of(name: &str) -> Option<Self> {
        Some(match name {
            "abs" => Self::Abs,
            "ceil" => Self::Ceil,
            "floor" => Self::Floor,
            "exp" => Self::Exp,
            "sqrt" => Self::Sqrt,
            "ln" => Self::Ln,
            "log2" => Self::Log2,
            "log10" => Self::Log10,
            "sgn" => Self::Sgn,
            "sin" => Self::Sin,
            "cos" => Self::Cos,
            "tan" => Self::Tan,
            "asin" => Self::Asin,
            "acos" => Self::Acos,
            "atan" => Self::Atan,
            "sinh" => Self::Sinh,
            "cosh" => Self::Cosh,
            "tanh" => Self::Tanh,
            "asinh" => Self::Asinh,
            "acosh" => Self::Acosh,
            "atanh" => Self::Atanh,
            "deg" => Self::Deg,
            "rad" => Self::Rad,
            _ => return None,
        })
    }

    /// The function itself, looked up once per call rather than per value.
    pub fn kernel(self) -> fn(f64) -> f64 {
        match self {
            Self::Abs => f64::abs,
            Self::Ceil => f64::ceil,
            Self::Floor => f64::floor,
            Self::Exp => f64::exp,
            Self::Sqrt => f64::sqrt,
            Self::Ln => f64::ln,
            Self::Log2 => f64::log2,
            Self::Log10 => f64::log10,
            Self::Sgn => |x| {
                if x < 0.0 {
                    -1.0
                } else if x > 0.0 {
                    1.0
                } else {
                    x
                }
            },
            Self::Sin => f64::sin,
            Self::Cos => f64::cos,
            Self::Tan => f64::tan,
            Self::Asin => f64::asin,
            Self::Acos => f64::acos,
            Self::Atan => f64::atan,
            Self::Sinh => f64::sinh,
            Self::Cosh => f64::cosh,
            Self::Tanh => f64::tanh,
            Self::Asinh => f64::asinh,
            Self::Acosh => f64::acosh,
            Self::Atanh => f64::atanh,
            Self::Deg => |x| x * 180.0 / std::f64::consts::PI,
            Self::Rad => |x| x * std::f64::consts::PI / 180.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_beyond_int64_are_gos_wrapped_minimum() {
        // Prometheus 3.14 (amd64) answers these for every non-finite or
        // out-of-range time, e.g. year(vector(NaN)) and hour(vector(1e300)).
        let want = [
            (CalendarFn::Year, 292_277_026_596.0),
            (CalendarFn::Month, 12.0),
            (CalendarFn::DayOfMonth, 4.0),
            (CalendarFn::DayOfWeek, 0.0),
            (CalendarFn::DayOfYear, 339.0),
            (CalendarFn::DaysInMonth, 31.0),
            (CalendarFn::Hour, 15.0),
            (CalendarFn::Minute, 30.0),
        ];
        for v in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            -1e300,
            9.3e18,
            -9.3e18,
            i64::MIN as f64,
        ] {
            for (f, x) in want {
                assert_eq!(f.of_time(v), x, "{f:?} of {v}");
            }
        }
        // In range, the proleptic calendar (9.2e18 s is 291536396232-08-31 11:33).
        assert_eq!(CalendarFn::Year.of_time(9.2e18), 291_536_396_232.0);
        assert_eq!(CalendarFn::Month.of_time(9.2e18), 8.0);
        assert_eq!(CalendarFn::Minute.of_time(9.2e18), 33.0);
        assert_eq!(CalendarFn::Year.of_time(-6.3e10), -27.0);
    }

    #[test]
    fn every_range_function_round_trips_by_name() {
        for (name, f) in RangeFn::ALL {
            assert_eq!(RangeFn::of(name), Some(f));
            assert_eq!(f.name(), name);
            assert_eq!(Func::of(name), Some(Func::Range(f)));
        }
        assert_eq!(RangeFn::of("holt_winters"), Some(RangeFn::DoubleExponentialSmoothing));
    }

    #[test]
    fn names_are_spelled_as_the_parser_spells_them() {
        let names = RangeFn::ALL.iter().map(|(n, _)| *n).chain([
            "time",
            "pi",
            "vector",
            "scalar",
            "absent",
            "timestamp",
            "label_replace",
            "label_join",
            "sort_by_label_desc",
            "histogram_quantile",
            "histogram_quantiles",
            "info",
            "clamp",
            "round",
            "day_of_week",
            "year",
            "sgn",
            "rad",
        ]);
        for name in names {
            assert!(Func::of(name).is_some(), "{name}");
            // Wrong arguments are an error too, but not this one.
            let err = promql_parser::parser::parse(&format!("{name}()"))
                .err()
                .unwrap_or_default();
            assert!(!err.contains("unknown function"), "{name}: {err}");
        }
    }
}
