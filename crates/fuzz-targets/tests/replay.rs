//! Replays every kept fuzz input through its target: the minimized corpus
//! (`fuzz/corpus/<target>/`) and the inputs that once crashed a target
//! (`fuzz/regressions/<target>/`). One test per target, so a failure names
//! the target, and its message names every input file that panicked.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use cairn_fuzz_targets::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted; none when the folder does not exist.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable folder entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs `target` on every kept input; returns how many ran, and panics with
/// the names of the inputs that panicked.
fn replay(name: &str) -> usize {
    let (_, target) = TARGETS.iter().find(|(n, _)| *n == name).expect("a known target");
    let files: Vec<PathBuf> = ["corpus", "regressions"]
        .iter()
        .flat_map(|kind| inputs(&fuzz_dir().join(kind).join(name)))
        .collect();
    let failed: Vec<String> = files
        .iter()
        .filter(|file| {
            let data = fs::read(file).expect("a readable input");
            catch_unwind(AssertUnwindSafe(|| target(&data))).is_err()
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{name} panicked on {} input(s):\n{}",
        failed.len(),
        failed.join("\n")
    );
    files.len()
}

macro_rules! replay_tests {
    ($($name:ident)*) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*

        /// Every target has a test above, and a corpus to replay.
        #[test]
        fn every_target_is_replayed_from_a_kept_corpus() {
            let tested = [$(stringify!($name)),*];
            for (name, _) in TARGETS {
                assert!(tested.contains(name), "{name} has no replay test");
                assert!(
                    !inputs(&fuzz_dir().join("corpus").join(name)).is_empty(),
                    "{name} has no kept corpus under fuzz/corpus/{name}/"
                );
            }
        }
    };
}

replay_tests! {
    cluster_frames
    codec_histograms
    codec_timestamps
    codec_values
    csv
    dns_answer
    exposition_openmetrics
    exposition_protobuf
    exposition_text
    graphite
    histograms
    influx
    json_lines
    kubernetes_events
    opentsdb
    otlp
    prom_text
    promql_syntax
    remote_read
    remote_write
    remote_write_v2
    scrape_http_response
    tsdb_histogram_file
    tsdb_index_segment
    tsdb_losses
    tsdb_part
    tsdb_tombstones
    tsdb_wal_record
    vm_native
}
