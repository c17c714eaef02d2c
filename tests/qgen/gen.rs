//! A grammar-based random PromQL expression generator with shrinking, for
//! tests/promql_generator.rs.
//!
//! Expressions are trees ([`E`]) built by [`generate`] from a `u64` seed
//! alone (same seed, same expression), bounded in depth, over the metric
//! names and labels of the differential data set (tests/differential/data.rs).
//! Most are valid PromQL of the type their position wants; some are
//! deliberately invalid: an argument or operand of the wrong type, a wrong
//! number of arguments, an unknown function, a bad duration, an unbalanced
//! parenthesis, an unknown aggregation parameter. Printing a tree ([`E`]'s
//! `Display`) gives the query text both servers get; the tree is only the
//! generator's and the shrinker's view of it, so precedence need not match
//! the tree (both servers parse the same text).
//!
//! [`shrinks`] lists smaller variants of a tree: a node replaced by one of its
//! children or by a leaf, an optional part (matcher, offset, `@`, grouping,
//! modifier, argument) removed, a literal simplified.

use std::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The type an expression position wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Vector,
    Matrix,
    Scalar,
    String,
}

/// A generated expression.
#[derive(Debug, Clone, PartialEq)]
pub enum E {
    /// A number literal as written (`1.5`, `0x1f`, `Inf`, `-NaN`, `1e3`, `5m`).
    Num(String),
    /// A string literal as written, quotes included.
    Str(String),
    /// A vector selector, a range selector when `range` is set.
    Sel {
        name: Option<String>,
        matchers: Vec<String>,
        range: Option<String>,
        modifiers: Mods,
    },
    /// `expr[range:step]`.
    Sub {
        expr: Box<E>,
        range: String,
        step: Option<String>,
        modifiers: Mods,
    },
    Call {
        name: String,
        args: Vec<E>,
    },
    Agg {
        op: String,
        param: Option<Box<E>>,
        /// `(without, labels)`.
        grouping: Option<(bool, Vec<String>)>,
        /// `sum(x) by (a)` rather than `sum by (a) (x)`.
        grouping_after: bool,
        expr: Box<E>,
    },
    Bin {
        op: String,
        lhs: Box<E>,
        rhs: Box<E>,
        bool_: bool,
        /// `(on, labels)`: `on(...)` or `ignoring(...)`.
        matching: Option<(bool, Vec<String>)>,
        /// `(left, labels)`: `group_left(...)` or `group_right(...)`.
        group: Option<(bool, Vec<String>)>,
    },
    Unary {
        op: char,
        expr: Box<E>,
    },
    Paren(Box<E>),
    /// An unbalanced parenthesis: `(expr` when `open`, else `expr)`.
    Unbalanced {
        expr: Box<E>,
        open: bool,
    },
}

/// `offset` and `@` of a selector or subquery.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mods {
    pub offset: Option<String>,
    pub at: Option<String>,
    /// `@` written before `offset`.
    pub at_first: bool,
}

impl Mods {
    fn is_empty(&self) -> bool {
        self.offset.is_none() && self.at.is_none()
    }
}

impl fmt::Display for Mods {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.offset.as_ref().map(|o| format!(" offset {o}"));
        let a = self.at.as_ref().map(|a| format!(" @ {a}"));
        let (first, second) = if self.at_first { (a, o) } else { (o, a) };
        write!(f, "{}{}", first.unwrap_or_default(), second.unwrap_or_default())
    }
}

fn labels_list(l: &[String]) -> String {
    l.join(", ")
}

impl fmt::Display for E {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            E::Num(n) => write!(f, "{n}"),
            E::Str(s) => write!(f, "{s}"),
            E::Sel {
                name,
                matchers,
                range,
                modifiers,
            } => {
                let name = name.as_deref().unwrap_or_default();
                if matchers.is_empty() && !name.is_empty() {
                    write!(f, "{name}")?;
                } else {
                    write!(f, "{name}{{{}}}", matchers.join(", "))?;
                }
                if let Some(r) = range {
                    write!(f, "[{r}]")?;
                }
                write!(f, "{modifiers}")
            }
            E::Sub {
                expr,
                range,
                step,
                modifiers,
            } => write!(f, "{expr}[{range}:{}]{modifiers}", step.as_deref().unwrap_or_default()),
            E::Call { name, args } => {
                write!(f, "{name}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
            E::Agg {
                op,
                param,
                grouping,
                grouping_after,
                expr,
            } => {
                let g = grouping
                    .as_ref()
                    .map(|(without, l)| format!("{} ({})", if *without { "without" } else { "by" }, labels_list(l)))
                    .unwrap_or_default();
                let p = param.as_ref().map(|p| format!("{p}, ")).unwrap_or_default();
                if g.is_empty() {
                    write!(f, "{op}({p}{expr})")
                } else if *grouping_after {
                    write!(f, "{op}({p}{expr}) {g}")
                } else {
                    write!(f, "{op} {g} ({p}{expr})")
                }
            }
            E::Bin {
                op,
                lhs,
                rhs,
                bool_,
                matching,
                group,
            } => {
                write!(f, "{lhs} {op}")?;
                if *bool_ {
                    write!(f, " bool")?;
                }
                if let Some((on, l)) = matching {
                    write!(f, " {}({})", if *on { "on" } else { "ignoring" }, labels_list(l))?;
                }
                if let Some((left, l)) = group {
                    write!(
                        f,
                        " {}({})",
                        if *left { "group_left" } else { "group_right" },
                        labels_list(l)
                    )?;
                }
                write!(f, " {rhs}")
            }
            E::Unary { op, expr } => write!(f, "{op}{expr}"),
            E::Paren(e) => write!(f, "({e})"),
            E::Unbalanced { expr, open } => {
                if *open {
                    write!(f, "({expr}")
                } else {
                    write!(f, "{expr})")
                }
            }
        }
    }
}

