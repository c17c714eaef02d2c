//! Kubernetes discovery's fuzz check over inputs made of the kept corpus'
//! watch events: picked, repeated, reordered, given to another kind or
//! event type, and with a byte changed.

use std::path::Path;

use proptest::prelude::*;
use proptest::sample::Index;

/// Every event line of the kept corpus (its kind byte, then the JSON).
fn corpus_events() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/kubernetes_events");
    let mut events = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the kept corpus") {
        let input = std::fs::read(entry.expect("a corpus entry").path()).expect("a corpus file");
        let lines = input.get(1..).unwrap_or_default().split(|&b| b == b'\n');
        events.extend(lines.filter(|l| !l.is_empty()).map(<[u8]>::to_vec));
    }
    events.sort();
    events
}

const TYPES: [&str; 4] = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn discovery_keeps_its_invariants_over_mixed_events(
        flags in any::<u8>(),
        picks in proptest::collection::vec(
            (any::<Index>(), 0u8..7, 0..TYPES.len(), proptest::option::weighted(0.2, (any::<Index>(), any::<u8>()))),
            0..24,
        ),
    ) {
        let events = corpus_events();
        let mut input = vec![flags];
        for (pick, kind, event_type, change) in picks {
            let mut line = pick.get(&events).clone();
            line[0] = kind;
            let mut text = String::from_utf8_lossy(&line[1..]).into_owned();
            for t in TYPES {
                text = text.replace(&format!("\"type\": \"{t}\""), &format!("\"type\": \"{}\"", TYPES[event_type]));
            }
            line.truncate(1);
            line.extend_from_slice(text.as_bytes());
            if let Some((at, byte)) = change {
                let at = at.index(line.len());
                line[at] = byte;
            }
            input.extend_from_slice(&line);
            input.push(b'\n');
        }
        cairn_fuzz_targets::kubernetes_events(&input);
    }
}

/// The kept corpus reaches the building of targets for every role, so
/// that mutating it explores more than decoding errors.
#[test]
fn the_kept_corpus_discovers_targets_of_every_role() {
    use cairn_scrape::discovery::kubernetes::{Attach, Role, discover_from_events};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/kubernetes_events");
    let mut roles = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        let Some((&flags, events)) = input.split_first() else {
            continue;
        };
        let role = Role::ALL[usize::from(flags & 0x3f) % Role::ALL.len()];
        let attach = Attach {
            node: flags & 0x40 != 0,
            namespace: flags & 0x80 != 0,
        };
        if discover_from_events(role, attach, events)
            .iter()
            .any(|g| !g.targets.is_empty())
        {
            roles.insert(role.as_str());
        }
    }
    assert_eq!(roles.len(), Role::ALL.len(), "roles with targets: {roles:?}");
}
