use cairn_model::Labels;

use super::*;

fn rules_with(scheme: NameValidationScheme, yaml: &str) -> Vec<RelabelConfig> {
    let mut configs: Vec<RelabelConfig> = serde_yaml_ng::from_str(yaml).unwrap();
    for c in &mut configs {
        c.validate(scheme).unwrap();
    }
    configs
}

fn rules(yaml: &str) -> Vec<RelabelConfig> {
    rules_with(NameValidationScheme::Utf8, yaml)
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied())
}

fn abc() -> Labels {
    labels(&[("a", "foo"), ("b", "bar"), ("c", "baz")])
}

fn validation_error(yaml: &str) -> String {
    let mut config: RelabelConfig = serde_yaml_ng::from_str(yaml).unwrap();
    config.validate(NameValidationScheme::Utf8).unwrap_err().to_string()
}

#[test]
fn relabel_replace_with_defaults_copies_source() {
    let out = process(
        &labels(&[("a", "foo")]),
        &rules("- source_labels: [a]\n  target_label: b"),
    )
    .unwrap();
    assert_eq!(out, labels(&[("a", "foo"), ("b", "foo")]));
}

#[test]
fn relabel_replace_expands_braced_groups() {
    let r = rules("- {source_labels: [a], regex: 'f(.*)', target_label: d, replacement: 'ch${1}-ch${1}'}");
    let out = process(&abc(), &r).unwrap();
    assert_eq!(
        out,
        labels(&[("a", "foo"), ("b", "bar"), ("c", "baz"), ("d", "choo-choo")])
    );
}

#[test]
fn relabel_replace_chains_and_joins_sources() {
    let r = rules(
        "- {source_labels: [a, b], regex: 'f(.*);(.*)r', target_label: a, replacement: 'b${1}${2}m'}
- {source_labels: [c, a], regex: '(b).*b(.*)ba(.*)', target_label: d, replacement: '$1$2$2$3'}",
    );
    let out = process(&abc(), &r).unwrap();
    assert_eq!(
        out,
        labels(&[("a", "boobam"), ("b", "bar"), ("c", "baz"), ("d", "boooom")])
    );
}

#[test]
fn relabel_replace_custom_separator() {
    let r = rules("- {source_labels: [a, b], separator: '-', target_label: x}");
    assert_eq!(process(&abc(), &r).unwrap().get("x"), Some("foo-bar"));
}

#[test]
fn relabel_replace_without_match_changes_nothing() {
    let r = rules("- {source_labels: [a], regex: 'no-match', target_label: d}");
    assert_eq!(process(&abc(), &r).unwrap(), abc());
}

#[test]
fn relabel_regex_is_anchored_and_dot_matches_newline() {
    let r = rules("- {source_labels: [a], regex: 'o', action: keep}");
    assert_eq!(process(&abc(), &r), None);
    let r = rules("- {source_labels: [a], regex: 'f.*', action: keep}");
    assert!(process(&labels(&[("a", "f\noo")]), &r).is_some());
    let r = rules("- {source_labels: [a], regex: 'foo|bar', action: keep}");
    assert!(process(&labels(&[("a", "bar")]), &r).is_some());
    assert_eq!(process(&labels(&[("a", "foobar")]), &r), None);
}

#[test]
fn relabel_replace_empty_result_deletes_target() {
    let r = rules("- {source_labels: [a], regex: 'f(.*)', target_label: b, replacement: '$2'}");
    assert_eq!(process(&abc(), &r).unwrap(), labels(&[("a", "foo"), ("c", "baz")]));
}

#[test]
fn relabel_replace_missing_source_sets_literal_replacement() {
    let r = rules("- {source_labels: [missing], target_label: foo, replacement: bar}");
    assert_eq!(
        process(&labels(&[("a", "x")]), &r).unwrap(),
        labels(&[("a", "x"), ("foo", "bar")])
    );
    // With a regex that needs a character, the empty value does not match.
    let r = rules("- {source_labels: [missing], regex: '(.+)', target_label: foo, replacement: bar}");
    assert_eq!(process(&labels(&[("a", "x")]), &r).unwrap(), labels(&[("a", "x")]));
    // No source labels at all: the joined value is empty too.
    let r = rules("- {target_label: env, replacement: prod}");
    assert_eq!(process(&Labels::empty(), &r).unwrap(), labels(&[("env", "prod")]));
}

