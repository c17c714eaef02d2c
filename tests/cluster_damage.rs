//! A part block damaged on one ingester of three (RF 3): reads through the
//! cluster stay complete through the other replicas, and the node restores
//! the block's samples from them and rewrites its part without the block,
//! so that its own storage holds every sample again.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cairn_model::{Labels, Sample};
use cairn_protocols::SeriesSamples;

use crate::common::three_nodes::ThreeNodes;
use crate::common::*;

const HOUR: i64 = 3_600_000;
const SERIES: usize = 6;
const SAMPLES: i64 = 240;

fn written(t0: i64) -> Vec<SeriesSamples> {
    (0..SERIES)
        .map(|i| {
            // Apart by a second: no series shares another's timestamps.
            let samples = (0..SAMPLES)
                .map(|k| Sample::new(t0 + i as i64 * 1000 + k * 15_000, (i * 1000) as f64 + k as f64))
                .collect();
            SeriesSamples::new(
                Labels::from_pairs([("__name__", "restored"), ("i", &i.to_string())]),
                samples,
            )
        })
        .collect()
}

fn parts_of(dir: &std::path::Path, t: i64) -> Vec<PathBuf> {
    let day = dir.join("partitions").join(cairn_tsdb::Day::of(t).to_string());
    let mut parts: Vec<PathBuf> = std::fs::read_dir(day)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cpart"))
        .collect();
    parts.sort();
    parts
}

/// Every sample of the series, as the node at `client` answers.
fn samples_read(client: &Client, t0: i64) -> Result<f64, String> {
    let r = client.get_query(
        "/api/v1/query",
        &[
            ("query", "sum(count_over_time(restored[2h]))"),
            ("time", &ms_to_param(t0 + HOUR + 60_000)),
        ],
    );
    if r.status != 200 {
        return Err(r.body);
    }
    let v = r.json();
    v["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| r.body.clone())
}

#[test]
fn a_damaged_block_on_one_ingester_is_restored_from_the_other_replicas() {
    let Some(mut cluster) = ThreeNodes::start(&[]) else {
        return;
    };
    let now = now_ms();
    let t0 = now - now.rem_euclid(HOUR) - 3 * HOUR;
    let series = written(t0);
    cluster.nodes[0].client().write(&series);
    // A clean stop puts the node's copy into parts.
    let damaged = 2;
    assert!(cluster.nodes[damaged].terminate(Duration::from_secs(60)).success());
    let dir = cluster.nodes[damaged].data_dir.clone();
    let parts = parts_of(&dir, t0);
    assert_eq!(parts.len(), 1, "{parts:?}");
    let blocks: Vec<_> = cairn_tsdb::Part::open(&parts[0]).unwrap().blocks().collect();
    let block = blocks[blocks.len() / 2];
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&parts[0])
        .unwrap();
    let mut byte = [0u8; 1];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut byte, block.end() - 1).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[byte[0] ^ 0x5a], block.end() - 1).unwrap();
    drop(f);
    assert!(!cairn_tsdb::check::check_dir(&dir).unwrap().is_clean());
    cluster.nodes[damaged].restart();

    // Reads through the damaged node are complete (they also find the damage).
    let expected = (SERIES as i64 * SAMPLES) as f64;
    let client = cluster.nodes[damaged].client();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match samples_read(&client, t0) {
            Ok(n) if n == expected => break,
            other => assert!(Instant::now() < deadline, "reads through the damaged node: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // The node restores the block and rewrites its part without it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cairn_tsdb::check::check_dir(&dir).unwrap().is_clean() {
        assert!(
            Instant::now() < deadline,
            "the damaged block was not restored; log:\n{}",
            cluster.nodes[damaged].log()
        );
        // Each read through the node keeps its answers complete meanwhile.
        assert_eq!(samples_read(&client, t0), Ok(expected));
        std::thread::sleep(Duration::from_millis(500));
    }
    let log = cluster.nodes[damaged].log();
    assert!(log.contains("restored damaged blocks from the other replicas"), "{log}");

    // The node's own storage holds every sample again: opened alone.
    for node in &mut cluster.nodes {
        node.terminate(Duration::from_secs(60));
    }
    let mut alone = Server::new(&dir, &[]);
    alone.restart();
    assert_eq!(samples_read(&alone.client(), t0), Ok(expected));
    let exported = alone.client().export(&["restored"], Some((t0 - HOUR, t0 + 2 * HOUR)));
    let mut got: Vec<(String, Vec<Sample>)> = exported
        .into_iter()
        .map(|e| (e.labels["i"].clone(), e.samples))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let want: Vec<(String, Vec<Sample>)> = series
        .iter()
        .map(|s| (s.labels.get("i").unwrap().to_string(), s.samples.clone()))
        .collect();
    assert_eq!(got, want);
}
