//! Cairn's own PromQL test scripts (`testdata/*.test`, Prometheus' format),
//! run with a Prometheus server's default engine options, whole and with
//! every range query split by steps over three threads: every eval must
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
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().expect("pool");
    let split = cairn_promql::EngineOptions {
        step_split: cairn_promql::StepSplit::Always,
        ..Default::default()
    };
    let mut evals = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read script");
        let whole = run_script_with(&text, cairn_promql::EngineOptions::default());
        let parts = pool.install(|| run_script_with(&text, split.clone()));
        for r in whole.into_iter().chain(parts) {
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
