//! The range query results cache of a cluster: kept on the node a query
//! reaches, its settled steps used only while settled data changed nowhere:
//! not on any ingester a read asks (a backfill or a delete through any
//! node, an ingester gone or back) and not in the compacted days.

use crate::common::three_nodes::ThreeNodes;
use crate::common::{Client, ms_to_param, now_ms, series, two_request_counters};

const MIN: i64 = 60_000;

/// A range query's answer through the cache, asserted equal to the one
/// with `nocache=1`.
fn range(client: &Client, query: &str, start: i64) -> String {
    let (from, to) = (ms_to_param(start), ms_to_param(start + 2 * 60 * MIN));
    let ask = |nocache: bool| {
        let mut params = vec![("query", query), ("start", &from), ("end", &to), ("step", "60")];
        if nocache {
            params.push(("nocache", "1"));
        }
        let r = client.get_query("/api/v1/query_range", &params);
        assert_eq!(r.status, 200, "{query}: {}", r.body);
        r.body
    };
    let cached = ask(false);
    assert_eq!(cached, ask(true), "{query} from {start}");
    cached
}

#[test]
fn a_clusters_range_queries_reuse_settled_steps_until_settled_data_changes_on_any_node() {
    let Some(mut cluster) = ThreeNodes::start(&[]) else {
        return;
    };
    let now = now_ms() / MIN * MIN;
    let t0 = now - 3 * 60 * MIN;
    cluster.nodes[0].client().write(&two_request_counters(t0, now));
    // Queries reach node 1; data changes through the others.
    let asked = cluster.nodes[1].client();
    let hits = || asked.metric("cairn_results_cache_hits_total").unwrap_or(0.0);
    let invalidations = || asked.metric("cairn_results_cache_invalidations_total").unwrap_or(0.0);
    let query = "sum by (job) (rate(requests_total[5m]))";
    // The window of a dashboard, moved on by a step at each refresh.
    let mut start = t0 + 30 * MIN;
    let mut refresh = || {
        start += MIN;
        range(&asked, query, start)
    };

    refresh();
    let before = hits();
    refresh();
    refresh();
    assert_eq!(hits(), before + 2.0, "a dashboard's refreshes reuse the kept steps");

    // A backfill through another node, among the kept steps.
    let (hits_before, invalidations_before) = (hits(), invalidations());
    cluster.nodes[2].client().write(&[series(
        &[("__name__", "requests_total"), ("job", "c")],
        &[(t0 + 60 * MIN, 1.0), (t0 + 61 * MIN, 100.0)],
    )]);
    let answer = refresh();
    assert!(answer.contains(r#""job":"c""#), "{answer}");
    assert_eq!(
        (hits(), invalidations()),
        (hits_before, invalidations_before + 1.0),
        "a backfill through another node"
    );
    refresh();
    assert_eq!(hits(), hits_before + 1.0, "kept again once computed at the new count");

    // An ingester gone: the others' answers are complete, and kept.
    cluster.nodes[0].kill9();
    let invalidations_before = invalidations();
    refresh();
    assert_eq!(invalidations(), invalidations_before + 1.0, "an ingester gone");
    let hits_before = hits();
    refresh();
    assert_eq!(hits(), hits_before + 1.0, "kept with an ingester down");

    // Back (its count starts elsewhere after a restart): what it holds may
    // differ from what the others answered.
    cluster.nodes[0].restart();
    cluster.wait_rejoined(0);
    let invalidations_before = invalidations();
    refresh();
    assert!(invalidations() > invalidations_before, "an ingester back");

    // A delete through another node.
    let r = cluster.nodes[2]
        .client()
        .post_form("/api/v1/admin/tsdb/delete_series", &[("match[]", r#"{job="b"}"#)]);
    assert_eq!(r.status, 204, "{}", r.body);
    let answer = refresh();
    assert!(!answer.contains(r#""job":"b""#), "{answer}");
    assert!(answer.contains(r#""job":"a""#), "{answer}");
}