impl E {
    /// The outermost operation once parentheses are removed: a function or
    /// aggregation name, and whether it is grouped.
    pub fn outer(&self) -> Option<(&str, bool)> {
        match self {
            E::Paren(e) => e.outer(),
            E::Call { name, .. } => Some((name, false)),
            E::Agg { op, grouping, .. } => Some((op, grouping.is_some())),
            _ => None,
        }
    }

    /// The label names and direction of an outermost `sort_by_label` or
    /// `sort_by_label_desc` whose names are plain string literals.
    pub fn sort_by_label_args(&self) -> Option<(Vec<String>, bool)> {
        match self {
            E::Paren(e) => e.sort_by_label_args(),
            E::Call { name, args } if name == "sort_by_label" || name == "sort_by_label_desc" => {
                let names = args
                    .get(1..)?
                    .iter()
                    .map(|a| match a {
                        E::Str(s) if s.len() >= 2 && !s.contains('\\') => Some(s[1..s.len() - 1].to_string()),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some((names, name == "sort_by_label_desc"))
            }
            _ => None,
        }
    }

    /// Whether a function of a range vector takes a subquery under `@`
    /// somewhere in it and is evaluated step by step: `predict_linear`, or
    /// a call with another argument that is not a literal (Prometheus 3.14
    /// answers nothing there).
    pub fn at_subquery_step_by_step(&self) -> bool {
        fn unparen(mut e: &E) -> &E {
            while let E::Paren(inner) = e {
                e = inner;
            }
            e
        }
        let here = match self {
            E::Call { name, args } => {
                let at_sub = |a: &E| matches!(unparen(a), E::Sub { modifiers, .. } if modifiers.at.is_some());
                args.iter().any(at_sub)
                    && (name == "predict_linear"
                        || args
                            .iter()
                            .any(|a| !at_sub(a) && a.literal().is_none() && !matches!(unparen(a), E::Str(_))))
            }
            _ => false,
        };
        here || self.children().iter().any(|c| c.at_subquery_step_by_step())
    }

    /// Whether a `timestamp` somewhere in it takes a selector with both
    /// `offset` and `@`.
    pub fn timestamp_at_offset(&self) -> bool {
        fn at_offset(e: &E) -> bool {
            match e {
                E::Paren(inner) => at_offset(inner),
                E::Sel {
                    range: None, modifiers, ..
                } => modifiers.at.is_some() && modifiers.offset.is_some(),
                _ => false,
            }
        }
        let here = matches!(self, E::Call { name, args } if name == "timestamp" && args.first().is_some_and(at_offset));
        here || self.children().iter().any(|c| c.timestamp_at_offset())
    }

    /// Whether an `info` somewhere in it enriches an input whose first
    /// selector has an `offset` or `@`: Prometheus 3.14 selects the info
    /// series at the times shifted so but looks them up at the unshifted
    /// steps, finding them only where the two overlap (documented).
    pub fn info_of_shifted_input(&self) -> bool {
        fn first_selector(e: &E) -> Option<&E> {
            match e {
                E::Sel { .. } => Some(e),
                _ => e.children().into_iter().find_map(first_selector),
            }
        }
        let shifted = |e: &E| {
            matches!(first_selector(e), Some(E::Sel { modifiers, .. })
                if modifiers.offset.is_some() || modifiers.at.is_some())
        };
        let here = matches!(self, E::Call { name, args } if name == "info" && args.first().is_some_and(shifted));
        here || self.children().iter().any(|c| c.info_of_shifted_input())
    }

    /// Whether a subquery somewhere in it is fixed by `@` to a time more
    /// than about 292 years from the data set's (Prometheus 3.14 adjusts a
    /// subquery's offset for `@` in a Go `time.Duration` of nanoseconds,
    /// which overflows there: its steps land elsewhere).
    pub fn subquery_at_far(&self) -> bool {
        let here = matches!(self, E::Sub { modifiers, .. } if modifiers
            .at
            .as_deref()
            .and_then(|a| a.parse::<f64>().ok())
            .is_some_and(|t| t.is_finite() && (t - 1.8e9).abs() > 9e9));
        here || self.children().iter().any(|c| c.subquery_at_far())
    }

    /// Whether an `absent` or `absent_over_time` somewhere in it takes a
    /// selector with an equality and another matcher of the same label:
    /// its labels then follow the order Prometheus' TSDB leaves the
    /// matchers in, which it sorts only when it holds data the query
    /// reaches (documented).
    pub fn absent_of_conflicting_matchers(&self) -> bool {
        fn conflicting(e: &E) -> bool {
            match e {
                E::Paren(inner) => conflicting(inner),
                E::Sel { matchers, .. } => {
                    let name = |m: &String| {
                        let n = m.split(['=', '!']).next().unwrap_or_default();
                        n.trim().trim_matches('"').to_string()
                    };
                    matchers.iter().any(|m| {
                        let eq = m.contains('=') && !m.contains("!=") && !m.contains("=~") && !m.contains("!~");
                        eq && matchers.iter().filter(|o| name(o) == name(m)).count() > 1
                    })
                }
                _ => false,
            }
        }
        let here = matches!(self, E::Call { name, args } if (name == "absent" || name == "absent_over_time")
            && args.first().is_some_and(conflicting));
        here || self.children().iter().any(|c| c.absent_of_conflicting_matchers())
    }

    /// Whether a `limitk`, `topk` or `bottomk` chooses series somewhere in it.
    pub fn has_choice(&self) -> bool {
        matches!(self, E::Agg { op, .. } if matches!(op.as_str(), "limitk" | "topk" | "bottomk"))
            || self.children().iter().any(|c| c.has_choice())
    }

    /// Whether a function or operator of the math library (Go's `math` in
    /// Prometheus, Rust's in Cairn, which differ in the last place for some
    /// arguments) is applied somewhere in it.
    pub fn has_libm(&self) -> bool {
        const LIBM: &[&str] = &[
            "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "exp",
            "ln", "log2", "log10",
        ];
        let here = match self {
            E::Call { name, .. } => LIBM.contains(&name.as_str()),
            E::Bin { op, .. } => op == "^" || op == "atan2",
            _ => false,
        };
        here || self.children().iter().any(|c| c.has_libm())
    }

    /// Whether a `count_values` counts computed values (not a selector's)
    /// somewhere in it: their labels show every last-place difference of
    /// float arithmetic.
    pub fn counts_computed_values(&self) -> bool {
        let here = match self {
            E::Agg { op, expr, .. } if op == "count_values" => {
                let mut x = &**expr;
                while let E::Paren(inner) = x {
                    x = inner;
                }
                !matches!(x, E::Sel { .. })
            }
            _ => false,
        };
        here || self.children().iter().any(|c| c.counts_computed_values())
    }

    /// Whether floats are added up across series somewhere in it (`sum`,
    /// `avg`, `stddev`, `stdvar`), in the order series come from storage.
    pub fn sums_across_series(&self) -> bool {
        matches!(self, E::Agg { op, .. } if matches!(op.as_str(), "sum" | "avg" | "stddev" | "stdvar"))
            || self.children().iter().any(|c| c.sums_across_series())
    }

    /// The value of a number literal (through parentheses and signs).
    pub fn literal(&self) -> Option<f64> {
        match self {
            E::Num(n) => n.replace('_', "").parse().ok(),
            E::Paren(e) => e.literal(),
            E::Unary { op: '-', expr } => expr.literal().map(|v| -v),
            E::Unary { expr, .. } => expr.literal(),
            _ => None,
        }
    }

    fn children(&self) -> Vec<&E> {
        match self {
            E::Num(_) | E::Str(_) | E::Sel { .. } => vec![],
            E::Sub { expr, .. } | E::Unary { expr, .. } | E::Paren(expr) | E::Unbalanced { expr, .. } => {
                vec![expr]
            }
            E::Call { args, .. } => args.iter().collect(),
            E::Agg { param, expr, .. } => param.iter().map(|p| &**p).chain([&**expr]).collect(),
            E::Bin { lhs, rhs, .. } => vec![lhs, rhs],
        }
    }

    /// The number of nodes.
    pub fn size(&self) -> usize {
        1 + self.children().iter().map(|c| c.size()).sum::<usize>()
    }
}

/// The metrics of the data set and the labels they carry.
struct Metric {
    name: &'static str,
    labels: &'static [&'static str],
    values: &'static [(&'static str, &'static [&'static str])],
}