#[test]
fn relabel_replace_templated_target_label() {
    let r = rules("- {source_labels: [a], regex: 'some-([^-]+)-([^,]+)', target_label: '${1}', replacement: '${2}'}");
    let out = process(&labels(&[("a", "some-name-value")]), &r).unwrap();
    assert_eq!(out, labels(&[("a", "some-name-value"), ("name", "value")]));
}

#[test]
fn relabel_replace_skips_invalid_expanded_target() {
    // An empty expanded name is invalid under either scheme.
    let r = rules("- {source_labels: [a], regex: 'some-([^-]*)-(.*)', target_label: '${1}', replacement: '${2}'}");
    let input = labels(&[("a", "some--value")]);
    assert_eq!(process(&input, &r).unwrap(), input);
    // Under legacy names, `-` is not allowed; under UTF-8 it is.
    let yaml = "- {source_labels: [a], regex: 'some-(.*)=(.*)', target_label: '${1}', replacement: '${2}'}";
    let input = labels(&[("a", "some-na-me=value")]);
    let legacy = rules_with(NameValidationScheme::Legacy, yaml);
    assert_eq!(process(&input, &legacy).unwrap(), input);
    let utf8 = rules(yaml);
    assert_eq!(process(&input, &utf8).unwrap().get("na-me"), Some("value"));
}

#[test]
fn relabel_replace_dollar_one_x_names_a_group() {
    let r = rules("- {source_labels: [a], regex: '(f)oo', target_label: b, replacement: '$1x'}");
    // `$1x` is the absent group `1x`: the result is empty and deletes `b`.
    assert_eq!(process(&abc(), &r).unwrap().get("b"), None);
    let r = rules("- {source_labels: [a], regex: '(f)oo', target_label: b, replacement: '${1}x'}");
    assert_eq!(process(&abc(), &r).unwrap().get("b"), Some("fx"));
}

#[test]
fn relabel_replace_named_groups() {
    let r = rules(
        "- {source_labels: [a], regex: '(?P<head>f)(?P<tail>.*)', target_label: b, replacement: '$tail-${head}'}",
    );
    assert_eq!(process(&abc(), &r).unwrap().get("b"), Some("oo-f"));
}

#[test]
fn relabel_drop_and_keep() {
    let drop = rules("- {source_labels: [a], regex: '.*o.*', action: drop}");
    assert_eq!(process(&abc(), &drop), None);
    let drop_other = rules("- {source_labels: [a], regex: 'no-match', action: drop}");
    assert_eq!(process(&abc(), &drop_other).unwrap(), abc());
    let keep = rules("- {source_labels: [a], regex: 'f.*', action: keep}");
    assert_eq!(process(&abc(), &keep).unwrap(), abc());
    let keep_other = rules("- {source_labels: [a], regex: 'no-match', action: keep}");
    assert_eq!(process(&abc(), &keep_other), None);
    // A dropping rule stops processing: later rules do not run.
    let both = rules("- {source_labels: [a], regex: '.*o.*', action: drop}\n- {source_labels: [a], target_label: d}");
    assert_eq!(process(&abc(), &both), None);
}

#[test]
fn relabel_keep_on_missing_label_matches_empty() {
    let keep_empty = rules("- {source_labels: [missing], regex: '', action: keep}");
    assert!(process(&abc(), &keep_empty).is_some());
    let keep_nonempty = rules("- {source_labels: [missing], regex: '.+', action: keep}");
    assert_eq!(process(&abc(), &keep_nonempty), None);
}

