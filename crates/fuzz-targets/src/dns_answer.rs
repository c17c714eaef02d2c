//! DNS discovery from a server's answer, as arbitrary bytes: it must
//! never panic, and every target has an address and the name asked.

use cairn_scrape::discovery::dns::{NAME_LABEL, targets_from_answer};

pub fn dns_answer(data: &[u8]) {
    let Ok(targets) = targets_from_answer(data, "targets.example", 9100) else {
        return;
    };
    for t in targets {
        assert!(
            t.get("__address__").is_some_and(|a| !a.is_empty()),
            "a target without an address: {t:?}"
        );
        assert_eq!(t.get(NAME_LABEL).map(String::as_str), Some("targets.example"), "{t:?}");
    }
}
