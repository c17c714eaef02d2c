//! PromQL syntax checking of arbitrary text (queries and `match[]`
//! selectors come from any client): it must return, never panic, and any
//! error it reports lies within the text; a query it accepts with its node
//! ranges has every range inside the text and on character boundaries.

use cairn_promql::syntax::{Recognized, first_selector_error, recognize};

pub fn promql_syntax(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match recognize(text) {
        Recognized::Valid(nodes) => {
            for n in nodes {
                assert!(
                    n.start <= n.end && text.get(n.start..n.end).is_some(),
                    "{n:?} in {text:?}"
                );
            }
        }
        Recognized::Error(e) => assert!(e.pos <= text.len(), "{e:?} in {text:?}"),
        Recognized::TooDeep => {}
    }
    if let Some(e) = first_selector_error(text) {
        assert!(e.pos <= text.len(), "{e:?} in {text:?}");
    }
}