#[test]
fn relabel_keepequal_and_dropequal() {
    let input = labels(&[("a", "foo"), ("b", "foo"), ("c", "bar")]);
    let keep_eq = rules("- {source_labels: [a], target_label: b, action: keepequal}");
    assert_eq!(process(&input, &keep_eq).unwrap(), input);
    let keep_ne = rules("- {source_labels: [a], target_label: c, action: keepequal}");
    assert_eq!(process(&input, &keep_ne), None);
    let drop_eq = rules("- {source_labels: [a], target_label: b, action: dropequal}");
    assert_eq!(process(&input, &drop_eq), None);
    let drop_ne = rules("- {source_labels: [a], target_label: c, action: dropequal}");
    assert_eq!(process(&input, &drop_ne).unwrap(), input);
    // A missing target compares as empty.
    let drop_missing = rules("- {source_labels: [x], target_label: y, action: dropequal}");
    assert_eq!(process(&input, &drop_missing), None);
}

#[test]
fn relabel_hashmod_matches_prometheus() {
    let r = rules("- {source_labels: [c], target_label: d, action: hashmod, modulus: 1000}");
    assert_eq!(process(&abc(), &r).unwrap().get("d"), Some("976"));
    let r = rules("- {source_labels: [a], target_label: b, action: hashmod, modulus: 1000}");
    assert_eq!(
        process(&labels(&[("a", "foo\nbar")]), &r).unwrap().get("b"),
        Some("734")
    );
    let r = rules("- {source_labels: [a, b], target_label: h, action: hashmod, modulus: 1000}");
    assert_eq!(
        process(&labels(&[("a", "foo"), ("b", "bar")]), &r).unwrap().get("h"),
        Some("750")
    );
}

#[test]
fn relabel_labelmap_copies_matching_names() {
    let r = rules("- {regex: '__meta_(.+)', action: labelmap}");
    let input = labels(&[("__meta_env", "prod"), ("__meta_zone", "eu"), ("job", "x")]);
    let out = process(&input, &r).unwrap();
    assert_eq!(
        out,
        labels(&[
            ("__meta_env", "prod"),
            ("__meta_zone", "eu"),
            ("env", "prod"),
            ("job", "x"),
            ("zone", "eu")
        ])
    );
    let r = rules("- {regex: '(b.*)', replacement: 'x_${1}', action: labelmap}");
    assert_eq!(process(&abc(), &r).unwrap().get("x_b"), Some("bar"));
}

#[test]
fn relabel_labelmap_later_label_wins_on_collision() {
    let r = rules("- {regex: '__meta_(?:a|b)', replacement: 'x', action: labelmap}");
    let out = process(&labels(&[("__meta_a", "1"), ("__meta_b", "2")]), &r).unwrap();
    assert_eq!(out.get("x"), Some("2"));
}

#[test]
fn relabel_labelmap_sees_labels_set_by_earlier_rules() {
    let r = rules("- {target_label: __tmp_x, replacement: v}\n- {regex: '__tmp_(.*)', action: labelmap}");
    assert_eq!(
        process(&Labels::empty(), &r).unwrap(),
        labels(&[("__tmp_x", "v"), ("x", "v")])
    );
}

#[test]
fn relabel_labeldrop_and_labelkeep() {
    let drop = rules("- {regex: '[ab]', action: labeldrop}");
    assert_eq!(process(&abc(), &drop).unwrap(), labels(&[("c", "baz")]));
    let keep = rules("- {regex: '[ab]', action: labelkeep}");
    assert_eq!(process(&abc(), &keep).unwrap(), labels(&[("a", "foo"), ("b", "bar")]));
    // Dropping everything leaves an empty set, not a dropped one.
    let all = rules("- {regex: '.*', action: labeldrop}");
    assert_eq!(process(&abc(), &all).unwrap(), Labels::empty());
}

