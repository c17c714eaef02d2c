//! Which selectors are read for `histogram_count`, `histogram_sum` or
//! `histogram_avg` only. Prometheus reads those through an iterator that
//! detects counter resets between the histograms it reads and hints them,
//! so an aggregation inside such a function can find a `reset` hint beside
//! a `not_reset` one (and warn of the conflict) where a plain read sees
//! unknown hints. Cairn marks the same selectors to read them alike.

use super::Node;

/// Where a node sits relative to the functions that decide the reading.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// No histogram statistic above.
    Outside,
    /// Under `histogram_count`, `histogram_sum` or `histogram_avg`.
    Stats,
    /// Under a node that needs whole histograms or reads them again
    /// (a subquery, `histogram_quantile(s)`, `histogram_fraction`, a trim
    /// operator): above any statistic, this wins.
    Whole,
}

/// Marks the selectors under `root` that Prometheus reads for statistics.
pub(super) fn mark(root: &mut Node) {
    visit(root, Reach::Outside);
}

fn visit(node: &mut Node, reach: Reach) {
    let reach = match (&*node, reach) {
        (_, Reach::Whole) => Reach::Whole,
        (Node::Subquery(_), _) => Reach::Whole,
        (Node::Binary(b), _) if b.op.is_trim() => Reach::Whole,
        (Node::Call(c), _)
            if matches!(
                c.name,
                "histogram_quantile" | "histogram_quantiles" | "histogram_fraction"
            ) =>
        {
            Reach::Whole
        }
        (Node::Call(c), _) if matches!(c.name, "histogram_count" | "histogram_sum" | "histogram_avg") => Reach::Stats,
        (_, r) => r,
    };
    match node {
        Node::Vector(sel) | Node::Matrix(sel, _) => sel.detect_resets = reach == Reach::Stats,
        _ => node.children_mut().into_iter().for_each(|c| visit(c, reach)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::lower;
    use super::*;

    /// Whether each selector of `q`, in the order written, is read for statistics.
    fn marks(q: &str) -> Vec<bool> {
        fn collect(n: &Node, out: &mut Vec<bool>) {
            match n {
                Node::Vector(sel) | Node::Matrix(sel, _) => out.push(sel.detect_resets),
                _ => n.children().into_iter().for_each(|c| collect(c, out)),
            }
        }
        let times = super::super::QueryTimes::of(&crate::steps::Ctx {
            start: 0,
            end: 0,
            step: 0,
        });
        let root = lower(&crate::parse(q).unwrap(), times).unwrap();
        let mut out = Vec::new();
        collect(&root, &mut out);
        out
    }

    #[test]
    fn statistics_of_selectors_detect_resets_unless_something_needs_the_buckets() {
        assert_eq!(marks("histogram_count(sum(a))"), [true]);
        assert_eq!(marks("histogram_sum(sum_over_time(a[5m])) + b"), [true, false]);
        assert_eq!(marks("histogram_avg(rate(a[5m]))"), [true]);
        assert_eq!(marks("sum(a)"), [false]);
        assert_eq!(marks("histogram_count(increase(a[40m:9m]))"), [false]);
        assert_eq!(marks("histogram_count(a </ 5)"), [false]);
        assert_eq!(marks("histogram_fraction(0, 1, histogram_count(a))"), [false]);
    }
}