const NODE_LABELS: &[&str] = &["job", "instance"];
const INSTANCES: (&str, &[&str]) = (
    "instance",
    &[
        "host-00000:9100",
        "host-00001:9100",
        "host-00002:9100",
        "host-00003:9100",
        "syn-0",
        "syn-1",
        "syn-2",
    ],
);
const JOBS: (&str, &[&str]) = ("job", &["node", "synthetic", "other"]);

const METRICS: &[Metric] = &[
    Metric {
        name: "node_load1",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "node_load5",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "node_cpu_seconds_total",
        labels: &["job", "instance", "cpu", "mode"],
        values: &[
            ("cpu", &["0", "1", "7"]),
            ("mode", &["idle", "user", "system", "iowait"]),
        ],
    },
    Metric {
        name: "node_memory_MemAvailable_bytes",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "node_network_receive_bytes_total",
        labels: &["job", "instance", "device"],
        values: &[("device", &["lo", "eth0"])],
    },
    Metric {
        name: "node_uname_info",
        labels: &["job", "instance", "nodename", "release"],
        values: &[],
    },
    Metric {
        name: "syn_requests_total",
        labels: &["job", "instance", "code"],
        values: &[("code", &["200", "404", "500", "503"])],
    },
    Metric {
        name: "syn_gap_total",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "syn_stale_gauge",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "syn_gauge",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "syn_nan_gauge",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "syn_fast_total",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "syn_slow_total",
        labels: NODE_LABELS,
        values: &[],
    },
    Metric {
        name: "syn_request_duration_seconds_bucket",
        labels: &["job", "instance", "path", "le"],
        values: &[("path", &["/a", "/b"]), ("le", &["0.1", "0.5", "1", "+Inf", "2.5"])],
    },
    Metric {
        name: "syn_request_duration_seconds_sum",
        labels: &["job", "instance", "path"],
        values: &[("path", &["/a", "/b"])],
    },
    Metric {
        name: "syn_request_duration_seconds_count",
        labels: &["job", "instance", "path"],
        values: &[("path", &["/a", "/b"])],
    },
    Metric {
        name: "syn_build_info",
        labels: &["job", "instance", "version"],
        values: &[("version", &["1.2.3", "1.3.0", "2.0.0-rc.1"])],
    },
    Metric {
        name: "syn_text_info",
        labels: &["job", "instance", "text"],
        values: &[("text", &["line1\\nline2", "line1 line2"])],
    },
    Metric {
        name: "node_does_not_exist",
        labels: NODE_LABELS,
        values: &[],
    },
];

/// Label names for grouping and matching: real ones and one nobody has.
const LABEL_NAMES: &[&str] = &[
    "job", "instance", "code", "mode", "cpu", "path", "le", "version", "__name__", "missing",
];

