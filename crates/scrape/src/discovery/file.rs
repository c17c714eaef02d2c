//! File SD: the files matching a job's globs, read again when one changes
//! (polled: the paths, sizes and modification times every
//! `DiscoveryOptions::file_poll_interval`) and at every refresh interval.
//! A file that fails to read or parse keeps the groups it last gave, as in
//! Prometheus; a file that disappears takes its groups away.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;

use super::group::{parse_json_groups, parse_yaml_groups};
use super::{FILEPATH_LABEL, TargetGroup};
use crate::metrics::{DiscoveryCounters, inc};

type Snapshot = Vec<(String, Option<(SystemTime, u64)>)>;

pub(super) async fn run(
    files: Vec<String>,
    refresh_interval: Duration,
    poll_interval: Duration,
    counters: Arc<DiscoveryCounters>,
    tx: mpsc::Sender<Vec<TargetGroup>>,
) {
    let mut group_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut last_snapshot = None;
    let mut last_refresh = tokio::time::Instant::now();
    loop {
        let snapshot = snapshot(&files);
        let due = last_refresh.elapsed() >= refresh_interval;
        if last_snapshot.as_ref() != Some(&snapshot) || due {
            let updates = refresh(&snapshot, &mut group_counts, &counters);
            let first = last_snapshot.is_none();
            last_snapshot = Some(snapshot);
            last_refresh = tokio::time::Instant::now();
            // The first refresh is sent even when empty: it tells the job that
            // file discovery has run (a reload waits for it).
            if (first || !updates.is_empty()) && tx.send(updates).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(poll_interval).await;
    }
}

fn list_files(globs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for pattern in globs {
        match glob::glob(pattern) {
            Ok(paths) => out.extend(paths.flatten().map(|p| p.to_string_lossy().into_owned())),
            Err(e) => tracing::error!(glob = %pattern, err = %e, "Error expanding glob"),
        }
    }
    out.sort();
    out.dedup();
    out
}

fn snapshot(globs: &[String]) -> Snapshot {
    list_files(globs)
        .into_iter()
        .map(|f| {
            let meta = std::fs::metadata(&f)
                .ok()
                .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
            (f, meta)
        })
        .collect()
}

/// Reads every file; returns the groups to publish (a bad file's previous
/// groups stay as they are, a vanished file's sources are emptied).
fn refresh(
    snapshot: &Snapshot,
    group_counts: &mut BTreeMap<String, usize>,
    counters: &DiscoveryCounters,
) -> Vec<TargetGroup> {
    let mut updates = Vec::new();
    let mut counts = BTreeMap::new();
    for (path, _) in snapshot {
        match read_file(path) {
            Ok(groups) => {
                counts.insert(path.clone(), groups.len());
                updates.extend(groups);
            }
            Err(e) => {
                tracing::error!(path = %path, err = %e, "Error reading file");
                inc(&counters.file_read_errors);
                counts.insert(path.clone(), group_counts.get(path).copied().unwrap_or(0));
            }
        }
    }
    for (path, &old) in group_counts.iter() {
        let new = counts.get(path).copied().unwrap_or(0);
        for i in new..old {
            updates.push(TargetGroup {
                source: source(path, i),
                ..Default::default()
            });
        }
    }
    *group_counts = counts;
    updates
}

fn source(path: &str, i: usize) -> String {
    format!("{path}:{i}")
}

fn read_file(path: &str) -> Result<Vec<TargetGroup>, String> {
    let content = std::fs::read(path).map_err(|e| e.to_string())?;
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let groups = match ext.as_str() {
        "json" => parse_json_groups(&content)?,
        "yml" | "yaml" => parse_yaml_groups(&content)?,
        other => return Err(format!("unhandled file extension {other:?}")),
    };
    Ok(groups
        .into_iter()
        .enumerate()
        .map(|(i, (targets, mut labels))| {
            labels.insert(FILEPATH_LABEL.to_string(), path.to_string());
            TargetGroup::from_addresses(source(path, i), targets, labels)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_file_keeps_its_groups_and_a_removed_one_empties_them() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        std::fs::write(&a, r#"[{"targets":["x:1"]},{"targets":["y:1"]}]"#).unwrap();
        let globs = vec![dir.path().join("*.json").to_string_lossy().into_owned()];
        let mut counts = BTreeMap::new();
        let first = refresh(&snapshot(&globs), &mut counts, &DiscoveryCounters::default());
        assert_eq!(first.len(), 2);
        assert_eq!(first[0].labels[FILEPATH_LABEL], a.to_string_lossy());
        assert_eq!(first[1].source, format!("{}:1", a.to_string_lossy()));

        std::fs::write(&a, "not json").unwrap();
        assert!(refresh(&snapshot(&globs), &mut counts, &DiscoveryCounters::default()).is_empty());

        std::fs::write(&a, r#"[{"targets":["z:1"]}]"#).unwrap();
        let shrunk = refresh(&snapshot(&globs), &mut counts, &DiscoveryCounters::default());
        assert_eq!(shrunk.len(), 2);
        assert_eq!(shrunk[0].targets[0]["__address__"], "z:1");
        assert!(shrunk[1].targets.is_empty());

        std::fs::remove_file(&a).unwrap();
        let gone = refresh(&snapshot(&globs), &mut counts, &DiscoveryCounters::default());
        assert_eq!(gone.len(), 1);
        assert!(gone[0].targets.is_empty());
    }
}
