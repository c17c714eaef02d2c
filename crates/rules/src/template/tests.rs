//! Expectations produced by Go 1.26's text/template (the Go Prometheus 3.14 is built
//! with) over the data Prometheus gives alert templates.

use std::collections::BTreeMap;

use super::*;

const GO_CASES: &[(&str, &str)] = &[
    ("{{ $labels.instance }} is at {{ $value }}", "host1:9100 is at 0.8534"),
    (
        "{{ printf \"%.2f\" $value }}% / {{ printf \"%s\" $labels.job }} / {{ printf \"%v\" $value }} / {{ printf \"%d\" $value }}",
        "0.85% / node / 0.8534 / %!d(float64=0.8534)",
    ),
    (
        "{{ .Labels.missing }}|{{ $labels.missing }}|{{ (args 1).x }}|",
        "||<no value>|",
    ),
    ("{{- if gt $value 0.5 }} high {{- else }} low {{- end }}", " high"),
    (
        "{{ if gt $value 1 }}x{{ end }}",
        "EXEC template: __alert_A:1:118: executing \"__alert_A\" at <gt $value 1>: error calling gt: incompatible types for comparison: float64 and int",
    ),
    (
        "{{ range $k, $v := $labels }}{{ $k }}={{ $v }};{{ end }}",
        "instance=host1:9100;job=node;severity=page;",
    ),
    (
        "{{ range $labels }}[{{ . }}]{{ else }}none{{ end }}",
        "[host1:9100][node][page]",
    ),
    (
        "{{ with $labels.job }}job {{ . }}{{ else }}no job{{ end }} {{ with $labels.nope }}x{{ else }}no nope{{ end }}",
        "job node no nope",
    ),
    ("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}", "2"),
    (
        "{{ eq $labels.job \"node\" \"other\" }} {{ ne 1 2 }} {{ lt \"a\" \"b\" }} {{ and 1 0 2 }} {{ or 0 \"\" \"z\" }} {{ not 0 }}",
        "true true true 0 z true",
    ),
    (
        "{{ len $labels }} {{ index $labels \"job\" }} {{ index $externalLabels \"dc\" }} {{ $externalURL }}",
        "3 node eu1 http://prom.example:9090/prefix",
    ),
    ("{{/* a comment */}}a  {{- /* trimmed */ -}}  b", "ab"),
    (
        "{{ print 1 2 \"x\" 3 }}{{ println 1 \"a\" }}{{ printf \"%5.1f|%-3d|\" 3.14159 7 }}",
        "1 2x31 a\n  3.1|7  |",
    ),
    (
        "{{ .Nope }}",
        "EXEC template: __alert_A:1:115: executing \"__alert_A\" at <.Nope>: can't evaluate field Nope in type struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }",
    ),
    (
        "{{ $labels.job.x }}",
        "EXEC template: __alert_A:1:122: executing \"__alert_A\" at <$labels.job.x>: can't evaluate field x in type string",
    ),
    (
        "{{ nosuch 1 }}",
        "PARSE template: __alert_A:1: function \"nosuch\" not defined",
    ),
    (
        "{{ if }}x{{ end }}",
        "PARSE template: __alert_A:1: missing value for if",
    ),
    (
        "{{ range $k, $v := $labels }}{{ if eq $k \"job\" }}{{ break }}{{ end }}{{ $k }} {{ end }}",
        "instance ",
    ),
    (
        "{{ \"a\" | printf \"%s-%s\" \"b\" }} {{ 1.5 | printf \"%v\" }} {{ 0x10 }} {{ 1e3 }} {{ 'a' }}",
        "b-a 1.5 16 1000 97",
    ),
    (
        "{{ index $labels 1 }}",
        "EXEC template: __alert_A:1:115: executing \"__alert_A\" at <index $labels 1>: error calling index: value has type int; should be string",
    ),
    ("{{ $value | printf \"%.1f\" | printf \"%s!\" }}", "0.9!"),
    (
        "{{ len 3 }}",
        "EXEC template: __alert_A:1:115: executing \"__alert_A\" at <len 3>: error calling len: len of type int",
    ),
    (
        "{{ define \"t\" }}[{{ . }}]{{ end }}{{ template \"t\" $labels.job }}",
        "[node]",
    ),
    (
        "{{ eq 1 1.0 }}",
        "EXEC template: __alert_A:1:115: executing \"__alert_A\" at <eq 1 1.0>: error calling eq: incompatible types for comparison: int and float64",
    ),
    (
        "{{ $undefined }}",
        "PARSE template: __alert_A:1: undefined variable \"$undefined\"",
    ),
    (
        "{{ \"unclosed }}",
        "PARSE template: __alert_A:1: unterminated quoted string",
    ),
    ("{{ end }}", "PARSE template: __alert_A:1: unexpected {{end}}"),
    (
        "{{ 1 2 }}",
        "EXEC template: __alert_A:1:115: executing \"__alert_A\" at <1>: can't give argument to non-function 1",
    ),
    (
        "{{ and }}",
        "EXEC template: __alert_A:1:115: executing \"__alert_A\" at <and>: wrong number of args for and: want at least 1 got 0",
    ),
    (
        "{{ printf \"%s\" }} {{ printf \"%q\" \"a\\tb\" }} {{ printf \"%x\" \"hi\" }} {{ printf \"%t\" true }} {{ printf \"%e %g %G\" 1234.5678 0.000012 1e30 }}",
        "%!s(MISSING) \"a\\tb\" 6869 true 1.234568e+03 1.2e-05 1E+30",
    ),
    (
        "{{ printf \"%.3g|%.0f|%.10g|%g\" 1234.5678 2.5 0.1 100000.0 }}",
        "1.23e+03|2|0.1|100000",
    ),
    (
        "{{ if eq $labels.job \"x\" }}x{{ else if eq $labels.job \"node\" }}node{{ else }}other{{ end }}",
        "node",
    ),
    (
        "{{ with $labels.nope }}a{{ else with $labels.job }}b {{ . }}{{ end }}",
        "b node",
    ),
    (
        "{{ range $i, $k := args \"a\" \"b\" }}{{ $i }}:{{ $k }}/{{ $.ExternalURL }} {{ end }}",
        "arg0:a/http://prom.example:9090/prefix arg1:b/http://prom.example:9090/prefix ",
    ),
    (
        "{{ range $k, $v := $labels }}{{ if eq $k \"instance\" }}{{ continue }}{{ end }}{{ $k }} {{ end }}",
        "job severity ",
    ),
    (
        "{{ (index $labels \"job\") }} {{ len \"héllo\" }} {{ not \"\" }} {{ lt \"abc\" \"abd\" }}",
        "node 6 true true",
    ),
    (
        "{{ printf \"%6.2f%%\" 12.345 }} {{ printf \"%-8s|\" \"ab\" }} {{ printf \"%08.3f\" -3.14159 }} {{ printf \"%x %X %o\" 255 255 8 }}",
        " 12.35% ab      | -003.142 ff FF 10",
    ),
    ("a\n  {{- /* c */ -}}\n  b\n{{- \" c\" }}", "ab c"),
    (
        "{{ $x := \"outer\" }}{{ with $labels.job }}{{ $x := \"inner\" }}{{ $x }}{{ end }} {{ $x }}",
        "inner outer",
    ),
    (
        "{{ if and $labels.job (eq $value 0.8534) }}yes{{ end }} {{ or $labels.nope \"fallback\" }}",
        "yes fallback",
    ),
    ("{{ printf \"%v %v %v\" true nil (args) }}", "true <nil> map[]"),
    (
        "{{ printf \"%s\" $labels }}",
        "map[instance:host1:9100 job:node severity:page]",
    ),
    ("{{ printf \"%d %d\" 1 }}", "1 %!d(MISSING)"),
    (
        "{{ index (args 1 2) \"arg1\" }} {{ index (args) \"zz\" }}",
        "2 <no value>",
    ),
    (
        "{{ .Labels.job | printf \"%q\" }} {{ \"x\" | printf \"%s%s\" \"y\" }}",
        "\"node\" yx",
    ),
    ("{{ range $labels }}{{ . }}{{ break }}{{ end }}", "host1:9100"),
    (
        "{{ printf \"%.0f %.1e %g %g\" 2.5 123456.0 1e-7 123456789.0 }}",
        "2 1.2e+05 1e-07 1.23456789e+08",
    ),
    ("{{ 3 | printf \"%d-%d\" 4 }}", "4-3"),
    ("{{ with $x := $labels.job }}{{ $x }}{{ end }}", "node"),
    ("{{ if 0 }}a{{ else }}{{ if \"\" }}b{{ else }}c{{ end }}{{ end }}", "c"),
    (
        "{{ $value | printf \"%.3g\" }} {{ -1.5 }} {{ +2 }} {{ 1_000 }} {{ 0.5e1 }}",
        "0.853 -1.5 2 1000 5",
    ),
];