/// `(name, argument types, optional trailing arguments; -1 = unbounded)`.
/// The signatures of Prometheus 3.14 (experimental functions on).
const FUNCTIONS: &[(&str, &[Ty], i32)] = {
    use Ty::{Matrix as M, Scalar as S, String as T, Vector as V};
    &[
        ("abs", &[V], 0),
        ("absent", &[V], 0),
        ("absent_over_time", &[M], 0),
        ("acos", &[V], 0),
        ("acosh", &[V], 0),
        ("asin", &[V], 0),
        ("asinh", &[V], 0),
        ("atan", &[V], 0),
        ("atanh", &[V], 0),
        ("avg_over_time", &[M], 0),
        ("ceil", &[V], 0),
        ("changes", &[M], 0),
        ("clamp", &[V, S, S], 0),
        ("clamp_max", &[V, S], 0),
        ("clamp_min", &[V, S], 0),
        ("cos", &[V], 0),
        ("cosh", &[V], 0),
        ("count_over_time", &[M], 0),
        ("days_in_month", &[V], 1),
        ("day_of_month", &[V], 1),
        ("day_of_week", &[V], 1),
        ("day_of_year", &[V], 1),
        ("deg", &[V], 0),
        ("delta", &[M], 0),
        ("deriv", &[M], 0),
        ("exp", &[V], 0),
        ("first_over_time", &[M], 0),
        ("floor", &[V], 0),
        ("histogram_avg", &[V], 0),
        ("histogram_count", &[V], 0),
        ("histogram_fraction", &[S, S, V], 0),
        ("histogram_quantile", &[S, V], 0),
        ("histogram_stddev", &[V], 0),
        ("histogram_stdvar", &[V], 0),
        ("histogram_sum", &[V], 0),
        ("info", &[V, V], 1),
        ("double_exponential_smoothing", &[M, S, S], 0),
        ("hour", &[V], 1),
        ("idelta", &[M], 0),
        ("increase", &[M], 0),
        ("irate", &[M], 0),
        ("label_replace", &[V, T, T, T, T], 0),
        ("label_join", &[V, T, T, T], -1),
        ("last_over_time", &[M], 0),
        ("ln", &[V], 0),
        ("log10", &[V], 0),
        ("log2", &[V], 0),
        ("mad_over_time", &[M], 0),
        ("max_over_time", &[M], 0),
        ("min_over_time", &[M], 0),
        ("ts_of_first_over_time", &[M], 0),
        ("ts_of_last_over_time", &[M], 0),
        ("ts_of_max_over_time", &[M], 0),
        ("ts_of_min_over_time", &[M], 0),
        ("minute", &[V], 1),
        ("month", &[V], 1),
        ("pi", &[], 0),
        ("predict_linear", &[M, S], 0),
        ("present_over_time", &[M], 0),
        ("quantile_over_time", &[S, M], 0),
        ("rad", &[V], 0),
        ("rate", &[M], 0),
        ("resets", &[M], 0),
        ("round", &[V, S], 1),
        ("scalar", &[V], 0),
        ("sgn", &[V], 0),
        ("sin", &[V], 0),
        ("sinh", &[V], 0),
        ("sort", &[V], 0),
        ("sort_desc", &[V], 0),
        ("sort_by_label", &[V, T], -1),
        ("sort_by_label_desc", &[V, T], -1),
        ("sqrt", &[V], 0),
        ("stddev_over_time", &[M], 0),
        ("stdvar_over_time", &[M], 0),
        ("sum_over_time", &[M], 0),
        ("tan", &[V], 0),
        ("tanh", &[V], 0),
        ("time", &[], 0),
        ("timestamp", &[V], 0),
        ("vector", &[S], 0),
        ("year", &[V], 1),
    ]
};

/// The result type of a function (every other one returns a vector).
fn returns(name: &str) -> Ty {
    match name {
        "pi" | "time" | "scalar" => Ty::Scalar,
        _ => Ty::Vector,
    }
}

const AGGREGATIONS: &[&str] = &[
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "limitk",
    "limit_ratio",
];

const DURATIONS: &[&str] = &[
    "1m",
    "5m",
    "90s",
    "10m",
    "30s",
    "2m",
    "1h",
    "15s",
    "1m30s",
    "3m",
    "5m * 2",
    "1h / 4",
    "2m + 30s",
    "step() * 4",
    "300",
    "1.5m",
];
const BAD_DURATIONS: &[&str] = &["0s", "5x", "-5m", "", "5m1h", "1y2y", "foo", "5m - 10m", "step()"];

/// The generator's state: the random source and how far down it is.
pub struct Gen {
    rng: StdRng,
    max_depth: u32,
    /// The chance (in 1/1000) that a node is made deliberately invalid.
    invalid_per_mille: u32,
}

/// The expression of a seed. Deterministic: the same seed always gives the
/// same expression.
pub fn generate(seed: u64) -> E {
    let mut rng = StdRng::seed_from_u64(seed);
    let max_depth = rng.random_range(1..=4);
    // About one expression in four carries a deliberate error somewhere.
    let invalid_per_mille = if rng.random_bool(0.25) { 60 } else { 0 };
    let mut g = Gen {
        rng,
        max_depth,
        invalid_per_mille,
    };
    let ty = match g.rng.random_range(0..20) {
        0 => Ty::Scalar,
        1 => Ty::Matrix,
        2 => Ty::String,
        _ => Ty::Vector,
    };
    g.expr(ty, 0)
}

impl Gen {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn invalid(&mut self) -> bool {
        self.invalid_per_mille > 0 && self.rng.random_range(0..1000) < self.invalid_per_mille
    }

    /// An expression of type `ty` (or, deliberately, of another).
    pub fn expr(&mut self, ty: Ty, depth: u32) -> E {
        let ty = if self.invalid() {
            self.pick(&[Ty::Vector, Ty::Matrix, Ty::Scalar, Ty::String])
        } else {
            ty
        };
        if self.invalid() {
            let inner = self.expr(ty, depth + 1);
            let open = self.chance(0.5);
            return E::Unbalanced {
                expr: Box::new(inner),
                open,
            };
        }
        let leaf = depth >= self.max_depth;
        let e = match ty {
            Ty::Vector => self.vector(depth, leaf),
            Ty::Matrix => self.matrix(depth, leaf),
            Ty::Scalar => self.scalar(depth, leaf),
            Ty::String => self.string(),
        };
        if !leaf && self.chance(0.07) {
            E::Paren(Box::new(e))
        } else {
            e
        }
    }

    fn vector(&mut self, depth: u32, leaf: bool) -> E {
        if leaf {
            return self.selector(false);
        }
        match self.rng.random_range(0..100) {
            0..15 => self.selector(false),
            15..40 => self.call(Ty::Vector, depth),
            40..62 => self.aggregation(depth),
            62..85 => self.binary(Ty::Vector, depth),
            85..90 => E::Unary {
                op: self.pick(&['-', '+']),
                expr: Box::new(self.expr(Ty::Vector, depth + 1)),
            },
            90..95 => {
                // A vector expression with an offset or @ needs a subquery or
                // a selector; a paren'd selector keeps its modifiers inside.
                E::Paren(Box::new(self.selector(false)))
            }
            _ => E::Paren(Box::new(self.expr(Ty::Vector, depth + 1))),
        }
    }

