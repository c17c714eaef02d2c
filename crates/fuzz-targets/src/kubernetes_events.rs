//! Kubernetes discovery from an API server's watch events, as arbitrary
//! bytes (the first picks the role with its low six bits and
//! `attach_metadata` with the other two): it must never
//! panic; every target has an address; each object has one group; and the
//! same events seen twice leave the same targets, since each object ends
//! as its last event left it.

use cairn_scrape::discovery::TargetGroup;
use cairn_scrape::discovery::kubernetes::{Attach, Role, discover_from_events};

pub fn kubernetes_events(data: &[u8]) {
    let Some((&flags, events)) = data.split_first() else {
        return;
    };
    let role = Role::ALL[usize::from(flags & 0x3f) % Role::ALL.len()];
    let attach = Attach {
        node: flags & 0x40 != 0,
        namespace: flags & 0x80 != 0,
    };
    let groups = sorted(discover_from_events(role, attach, events));
    for g in &groups {
        for t in &g.targets {
            assert!(
                t.contains_key("__address__"),
                "{role:?}: a target without an address in {g:?}"
            );
        }
    }
    let sources: std::collections::BTreeSet<&str> = groups.iter().map(|g| g.source.as_str()).collect();
    assert_eq!(sources.len(), groups.len(), "{role:?}: two groups of one source");
    let mut twice = events.to_vec();
    twice.push(b'\n');
    twice.extend_from_slice(events);
    assert_eq!(
        sorted(discover_from_events(role, attach, &twice)),
        groups,
        "{role:?}: the same events twice"
    );
}

/// Groups by source, each group's targets in order: a group's targets
/// come from maps whose order is not kept.
fn sorted(mut groups: Vec<TargetGroup>) -> Vec<TargetGroup> {
    for g in &mut groups {
        g.targets.sort();
    }
    groups.sort_by(|a, b| a.source.cmp(&b.source));
    groups
}
