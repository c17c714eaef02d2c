//! Relabelling regexes match exactly what Go's `regexp` matches, as
//! Prometheus compiles them (`^(?s:<pattern>)$`). The verdicts in
//! `testdata/go_regex_verdicts.tsv` (pattern, input, Go's `true`/`false`, or
//! `ERR` when Go refuses the pattern) were produced by Go 1.x's `regexp`
//! over random patterns mixing the syntax where RE2 dialects differ.

use std::path::Path;

use cairn_config::RelabelRegex;

#[test]
fn go_regex_verdicts_agree_with_go() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/go_regex_verdicts.tsv");
    let verdicts = std::fs::read_to_string(path).unwrap();
    let mut disagreements = Vec::new();
    let mut count = 0;
    for line in verdicts.lines() {
        let mut fields = line.split('\t');
        let (Some(pattern), Some(input), Some(go)) = (fields.next(), fields.next(), fields.next()) else {
            panic!("malformed line {line:?}");
        };
        let ours = match RelabelRegex::new(pattern) {
            Ok(re) => re.is_match(input).to_string(),
            Err(_) => "ERR".to_string(),
        };
        if ours != go {
            disagreements.push(format!("{pattern:?} on {input:?}: Go {go}, Cairn {ours}"));
        }
        count += 1;
    }
    assert!(count > 3000, "only {count} verdicts");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// `testdata/go_expand_verdicts.tsv` holds (pattern, input, template, Go's
/// `%q` of `Regexp.ExpandString` after a full match, or `NOMATCH`).
#[test]
fn go_expand_verdicts_agree_with_go() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata/go_expand_verdicts.tsv");
    let verdicts = std::fs::read_to_string(path).unwrap();
    let mut disagreements = Vec::new();
    let mut count = 0;
    for line in verdicts.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [pattern, input, template, go] = fields[..] else {
            panic!("malformed line {line:?}");
        };
        let re = RelabelRegex::new(pattern).unwrap();
        let ours = match re.regex().captures(input) {
            None => "NOMATCH".to_string(),
            Some(captures) => {
                let mut expanded = String::new();
                cairn_config::relabel::expand(&mut expanded, template, &captures);
                format!("{expanded:?}")
            }
        };
        if ours != go {
            disagreements.push(format!(
                "{pattern:?} on {input:?} with {template:?}: Go {go}, Cairn {ours}"
            ));
        }
        count += 1;
    }
    assert!(count >= 1500, "only {count} verdicts");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