    fn matrix(&mut self, depth: u32, leaf: bool) -> E {
        if leaf || self.chance(0.7) {
            return self.selector(true);
        }
        // A subquery over a vector expression (rarely a nested subquery).
        let inner = self.expr(Ty::Vector, depth + 1);
        let inner = match inner {
            e @ (E::Sel { .. } | E::Call { .. } | E::Agg { .. } | E::Paren(_)) => e,
            e => E::Paren(Box::new(e)),
        };
        let range = self.duration();
        let step = self
            .chance(0.6)
            .then(|| self.pick(&["1m", "30s", "5m", "15s", "2m"]).to_string());
        let modifiers = self.modifiers();
        E::Sub {
            expr: Box::new(inner),
            range,
            step,
            modifiers,
        }
    }

    fn scalar(&mut self, depth: u32, leaf: bool) -> E {
        if leaf {
            return self.number();
        }
        match self.rng.random_range(0..100) {
            0..45 => self.number(),
            45..60 => {
                let name = self.pick(&["time", "pi", "scalar", "scalar", "time"]);
                if name == "scalar" {
                    E::Call {
                        name: name.into(),
                        args: vec![self.expr(Ty::Vector, depth + 1)],
                    }
                } else {
                    E::Call {
                        name: name.into(),
                        args: vec![],
                    }
                }
            }
            60..85 => self.binary(Ty::Scalar, depth),
            85..93 => E::Unary {
                op: self.pick(&['-', '+']),
                expr: Box::new(self.expr(Ty::Scalar, depth + 1)),
            },
            _ => E::Paren(Box::new(self.expr(Ty::Scalar, depth + 1))),
        }
    }

    fn string(&mut self) -> E {
        let s = self.pick(&[
            "\"a\"",
            "\"instance\"",
            "\"job\"",
            "\"$1\"",
            "\"host-(.*):.*\"",
            "\"(.*)\"",
            "\"\"",
            "'x-$1'",
            "`raw`",
            "\"code\"",
            "\"__name__\"",
            "\"le\"",
            "\"0.5\"",
            "\"_\"",
            "\"\\u00e9\"",
            "\"(\"",
            "\"new\"",
            "\"version\"",
        ]);
        E::Str(s.into())
    }

    fn number(&mut self) -> E {
        let n = if self.invalid() {
            self.pick(&["1..2", "0x", "1e", "5mm", "Infinity1", "--"])
        } else {
            self.pick(&[
                "0", "1", "2", "3", "0.5", "0.9", "0.99", "-1", "100", "1.5", "1e3", "2.5e-3", "0x1f", "0X0A", "Inf",
                "-Inf", "+Inf", "NaN", "inf", "nan", "5m", "1h", "30s", "0.25", "10", "1e-9", "-0.5", "1_000", "0.1",
            ])
        };
        E::Num(n.into())
    }

    fn duration(&mut self) -> String {
        if self.invalid() {
            return self.pick(BAD_DURATIONS).into();
        }
        self.pick(DURATIONS).into()
    }

    fn modifiers(&mut self) -> Mods {
        let mut m = Mods::default();
        if self.chance(0.15) {
            m.offset = Some(if self.invalid() {
                self.pick(BAD_DURATIONS).to_string()
            } else {
                self.pick(&[
                    "5m", "1m", "-2m", "17m", "1h", "30s", "0s", "(1h / 2)", "(2 * 5m)", "-(1m)",
                ])
                .to_string()
            });
        }
        if self.chance(0.1) {
            m.at = Some(
                self.pick(&[
                    "start()", "end()", "start()", "end()", "1e12", "0", "-5", "Inf", "NaN", "\"x\"", "time()",
                ])
                .to_string(),
            );
            // Absolute times the data set does not reach are valid and empty.
            m.at_first = self.chance(0.5);
        }
        m
    }

    fn selector(&mut self, range: bool) -> E {
        let metric = &METRICS[self.rng.random_range(0..METRICS.len())];
        let mut matchers = Vec::new();
        let mut name = Some(metric.name.to_string());
        match self.rng.random_range(0..100) {
            0..8 => {
                name = None;
                let op = self.pick(&["=", "=~", "=~", "!~"]);
                let v = match op {
                    "=" => metric.name.to_string(),
                    _ => self
                        .pick(&[
                            "syn_gauge|syn_nan_gauge",
                            "node_load.*",
                            "syn_.*_total",
                            "syn_(gap|slow)_total",
                        ])
                        .to_string(),
                };
                matchers.push(format!("__name__{op}\"{v}\""));
                if op == "!~" {
                    matchers.push("job=\"synthetic\"".into());
                }
            }
            8..12 => {
                // A UTF-8 quoted metric name inside the braces.
                name = None;
                matchers.push(format!("\"{}\"", metric.name));
            }
            12..14 => {
                name = None;
                matchers.push(format!("\"{}\"", metric.name));
                matchers.push("\"job\"=\"synthetic\"".into());
            }
            _ => {}
        }
        let n = match self.rng.random_range(0..20) {
            0..10 => 0,
            10..17 => 1,
            _ => 2,
        };
        for _ in 0..n {
            matchers.push(self.matcher(metric));
        }
        if name.is_none() && matchers.is_empty() {
            matchers.push("job=\"synthetic\"".into());
        }
        // `{}` and a selector of empty matchers only are errors.
        if self.invalid() {
            name = None;
            matchers = vec![self.pick(&["", "job=\"\"", "job=~\".*\"", "job!=\"x\""]).to_string()];
            matchers.retain(|m| !m.is_empty());
        }
        let range = range.then(|| self.duration());
        let modifiers = self.modifiers();
        E::Sel {
            name,
            matchers,
            range,
            modifiers,
        }
    }

