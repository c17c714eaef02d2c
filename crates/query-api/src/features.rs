//! `GET /api/v1/features`: which of Prometheus 3.14's features Cairn has,
//! in Prometheus' shape (category → feature → bool), so a client can ask
//! before it uses one. PromQL functions and operators are answered by the
//! engine itself; categories of things Cairn does not do at all (rules,
//! scraping, service discovery, templating) are left out.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use cairn_http::Success;
use cairn_promql::Engine;

/// The functions Prometheus 3.14 lists, each answered by the engine.
const FUNCTIONS: [&str; 90] = [
    "abs",
    "absent",
    "absent_over_time",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "avg_over_time",
    "ceil",
    "changes",
    "clamp",
    "clamp_max",
    "clamp_min",
    "cos",
    "cosh",
    "count_over_time",
    "day_of_month",
    "day_of_week",
    "day_of_year",
    "days_in_month",
    "deg",
    "delta",
    "deriv",
    "double_exponential_smoothing",
    "end",
    "exp",
    "first_over_time",
    "floor",
    "histogram_avg",
    "histogram_count",
    "histogram_fraction",
    "histogram_quantile",
    "histogram_quantiles",
    "histogram_stddev",
    "histogram_stdvar",
    "histogram_sum",
    "hour",
    "idelta",
    "increase",
    "info",
    "irate",
    "label_join",
    "label_replace",
    "last_over_time",
    "ln",
    "log10",
    "log2",
    "mad_over_time",
    "max_of",
    "max_over_time",
    "min_of",
    "min_over_time",
    "minute",
    "month",
    "pi",
    "predict_linear",
    "present_over_time",
    "quantile_over_time",
    "rad",
    "range",
    "rate",
    "resets",
    "round",
    "scalar",
    "sgn",
    "sin",
    "sinh",
    "sort",
    "sort_by_label",
    "sort_by_label_desc",
    "sort_desc",
    "sqrt",
    "start",
    "start_timestamp",
    "stddev_over_time",
    "stdvar_over_time",
    "step",
    "sum_over_time",
    "tan",
    "tanh",
    "time",
    "timestamp",
    "ts_of_first_over_time",
    "ts_of_last_over_time",
    "ts_of_max_over_time",
    "ts_of_min_over_time",
    "vector",
    "year",
];

/// Prometheus 3.14's operators and aggregations besides the label matchers
/// and `@` (which Cairn has): `</` and `>/` are its experimental trimming
/// comparisons.
const OPERATORS: [&str; 32] = [
    "!=",
    "%",
    "*",
    "+",
    "-",
    "/",
    "<",
    "</",
    "<=",
    "==",
    ">",
    ">/",
    ">=",
    "^",
    "and",
    "atan2",
    "avg",
    "bottomk",
    "count",
    "count_values",
    "group",
    "limit_ratio",
    "limitk",
    "max",
    "min",
    "or",
    "quantile",
    "stddev",
    "stdvar",
    "sum",
    "topk",
    "unless",
];

type Category = BTreeMap<&'static str, bool>;

fn category(entries: &[(&'static str, bool)]) -> Category {
    entries.iter().copied().collect()
}

pub async fn features(Extension(engine): Extension<Arc<Engine>>) -> Success<BTreeMap<&'static str, Category>> {
    let delayed_name_removal = engine.options().delayed_name_removal;
    let type_and_unit_labels = engine.options().type_and_unit_labels;
    let mut operators: Category = OPERATORS
        .iter()
        .map(|&op| (op, cairn_promql::supports_operator(op)))
        .collect();
    operators.extend([("=~", true), ("!~", true), ("@", true)]);
    let all = BTreeMap::from([
        (
            "api",
            category(&[
                ("admin", true),
                ("exclude_alerts", true),
                ("label_values_match", true),
                ("lifecycle", false),
                ("openapi_3.1", false),
                ("openapi_3.2", false),
                ("otlp_write_receiver", true),
                ("query_stats", false),
                ("query_warnings", true),
                ("remote_write_receiver", true),
                ("search", false),
                ("time_range_labels", true),
                ("time_range_series", true),
            ]),
        ),
        (
            "otlp_receiver",
            category(&[("delta_conversion", false), ("native_delta_ingestion", false)]),
        ),
        (
            "prometheus",
            category(&[
                ("agent_mode", false),
                ("auto_reload_config", false),
                ("server_mode", true),
            ]),
        ),
        (
            "promql",
            category(&[
                ("anchored", true),
                ("at_modifier", true),
                ("bool", true),
                ("by", true),
                ("delayed_name_removal", delayed_name_removal),
                ("duration_expr", true),
                ("fill", true),
                ("fill_left", true),
                ("fill_right", true),
                ("group_left", true),
                ("group_right", true),
                ("ignoring", true),
                ("negative_offset", true),
                ("offset", true),
                ("on", true),
                ("per_query_lookback_delta", true),
                ("per_step_stats", false),
                ("smoothed", true),
                ("subqueries", true),
                ("type_and_unit_labels", type_and_unit_labels),
                ("without", true),
            ]),
        ),
        (
            "promql_functions",
            FUNCTIONS
                .iter()
                .map(|&f| (f, cairn_promql::supports_function(f)))
                .collect(),
        ),
        ("promql_operators", operators),
        (
            "tsdb",
            category(&[
                ("exemplar_storage", false),
                ("isolation", true),
                ("native_histograms", true),
            ]),
        ),
        ("ui", category(&[("ui_v2", false), ("ui_v3", false)])),
    ]);
    Success::new(all)
}
