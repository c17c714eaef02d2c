use cairn_model::Labels;

use super::*;

fn rule(yaml: &str) -> RelabelConfig {
    let mut config: RelabelConfig = serde_yaml_ng::from_str(yaml).unwrap();
    config.validate(NameValidationScheme::Utf8).unwrap();
    config
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied())
}

#[test]
fn relabel_replace_with_defaults_copies_source() {
    let r = rule("source_labels: [a]\ntarget_label: b");
    let out = process(&labels(&[("a", "foo")]), &[r]).unwrap();
    assert_eq!(out, labels(&[("a", "foo"), ("b", "foo")]));
}