    fn matcher(&mut self, metric: &Metric) -> String {
        let label = self.pick(metric.labels);
        let node = metric.name.starts_with("node_");
        let own = self.chance(0.8);
        let values: &[&str] = match label {
            "instance" if own && node => &INSTANCES.1[..4],
            "instance" if own => &INSTANCES.1[4..],
            "instance" => INSTANCES.1,
            "job" if own && node => &JOBS.1[..1],
            "job" if own => &JOBS.1[1..2],
            "job" => JOBS.1,
            l => metric
                .values
                .iter()
                .find(|(n, _)| *n == l)
                .map(|(_, v)| *v)
                .unwrap_or(&["x"]),
        };
        let label = if self.chance(0.05) {
            self.pick(&["missing", "\"job\"", "\"instance\""])
        } else {
            label
        };
        let op = self.pick(&["=", "!=", "=~", "!~"]);
        let value = match (op, self.rng.random_range(0..10)) {
            (_, 0) => String::new(),
            ("=~" | "!~", 1) => ".*".into(),
            ("=~" | "!~", 2) => ".+".into(),
            ("=~" | "!~", 3) => {
                let a = self.pick(values);
                let b = self.pick(values);
                format!("{a}|{b}")
            }
            ("=~" | "!~", 4) => format!("{}.*", self.pick(values).chars().next().unwrap_or('x')),
            ("=~" | "!~", 5) if self.invalid() => "(".into(),
            _ => self.pick(values).to_string(),
        };
        // Regex values need their backslashes and dots as written.
        let value = if op.contains('~') {
            value.replace('+', "\\\\+")
        } else {
            value
        };
        let value = if value == ".\\\\+" { ".+".into() } else { value };
        format!("{label}{op}\"{value}\"")
    }

    fn labels(&mut self) -> Vec<String> {
        let n = self.rng.random_range(0..3);
        let mut out: Vec<String> = Vec::new();
        for _ in 0..n {
            let l = self.pick(LABEL_NAMES).to_string();
            let l = if self.chance(0.05) { format!("\"{l}\"") } else { l };
            if !out.contains(&l) {
                out.push(l);
            }
        }
        out
    }

    fn call(&mut self, want: Ty, depth: u32) -> E {
        if self.invalid() {
            let name = self.pick(&["foo", "rate_", "Rate", "holt_winters", "xrate", "sum_over", "step"]);
            let args = vec![self.expr(Ty::Matrix, depth + 1)];
            return E::Call {
                name: name.into(),
                args,
            };
        }
        let candidates: Vec<&(&str, &[Ty], i32)> = FUNCTIONS.iter().filter(|(n, _, _)| returns(n) == want).collect();
        let (name, types, optional) = *candidates[self.rng.random_range(0..candidates.len())];
        let mut n = types.len();
        if optional != 0 {
            let max_extra = if optional < 0 { 3 } else { optional as usize };
            let extra = self.rng.random_range(0..=max_extra);
            // Optional arguments replace the trailing ones of the list.
            n = n - optional.clamp(0, n as i32) as usize + extra;
            if optional < 0 {
                n = types.len() + extra;
            }
        }
        if self.invalid() {
            n = if n > 0 && self.chance(0.5) { n - 1 } else { n + 1 };
        }
        let mut args = Vec::with_capacity(n);
        for i in 0..n {
            let ty = types.get(i).or(types.last()).copied().unwrap_or(Ty::Scalar);
            let arg = match (name, i, ty) {
                ("label_replace" | "label_join", 1, _) => self.pick_string(&[
                    "\"a\"",
                    "\"instance\"",
                    "\"new\"",
                    "\"__name__\"",
                    "\"job\"",
                    "\"1bad\"",
                ]),
                ("label_replace", 3, _) => {
                    self.pick_string(&["\"instance\"", "\"job\"", "\"__name__\"", "\"missing\"", "\"code\""])
                }
                ("label_replace", 4, _) => self.pick_string(&[
                    "\"(.*)\"",
                    "\"host-(.*):.*\"",
                    "\".*\"",
                    "\"\"",
                    "\"syn-(\\\\d)\"",
                    "\"(\"",
                ]),
                ("label_replace", 2, _) => self.pick_string(&["\"$1\"", "\"x-$1\"", "\"\"", "\"${1}y\"", "\"a\""]),
                ("label_join", 2, _) => self.pick_string(&["\",\"", "\"\"", "\"-\""]),
                ("label_join", _, Ty::String) | ("sort_by_label" | "sort_by_label_desc", _, Ty::String) => self
                    .pick_string(&[
                        "\"instance\"",
                        "\"job\"",
                        "\"code\"",
                        "\"__name__\"",
                        "\"missing\"",
                        "\"mode\"",
                    ]),
                ("histogram_quantile" | "quantile_over_time", 0, Ty::Scalar) => {
                    self.pick_num(&["0.5", "0.9", "0.99", "0", "1", "-1", "2", "NaN"])
                }
                (
                    "round" | "predict_linear" | "clamp" | "clamp_min" | "clamp_max" | "histogram_fraction",
                    _,
                    Ty::Scalar,
                ) if self.chance(0.6) => self.pick_num(&["0.5", "10", "0", "-10", "1", "100", "3600", "0.1"]),
                ("double_exponential_smoothing", _, Ty::Scalar) => {
                    self.pick_num(&["0.5", "0.1", "0.9", "0", "1", "1.5"])
                }
                (
                    "histogram_quantile" | "histogram_fraction" | "histogram_avg" | "histogram_count" | "histogram_sum"
                    | "histogram_stddev" | "histogram_stdvar",
                    _,
                    Ty::Vector,
                ) if self.chance(0.6) => self.histogram_vector(depth),
                _ => self.expr(ty, depth + 1),
            };
            args.push(arg);
        }
        E::Call {
            name: name.into(),
            args,
        }
    }

