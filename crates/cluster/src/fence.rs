//! A node cut off from etcd while the other nodes reach it. Its lease
//! lapses, etcd drops its alive key, and the others take its share of the
//! monitoring work over; were it to keep that share, its targets would be
//! scraped twice and its alerts sent twice. So a node whose lease was not
//! renewed within its time to live (etcd has dropped it by then) asks the
//! others, and if one holds a current lease, and so follows etcd and takes
//! the share over, it gives its share up until it has registered again and
//! read the time it takes its share back from.
//!
//! A node no other answers, or whose peers hold no current lease either
//! (etcd down for all), keeps its share: the cluster never stops
//! monitoring because etcd is down.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::node::Cluster;

/// How often a node looks at whether to give its share up or take it back.
const LOOK_EVERY: Duration = Duration::from_millis(250);

pub(crate) async fn fence_while_cut_off(cluster: Arc<Cluster>) {
    loop {
        tokio::time::sleep(LOOK_EVERY).await;
        if cluster.deregistered.load(Ordering::Acquire) {
            return;
        }
        let fenced = cluster.fenced.load(Ordering::Acquire);
        let flip = if fenced {
            back_in_ring(&cluster)
        } else {
            !cluster.lease_current() && another_holds_a_lease(&cluster).await
        };
        if !flip {
            continue;
        }
        cluster.fenced.store(!fenced, Ordering::Release);
        if fenced {
            tracing::info!("registered again: taking a share of the monitoring work from the time published");
        } else {
            tracing::warn!("cut off from etcd while the other nodes reach it: giving the monitoring work up");
        }
        // The scrape and rule managers ask for their share again.
        cluster.work.send_modify(|_| {});
    }
}

/// Registered again, and the ring read since shows it alive with the time
/// it published: its share comes back from that time, after the others
/// have given it up.
fn back_in_ring(cluster: &Cluster) -> bool {
    if !cluster.registered() {
        return false;
    }
    let ring = cluster.ring();
    let from = cluster.monitors_from_ms.load(Ordering::Acquire);
    ring.members()
        .iter()
        .enumerate()
        .any(|(i, m)| cluster.is_me(m) && ring.is_alive(i) && m.monitors_from_ms == Some(from))
}

/// Whether another node answers that its lease is current.
async fn another_holds_a_lease(cluster: &Arc<Cluster>) -> bool {
    let ring = cluster.ring();
    for member in ring.members().iter().filter(|m| !cluster.is_me(m)) {
        let Ok(answer) = cluster.get_internal(member, "ring").await else {
            continue;
        };
        let view = serde_json::from_slice::<serde_json::Value>(&answer).unwrap_or_default();
        if view["lease_current"] == true {
            return true;
        }
    }
    false
}