#[test]
fn relabel_lowercase_and_uppercase() {
    let input = labels(&[("a", "AbCd"), ("b", "Ünï")]);
    let lower = rules("- {source_labels: [a, b], target_label: low, action: lowercase}");
    assert_eq!(process(&input, &lower).unwrap().get("low"), Some("abcd;ünï"));
    let upper = rules("- {source_labels: [a], target_label: a, action: uppercase}");
    assert_eq!(process(&input, &upper).unwrap().get("a"), Some("ABCD"));
    // Rune by rune, as Go does: no final-sigma rule, no expansion of `ß`.
    let greek = rules("- {source_labels: [a], target_label: a, action: lowercase}");
    assert_eq!(
        process(&labels(&[("a", "ΟΔΟΣ İ")]), &greek).unwrap().get("a"),
        Some("οδοσ i")
    );
    let sharp = rules("- {source_labels: [a], target_label: a, action: uppercase}");
    assert_eq!(
        process(&labels(&[("a", "straße")]), &sharp).unwrap().get("a"),
        Some("STRAßE")
    );
    // An empty value removes the target.
    let empty = rules("- {source_labels: [missing], target_label: a, action: lowercase}");
    assert_eq!(process(&input, &empty).unwrap().get("a"), None);
}

#[test]
fn relabel_builder_form_matches_process() {
    let r = rules("- {source_labels: [a], target_label: z}\n- {regex: 'b', action: labeldrop}");
    let mut builder = LabelsBuilder::default();
    for input in [abc(), labels(&[("a", "1"), ("b", "2")])] {
        builder.reset(&input);
        assert!(process_builder(&mut builder, &r));
        assert_eq!(Some(builder.labels()), process(&input, &r));
    }
}

#[test]
fn relabel_yaml_defaults_and_action_case() {
    let c: RelabelConfig = serde_yaml_ng::from_str("action: LabelDrop\nregex: x").unwrap();
    assert_eq!(c.action, RelabelAction::LabelDrop);
    let d: RelabelConfig = serde_yaml_ng::from_str("target_label: t").unwrap();
    assert_eq!(d.separator, ";");
    assert_eq!(d.replacement, "$1");
    assert_eq!(d.action, RelabelAction::Replace);
    assert!(d.regex.is_default());
    assert_eq!(d.regex.as_str(), "(.*)");
    let null_regex: RelabelConfig = serde_yaml_ng::from_str("regex:\ntarget_label: t").unwrap();
    assert_eq!(null_regex.regex.as_str(), "");
    assert!(!null_regex.regex.is_match("x"));
    let err = serde_yaml_ng::from_str::<RelabelConfig>("action: explode").unwrap_err();
    assert!(err.to_string().contains("unknown relabel action \"explode\""), "{err}");
    let err = serde_yaml_ng::from_str::<RelabelConfig>("regex: '('").unwrap_err();
    assert!(err.to_string().contains("invalid regex \"(\""), "{err}");
    let err = serde_yaml_ng::from_str::<RelabelConfig>("target: x").unwrap_err();
    assert!(err.to_string().contains("unknown field `target`"), "{err}");
}

#[test]
fn relabel_validation_errors_match_prometheus() {
    let cases = [
        (
            "action: hashmod\ntarget_label: x",
            "relabel configuration for hashmod requires non-zero modulus",
        ),
        (
            "action: replace",
            "relabel configuration for replace action requires 'target_label' value",
        ),
        (
            "action: lowercase",
            "relabel configuration for lowercase action requires 'target_label' value",
        ),
        (
            "action: keepequal\nsource_labels: [a]",
            "relabel configuration for keepequal action requires 'target_label' value",
        ),
        (
            "action: hashmod\nmodulus: 2",
            "relabel configuration for hashmod action requires 'target_label' value",
        ),
        (
            "action: uppercase\ntarget_label: x\nreplacement: y",
            "'replacement' can not be set for uppercase action",
        ),
        (
            "action: labelmap\nreplacement: ''",
            "\"\" is invalid 'replacement' for labelmap action",
        ),
        (
            "action: keepequal\ntarget_label: x\nregex: '(.*)'",
            "keepequal action requires only 'source_labels' and `target_label`, and no other fields",
        ),
        (
            "action: dropequal\ntarget_label: x\nseparator: ','",
            "dropequal action requires only 'source_labels' and `target_label`, and no other fields",
        ),
        (
            "action: labeldrop\nsource_labels: [a]",
            "labeldrop action requires only 'regex', and no other fields",
        ),
        (
            "action: labelkeep\ntarget_label: a",
            "labelkeep action requires only 'regex', and no other fields",
        ),
        (
            "action: labelkeep\nreplacement: x",
            "labelkeep action requires only 'regex', and no other fields",
        ),
        (
            "action: labeldrop\nmodulus: 3",
            "labeldrop action requires only 'regex', and no other fields",
        ),
        ("source_labels: ['']\ntarget_label: a", "\"\" is not a valid label name"),
    ];
    for (yaml, expected) in cases {
        assert_eq!(validation_error(yaml), expected, "for {yaml:?}");
    }
}