    fn histogram_vector(&mut self, depth: u32) -> E {
        let sel = E::Sel {
            name: Some("syn_request_duration_seconds_bucket".into()),
            matchers: if self.chance(0.3) {
                vec!["path=\"/b\"".into()]
            } else {
                vec![]
            },
            range: Some(self.pick(&["5m", "1m", "10m"]).into()),
            modifiers: Mods::default(),
        };
        let rate = E::Call {
            name: self.pick(&["rate", "increase", "irate"]).into(),
            args: vec![sel],
        };
        if depth < self.max_depth && self.chance(0.5) {
            let by = self.pick(&["le", "le", "path"]);
            let mut labels = vec![by.to_string()];
            if self.chance(0.5) {
                labels.push("path".into());
                labels.dedup();
            }
            E::Agg {
                op: "sum".into(),
                param: None,
                grouping: Some((false, labels)),
                grouping_after: false,
                expr: Box::new(rate),
            }
        } else {
            rate
        }
    }

    fn pick_string(&mut self, xs: &[&str]) -> E {
        E::Str(self.pick(xs).into())
    }

    fn pick_num(&mut self, xs: &[&str]) -> E {
        E::Num(self.pick(xs).into())
    }

    fn aggregation(&mut self, depth: u32) -> E {
        let op = if self.invalid() {
            self.pick(&["sum_of", "median", "topk"])
        } else {
            self.pick(AGGREGATIONS)
        };
        let mut param = match op {
            "topk" | "bottomk" | "limitk" => Some(self.pick_num(&["1", "2", "3", "0", "-1", "1.5", "100", "5"])),
            "quantile" => Some(self.pick_num(&["0.5", "0.9", "0", "1", "-1", "2", "NaN", "0.25"])),
            "limit_ratio" => Some(self.pick_num(&["0.5", "-0.5", "1", "0", "0.1", "-1", "2", "0.9"])),
            "count_values" => {
                Some(self.pick_string(&["\"value\"", "\"job\"", "\"__name__\"", "\"\"", "\"new\"", "\"1x\""]))
            }
            _ => None,
        };
        if param.is_some() && self.chance(0.15) {
            // A computed parameter: scalar expressions are allowed.
            let ty = if op == "count_values" { Ty::String } else { Ty::Scalar };
            param = Some(self.expr(ty, depth + 1));
        }
        if self.invalid() {
            param = match param {
                Some(_) => None,
                None => Some(self.pick_num(&["1", "2"])),
            };
        }
        let grouping = self.chance(0.5).then(|| {
            let without = self.chance(0.35);
            (without, self.labels())
        });
        let grouping_after = self.chance(0.3);
        let expr = self.expr(Ty::Vector, depth + 1);
        E::Agg {
            op: op.into(),
            param: param.map(Box::new),
            grouping,
            grouping_after,
            expr: Box::new(expr),
        }
    }

    fn binary(&mut self, want: Ty, depth: u32) -> E {
        let arith = ["+", "-", "*", "/", "%", "^", "atan2"];
        let cmp = ["==", "!=", ">", "<", ">=", "<="];
        let set = ["and", "or", "unless"];
        let kind = self.rng.random_range(0..10);
        let op = match kind {
            0..5 => self.pick(&arith),
            5..8 => self.pick(&cmp),
            _ if want == Ty::Vector => self.pick(&set),
            _ => self.pick(&arith),
        };
        let is_set = set.contains(&op);
        let (lt, rt) = if want == Ty::Scalar {
            (Ty::Scalar, Ty::Scalar)
        } else if is_set {
            (Ty::Vector, Ty::Vector)
        } else {
            match self.rng.random_range(0..4) {
                0 => (Ty::Vector, Ty::Scalar),
                1 => (Ty::Scalar, Ty::Vector),
                _ => (Ty::Vector, Ty::Vector),
            }
        };
        let lhs = self.expr(lt, depth + 1);
        let rhs = self.expr(rt, depth + 1);
        let both_vectors = lt == Ty::Vector && rt == Ty::Vector;
        let bool_ = cmp.contains(&op) && (want == Ty::Scalar || self.chance(0.35)) || self.invalid();
        let mut matching = None;
        let mut group = None;
        if (both_vectors || self.invalid()) && self.chance(0.45) {
            let on = self.chance(0.6);
            matching = Some((on, self.labels()));
            if (!is_set || self.invalid()) && self.chance(0.4) {
                group = Some((self.chance(0.5), self.labels()));
            }
        }
        E::Bin {
            op: op.into(),
            lhs: Box::new(wrap_operand(lhs)),
            rhs: Box::new(wrap_operand(rhs)),
            bool_,
            matching,
            group,
        }
    }
}

/// Parenthesises binary operands that are themselves binary most of the
/// time, so the tree's grouping is usually the text's.
fn wrap_operand(e: E) -> E {
    match e {
        E::Bin { .. } => E::Paren(Box::new(e)),
        e => e,
    }
}

const LEAF_VECTOR: &str = "syn_gauge";

