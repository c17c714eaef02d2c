//! Runs every upstream Prometheus PromQL test script and reports
//! passed / failed / skipped-by-feature counts. Set `PROMQLTEST_VERBOSE=1` to
//! print every failure, `PROMQLTEST_VERBOSE=all` to print every pass too
//! (to compare two builds eval by eval).

use std::collections::BTreeMap;

use cairn_promqltest::{Outcome, run_script};

/// Ratchet: raise when more evals pass; a regression fails the test.
const MIN_PASSED: usize = 2169;

#[test]
fn upstream_promql_tests() {
    let Some(files) = cairn_promqltest::upstream_scripts() else {
        return;
    };
    let verbose = std::env::var_os("PROMQLTEST_VERBOSE");
    let list_passes = verbose.as_deref().is_some_and(|v| v == "all");
    let verbose = verbose.is_some();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut features: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read test file");
        let name = f.file_name().unwrap_or_default().to_string_lossy().to_string();
        let (mut p, mut fl, mut s) = (0, 0, 0);
        for r in run_script(&text) {
            match &r.outcome {
                Outcome::Pass => {
                    p += 1;
                    if list_passes {
                        println!("PASS {name}:{}", r.line);
                    }
                }
                Outcome::Fail(e) => {
                    fl += 1;
                    if verbose {
                        println!("FAIL {name}:{} {}\n     {e}", r.line, r.query);
                    }
                }
                Outcome::Skip(feat) => {
                    s += 1;
                    *features.entry(feat.clone()).or_default() += 1;
                }
            }
        }
        println!("{name:<28} passed {p:>4}  failed {fl:>4}  skipped {s:>4}");
        passed += p;
        failed += fl;
        skipped += s;
    }
    println!("TOTAL                        passed {passed:>4}  failed {failed:>4}  skipped {skipped:>4}");
    for (f, n) in &features {
        println!("  skipped {n:>4} needing {f}");
    }
    let ran = passed + failed;
    if ran > 0 {
        println!(
            "pass rate of evals not needing a skipped feature: {:.1}%",
            100.0 * passed as f64 / ran as f64
        );
    }
    assert!(passed >= MIN_PASSED, "passed {passed} < ratchet {MIN_PASSED}");
}

/// Splitting range queries by steps (`cairn_promql::StepSplit`) never
/// changes an outcome: every script runs again with every range query split
/// over three threads, and each eval must pass, fail or skip as it did whole.
#[test]
fn upstream_outcomes_are_the_same_split_by_steps() {
    let Some(files) = cairn_promqltest::upstream_scripts() else {
        return;
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("pool");
    let split = cairn_promql::EngineOptions {
        step_split: cairn_promql::StepSplit::Always,
        ..cairn_promqltest::upstream_options()
    };
    let mut compared = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read test file");
        let whole = run_script(&text);
        let parts = pool.install(|| cairn_promqltest::run_script_with(&text, split.clone()));
        assert_eq!(whole.len(), parts.len(), "{}", f.display());
        for (w, p) in whole.iter().zip(&parts) {
            assert_eq!(
                w.outcome,
                p.outcome,
                "{}:{} {} changes when split by steps",
                f.display(),
                w.line,
                w.query
            );
        }
        compared += whole.len();
    }
    println!("{compared} evals gave the same outcome split by steps");
}

/// The recognizer that words syntax errors as Prometheus does
/// (`cairn_promql::syntax`) must never report an error in a query
/// Prometheus reads: every upstream query that is expected to evaluate, and
/// every one the parser crate accepts.
#[test]
fn syntax_recognizer_accepts_every_valid_upstream_query() {
    let Some(files) = cairn_promqltest::upstream_scripts() else {
        return;
    };
    let eval = regex::Regex::new(r"^eval\S*\s+(?:instant at \S+|range from \S+ to \S+ step \S+)\s+(.+)$").unwrap();
    let mut checked = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read test file");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(query) = eval.captures(line.trim()).map(|c| c[1].to_string()) else {
                continue;
            };
            // The eval's own lines follow it, indented.
            let expects_failure = line.starts_with("eval_fail")
                || lines[i + 1..]
                    .iter()
                    .take_while(|l| l.starts_with(' ') || l.starts_with('\t'))
                    .any(|l| l.trim_start().starts_with("expect fail"));
            if expects_failure && promql_parser::parser::parse(&query).is_err() {
                continue;
            }
            checked += 1;
            let error = cairn_promql::syntax::first_error(&query);
            assert_eq!(error, None, "{}:{}: {query}", f.display(), i + 1);
        }
    }
    assert!(checked > 2000, "only {checked} queries found");
}
