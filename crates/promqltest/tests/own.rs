//! Cairn's own PromQL test scripts (`testdata/*.test`, Prometheus' format),
//! run with a Prometheus server's default engine options: every eval must
//! pass, none may be skipped.

use std::path::PathBuf;

use cairn_promqltest::{Outcome, run_script_with};

#[test]
fn own_promql_scripts_pass() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("testdata")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut evals = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read script");
        for r in run_script_with(&text, cairn_promql::EngineOptions::default()) {
            evals += 1;
            assert!(
                r.outcome == Outcome::Pass,
                "{}:{} {}: {:?}",
                f.display(),
                r.line,
                r.query,
                r.outcome
            );
        }
    }
    println!("{evals} evals passed");
}