/// Smaller variants of `e`, most promising first.
pub fn shrinks(e: &E) -> Vec<E> {
    let mut out = Vec::new();
    // Replace the node by one of its children.
    for c in e.children() {
        out.push(c.clone());
    }
    // By a leaf.
    match e {
        E::Num(n) if n != "1" => out.push(E::Num("1".into())),
        E::Str(s) if s != "\"a\"" => out.push(E::Str("\"a\"".into())),
        E::Sel { .. } | E::Num(_) | E::Str(_) => {}
        _ => {
            out.push(E::Sel {
                name: Some(LEAF_VECTOR.into()),
                matchers: vec![],
                range: None,
                modifiers: Mods::default(),
            });
            out.push(E::Num("1".into()));
        }
    }
    // Optional parts removed.
    match e {
        E::Sel {
            name,
            matchers,
            range,
            modifiers,
        } => {
            for i in 0..matchers.len() {
                let mut m = matchers.clone();
                m.remove(i);
                if name.is_some() || !m.is_empty() {
                    out.push(E::Sel {
                        name: name.clone(),
                        matchers: m,
                        range: range.clone(),
                        modifiers: modifiers.clone(),
                    });
                }
            }
            for m in smaller_mods(modifiers) {
                out.push(E::Sel {
                    name: name.clone(),
                    matchers: matchers.clone(),
                    range: range.clone(),
                    modifiers: m,
                });
            }
            if name.as_deref() != Some(LEAF_VECTOR) && name.is_some() {
                out.push(E::Sel {
                    name: Some(LEAF_VECTOR.into()),
                    matchers: matchers.clone(),
                    range: range.clone(),
                    modifiers: modifiers.clone(),
                });
            }
        }
        E::Sub {
            expr,
            range,
            step,
            modifiers,
        } => {
            if step.is_some() {
                out.push(E::Sub {
                    expr: expr.clone(),
                    range: range.clone(),
                    step: None,
                    modifiers: modifiers.clone(),
                });
            }
            for m in smaller_mods(modifiers) {
                out.push(E::Sub {
                    expr: expr.clone(),
                    range: range.clone(),
                    step: step.clone(),
                    modifiers: m,
                });
            }
        }
        E::Call { name, args } if !args.is_empty() => {
            let mut a = args.clone();
            a.pop();
            out.push(E::Call {
                name: name.clone(),
                args: a,
            });
        }
        E::Agg {
            op,
            param,
            grouping,
            grouping_after,
            expr,
        } => {
            let with = |param: Option<Box<E>>, grouping: Option<(bool, Vec<String>)>, after: bool| E::Agg {
                op: op.clone(),
                param,
                grouping,
                grouping_after: after,
                expr: expr.clone(),
            };
            if let Some((without, l)) = grouping {
                out.push(with(param.clone(), None, false));
                for i in 0..l.len() {
                    let mut l = l.clone();
                    l.remove(i);
                    out.push(with(param.clone(), Some((*without, l)), *grouping_after));
                }
                if *grouping_after {
                    out.push(with(param.clone(), grouping.clone(), false));
                }
            }
            if param.is_some() {
                out.push(with(None, grouping.clone(), *grouping_after));
            }
            if op != "sum" {
                out.push(E::Agg {
                    op: "sum".into(),
                    param: None,
                    grouping: grouping.clone(),
                    grouping_after: *grouping_after,
                    expr: expr.clone(),
                });
            }
        }
        E::Bin {
            op,
            lhs,
            rhs,
            bool_,
            matching,
            group,
        } => {
            let with =
                |bool_: bool, matching: Option<(bool, Vec<String>)>, group: Option<(bool, Vec<String>)>| E::Bin {
                    op: op.clone(),
                    lhs: lhs.clone(),
                    rhs: rhs.clone(),
                    bool_,
                    matching,
                    group,
                };
            if group.is_some() {
                out.push(with(*bool_, matching.clone(), None));
                if let Some((left, l)) = group {
                    for i in 0..l.len() {
                        let mut l = l.clone();
                        l.remove(i);
                        out.push(with(*bool_, matching.clone(), Some((*left, l))));
                    }
                }
            }
            if let Some((on, l)) = matching {
                out.push(with(*bool_, None, group.clone()));
                for i in 0..l.len() {
                    let mut l = l.clone();
                    l.remove(i);
                    out.push(with(*bool_, Some((*on, l)), group.clone()));
                }
            }
            if *bool_ {
                out.push(with(false, matching.clone(), group.clone()));
            }
        }
        _ => {}
    }
    // A child shrunk in place.
    let rebuild = |i: usize, c: E| -> E {
        let mut e = e.clone();
        *e.children_mut()[i] = c;
        e
    };
    for (i, c) in e.children().iter().enumerate() {
        for s in shrinks(c) {
            out.push(rebuild(i, s));
        }
    }
    out
}

fn smaller_mods(m: &Mods) -> Vec<Mods> {
    let mut out = Vec::new();
    if m.is_empty() {
        return out;
    }
    if m.offset.is_some() {
        out.push(Mods {
            offset: None,
            ..m.clone()
        });
    }
    if m.at.is_some() {
        out.push(Mods { at: None, ..m.clone() });
    }
    out
}

impl E {
    fn children_mut(&mut self) -> Vec<&mut E> {
        match self {
            E::Num(_) | E::Str(_) | E::Sel { .. } => vec![],
            E::Sub { expr, .. } | E::Unary { expr, .. } | E::Paren(expr) | E::Unbalanced { expr, .. } => {
                vec![&mut **expr]
            }
            E::Call { args, .. } => args.iter_mut().collect(),
            E::Agg { param, expr, .. } => param.iter_mut().map(|p| &mut **p).chain([&mut **expr]).collect(),
            E::Bin { lhs, rhs, .. } => vec![&mut **lhs, &mut **rhs],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_expression() {
        for seed in 0..200 {
            assert_eq!(generate(seed).to_string(), generate(seed).to_string());
        }
    }

    #[test]
    fn seeds_differ_and_cover_the_grammar() {
        let all: Vec<String> = (0..3000).map(|s| generate(s).to_string()).collect();
        let distinct: std::collections::HashSet<&String> = all.iter().collect();
        assert!(distinct.len() > 2000, "only {} distinct", distinct.len());
        let text = all.join("\n");
        for needle in [
            "by (",
            "without (",
            "group_left",
            "group_right",
            "on(",
            "ignoring(",
            " bool",
            "offset",
            "@ start()",
            "@ end()",
            "=~",
            "!~",
            "__name__",
            "topk(",
            "quantile(",
            "count_values(",
            "limitk(",
            "limit_ratio(",
            ":]",
            "0x",
            "Inf",
            "NaN",
            " and ",
            " or ",
            " unless ",
            "atan2",
            "label_replace(",
            "{\"",
        ] {
            assert!(text.contains(needle), "no expression contains {needle:?}");
        }
        for (f, _, _) in FUNCTIONS {
            assert!(text.contains(&format!("{f}(")), "no expression calls {f}");
        }
    }

    #[test]
    fn shrinks_are_smaller_or_simpler() {
        for seed in 0..300 {
            let e = generate(seed);
            for s in shrinks(&e) {
                assert!(s.size() <= e.size(), "{s} from {e}");
                assert_ne!(s, e, "a shrink of {e} is itself");
            }
        }
    }
}