fn data() -> AlertData {
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    AlertData {
        labels: map(&[("instance", "host1:9100"), ("job", "node"), ("severity", "page")]),
        external_labels: map(&[("dc", "eu1")]),
        external_url: "http://prom.example:9090/prefix".into(),
        value: 0.8534,
    }
}

/// Like the Go program that made the expectations: `PARSE`/`EXEC` and Go's error, or the output.
fn run(text: &str) -> String {
    let ctx = Context {
        time_ms: 0,
        query: None,
        external_url: Some("http://prom.example:9090/prefix"),
    };
    match Template::parse("__alert_A", &format!("{ALERT_DEFS}{text}")) {
        Err(e) => format!("PARSE {e}"),
        Ok(t) => match t.execute(Value::Alert(std::rc::Rc::new(data())), &ctx) {
            Ok(s) => s,
            Err(e) => format!("EXEC {e}"),
        },
    }
}

#[test]
fn go_template_semantics_match_go() {
    let mut failures = Vec::new();
    for (text, want) in GO_CASES {
        let got = run(text);
        if got != *want {
            failures.push(format!("{text:?}\n   got {got:?}\n  want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn self_calling_templates_stop_with_an_error() {
    let out = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| run(r#"{{ define "a" }}x{{ template "a" . }}{{ end }}{{ template "a" . }}"#))
        .unwrap()
        .join()
        .unwrap();
    assert!(out.starts_with("EXEC template: __alert_A:"), "{out}");
    assert!(out.ends_with("exceeded maximum template depth (200)"), "{out}");
}

#[test]
fn deep_nesting_is_a_parse_error() {
    let deep = format!("{{{{ {}1{} }}}}", "(".repeat(300), ")".repeat(300));
    let out = run(&deep);
    assert!(out.ends_with("more than 200 nested actions or parentheses"), "{out}");
    assert_eq!(run(&format!("{{{{ {}1{} }}}}", "(".repeat(20), ")".repeat(20))), "1");
}
