//! A node cut off from etcd while the other nodes reach it. Its lease
//! lapses, etcd drops its alive key, and the others take its share of the
//! monitoring work over; were it to keep that share, its targets would be
//! scraped twice and its alerts sent twice. So a node whose lease was not
//! renewed within its time to live asks the others how they see it, and
//! once one with a current lease of its own (one that follows etcd) sees
//! it down, and so has taken its share, it gives its share up. It takes
//! it back once it has registered again and read, in the ring, the time
//! it publishes for that.
//!
//! A node no other answers, or that no node with a current lease sees
//! down (etcd down for all, or its lease not expired yet), keeps its
//! share: the cluster never stops monitoring because etcd is down.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::node::Cluster;

/// How often a node looks at whether to give its share up or take it back.
const LOOK_EVERY: Duration = Duration::from_millis(250);

pub(crate) async fn fence_while_cut_off(cluster: Arc<Cluster>) {
    // The registration a fenced node must get past to take its share back.
    let mut fenced_at_registration = None;
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        if cluster.deregistered.load(Ordering::Acquire) {
            return;
        }
        let registrations = cluster.registrations.load(Ordering::Acquire);
        let flip = match fenced_at_registration {
            Some(fenced_at) => registrations > fenced_at && back_in_ring(&cluster),
            None => !cluster.lease_current() && registrations > 0 && seen_down(&cluster).await,
        };
        if !flip {
            continue;
        }
        if fenced_at_registration.take().is_some() {
            tracing::info!("registered again: taking a share of the monitoring work from the time published");
        } else {
            fenced_at_registration = Some(registrations);
            tracing::warn!(
                "cut off from etcd, and seen down by the nodes that reach it: giving the monitoring work up"
            );
        }
        cluster
            .fenced
            .store(fenced_at_registration.is_some(), Ordering::Release);
        // The scrape and rule managers ask for their share again.
        cluster.work.send_modify(|_| {});
    }
}

/// The ring read since it registered again shows this node alive with the
/// time it published: its share comes back from that time, after the
/// others have given it up.
fn back_in_ring(cluster: &Cluster) -> bool {
    let ring = cluster.ring();
    let from = cluster.monitors_from_ms.load(Ordering::Acquire);
    ring.members()
        .iter()
        .enumerate()
        .any(|(i, m)| cluster.is_me(m) && ring.is_alive(i) && m.monitors_from_ms == Some(from))
}

/// Whether another node that monitors, with a current lease, sees this
/// one down: it has taken this one's share.
async fn seen_down(cluster: &Arc<Cluster>) -> bool {
    let ring = cluster.ring();
    let monitors = |m: &&crate::ring::Member| !cluster.is_me(m) && m.monitors_from_ms.is_some();
    for member in ring.members().iter().filter(monitors) {
        if let Ok(answer) = cluster.get_internal(member, "ring").await
            && sees_down(&answer, &cluster.config.node_id)
        {
            return true;
        }
    }
    false
}

/// Whether a node's answer to the ring route says its lease is current, it
/// is not fenced itself, and `node` is down.
fn sees_down(ring_answer: &[u8], node: &str) -> bool {
    let view: serde_json::Value = serde_json::from_slice(ring_answer).unwrap_or_default();
    let down = view["members"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["id"] == node && m["alive"] == false);
    view["lease_current"] == true && view["fenced"] == false && down
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_node_following_etcd_that_sees_this_one_down_fences_it() {
        let answer = |current: bool, alive: bool| {
            serde_json::json!({
                "lease_current": current,
                "fenced": false,
                "members": [{"id": "a", "alive": true}, {"id": "b", "alive": alive}],
            })
            .to_string()
        };
        assert!(sees_down(answer(true, false).as_bytes(), "b"));
        let fenced = answer(true, false).replace("\"fenced\":false", "\"fenced\":true");
        assert!(!sees_down(fenced.as_bytes(), "b"), "a node that gave its own share up");
        // etcd down for that node too: its view of b is stale.
        assert!(!sees_down(answer(false, false).as_bytes(), "b"));
        // b's lease has not expired in etcd yet.
        assert!(!sees_down(answer(true, true).as_bytes(), "b"));
        assert!(
            !sees_down(answer(true, false).as_bytes(), "c"),
            "a node it does not know"
        );
        assert!(!sees_down(b"garbage", "b"));
    }
}