#[test]
fn relabel_validation_of_target_names_depends_on_scheme() {
    let yaml = "action: replace\ntarget_label: 'a-b'";
    let mut c: RelabelConfig = serde_yaml_ng::from_str(yaml).unwrap();
    assert!(c.validate(NameValidationScheme::Utf8).is_ok());
    assert_eq!(
        c.validate(NameValidationScheme::Legacy).unwrap_err().to_string(),
        "\"a-b\" is invalid 'target_label' for replace action"
    );
    let mut templated: RelabelConfig = serde_yaml_ng::from_str("target_label: '${1}_x'").unwrap();
    assert!(templated.validate(NameValidationScheme::Legacy).is_ok());
    let mut bad: RelabelConfig = serde_yaml_ng::from_str("target_label: '${1}-x'").unwrap();
    assert!(bad.validate(NameValidationScheme::Legacy).is_err());
    let mut hash: RelabelConfig = serde_yaml_ng::from_str("action: hashmod\nmodulus: 2\ntarget_label: '$1'").unwrap();
    assert!(hash.validate(NameValidationScheme::Legacy).is_err());
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn arb_labels() -> impl Strategy<Value = Labels> {
        proptest::collection::btree_map("[a-e_]{1,3}", "[a-cé;$0-9]{0,4}", 0..6)
            .prop_map(|m| Labels::new(m.into_iter().map(|(n, v)| cairn_model::Label::new(n, v)).collect()).unwrap())
    }

    fn arb_rule() -> impl Strategy<Value = RelabelConfig> {
        let action = proptest::sample::select(RelabelAction::ALL.to_vec());
        let sources = proptest::collection::vec("[a-e_]{1,3}", 0..3);
        let regex = proptest::sample::select(vec!["(.*)", "a(.*)", "(b|c)+", "", "[a-c]?", "(?P<n>.)(.*)", "é.*"]);
        let template = proptest::sample::select(vec!["$1", "${1}x", "$1x", "$n", "$$", "lit", "", "$2_$1"]);
        let target = proptest::sample::select(vec!["a", "b", "${1}", "$2", "t_$1", "é"]);
        (action, sources, regex, template, target, 0u64..5).prop_map(
            |(action, source_labels, regex, replacement, target, modulus)| RelabelConfig {
                source_labels,
                regex: RelabelRegex::new(regex).unwrap(),
                replacement: replacement.to_string(),
                target_label: target.to_string(),
                modulus,
                action,
                ..RelabelConfig::default()
            },
        )
    }

    fn is_canonical(labels: &Labels) -> bool {
        labels.as_slice().windows(2).all(|w| w[0].name < w[1].name)
            && labels.iter().all(|l| !l.name.is_empty() && !l.value.is_empty())
    }

    proptest! {
        #[test]
        fn relabel_never_panics_and_stays_canonical(input in arb_labels(), configs in proptest::collection::vec(arb_rule(), 0..5)) {
            // Rules are applied whether or not they would pass validation: the
            // engine must be total.
            if let Some(out) = process(&input, &configs) {
                prop_assert!(is_canonical(&out), "{out:?}");
            }
        }

        #[test]
        fn relabel_builder_and_process_agree(input in arb_labels(), configs in proptest::collection::vec(arb_rule(), 0..5)) {
            let mut builder = LabelsBuilder::new(&Labels::from_pairs([("stale", "x")]));
            builder.reset(&input);
            let kept = process_builder(&mut builder, &configs);
            prop_assert_eq!(kept.then(|| builder.labels()), process(&input, &configs));
        }
    }
}
