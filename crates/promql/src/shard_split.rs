//! A range query cut by series: each shard evaluates the whole query over
//! only the series its slice of a select holds, and the shards' results
//! are joined by labels.
//!
//! The answer is the whole evaluation's when every output series is
//! computed from the input series of one shard only. That holds for an
//! aggregation whose input series each come from one series of a single
//! selector, labels kept but for the name, with shards placed by the
//! aggregation's grouping labels: all series of a group then lie in the
//! shard of the group, which it computes whole, adding them in the same
//! order (label order) as the whole evaluation. A range query's series are
//! ordered by labels, so joining the shards' series restores the whole
//! answer. An instant query's are not (an aggregation lists its groups as
//! they first appear), so only range queries are cut.

use std::sync::Arc;

use cairn_storage::ShardBy;

use crate::func::Func;
use crate::ops::AggOp;
use crate::plan::Node;

/// How to place series in shards so that `root` may be cut by series, or
/// `None` when it must not be (see the module documentation).
pub(crate) fn shard_by(root: &Node) -> Option<Arc<ShardBy>> {
    let Node::Aggregate(a) = root else {
        return None;
    };
    // A label made of values is not among the input's labels.
    if a.op == AggOp::CountValues || !a.param.as_ref().is_none_or(constant) || !per_series(&a.input) {
        return None;
    }
    let names = a.grouping.names.clone();
    if a.grouping.without {
        Some(Arc::new(ShardBy::AllBut(names)))
    } else if names.is_empty() || names.iter().any(|n| n == cairn_model::METRIC_NAME) {
        // One group (nothing to cut), or a name some functions drop.
        None
    } else {
        Some(Arc::new(ShardBy::Labels(names)))
    }
}

/// Whether every series `node` yields comes from one series of the single
/// selector it holds, with that series' labels (but perhaps the name).
fn per_series(node: &Node) -> bool {
    match node {
        Node::Vector(_) | Node::Matrix(..) => true,
        Node::Neg(n) => per_series(n),
        Node::Subquery(sq) => per_series(&sq.inner),
        Node::Binary(b) => (per_series(&b.lhs) && constant(&b.rhs)) || (constant(&b.lhs) && per_series(&b.rhs)),
        Node::Call(call) => {
            let element_wise = matches!(
                call.func,
                Func::Range(_)
                    | Func::Timestamp
                    | Func::Sort { .. }
                    | Func::SortByLabel { .. }
                    | Func::Clamp(_)
                    | Func::Calendar(_)
                    | Func::Math(_)
            );
            let series_args = call.args.iter().filter(|a| per_series(a)).count();
            element_wise && series_args == 1 && call.args.iter().all(|a| per_series(a) || constant(a))
        }
        Node::Aggregate(_) | Node::Info(_) | Node::Number(_) | Node::Str(_) => false,
    }
}

/// Whether `node` reads no series: the same in every shard.
fn constant(node: &Node) -> bool {
    match node {
        Node::Number(_) | Node::Str(_) => true,
        Node::Neg(n) => constant(n),
        Node::Binary(b) => constant(&b.lhs) && constant(&b.rhs),
        Node::Call(call) => {
            matches!(call.func, Func::Time | Func::Pi | Func::Start | Func::End) && call.args.iter().all(constant)
        }
        Node::Vector(_) | Node::Matrix(..) | Node::Subquery(_) | Node::Aggregate(_) | Node::Info(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::{Engine, EngineOptions, QueryOptions};

    fn shard_by(q: &str) -> Option<String> {
        let engine = Engine::new(EngineOptions {
            step_split: crate::StepSplit::Always,
            ..EngineOptions::default()
        });
        let parsed = engine
            .parse_range(q, 0, 3_600_000, 60_000, &QueryOptions::default())
            .unwrap();
        parsed.shard_by().map(|by| format!("{by:?}"))
    }

    #[test]
    fn only_aggregations_of_one_selectors_series_are_cut_by_their_grouping() {
        let by_g = Some(r#"Labels(["g"])"#.to_string());
        assert_eq!(shard_by("sum by (g) (rate(m[5m]))"), by_g);
        assert_eq!(shard_by("max by (g) (abs(m * 2 - time()))"), by_g);
        assert_eq!(shard_by("topk by (g) (3, m)"), by_g);
        assert_eq!(shard_by("avg without (i) (m)"), Some(r#"AllBut(["i"])"#.to_string()));
        assert_eq!(shard_by("sum by (g) (max_over_time(rate(m[5m])[1h:]))"), by_g);
        for whole in [
            "sum(m)",
            "sum by (__name__) (m)",
            "sum by (g) (m / n)",
            "sum by (g) (m * scalar(n))",
            "sum by (g) (label_replace(m, \"g\", \"x\", \"\", \"\"))",
            "sum by (g) (histogram_quantile(0.9, m))",
            "sum by (g) (absent(m))",
            "sum by (g) (sum by (g, i) (m))",
            "count_values by (g) (\"v\", m)",
            "rate(m[5m])",
            "sum by (g) (m) + 1",
        ] {
            assert_eq!(shard_by(whole), None, "{whole}");
        }
    }
}
