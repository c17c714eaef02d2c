//! The kept DNS corpus is made of well-formed answers that reach the
//! building of targets, so that mutating it explores more than decoding.

use std::path::Path;

use cairn_scrape::discovery::dns::targets_from_answer;

#[test]
fn the_kept_corpus_holds_answers_of_every_record_type() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/dns_answer");
    let addresses = |file: &str| -> Vec<String> {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let targets = targets_from_answer(&bytes, "targets.example", 9100).unwrap();
        targets.into_iter().map(|t| t["__address__"].clone()).collect()
    };
    assert_eq!(addresses("srv"), ["node-1.example:9100", "node-2.example:9101"]);
    assert_eq!(addresses("a_and_cname"), ["10.0.0.1:9100", "10.0.0.2:9100"]);
    assert_eq!(addresses("aaaa"), ["[2001:db8::1]:9100", "10.0.0.3:9100"]);
    assert_eq!(addresses("mx_ns"), ["mail.example:9100", "ns1.example:9100"]);
    assert_eq!(addresses("escaped_names"), [r"a\.b\\c.example:80"]);
    assert!(addresses("txt_is_skipped").is_empty());
    assert!(addresses("nxdomain").is_empty());
}
