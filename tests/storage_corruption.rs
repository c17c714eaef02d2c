//! Bit rot, end to end: data written over remote write into two days, the
//! real binary stopped, one byte flipped in one file of each kind (a WAL
//! segment, a part's data block, a part's footer, an index segment,
//! tombstones, a histogram file). `cairn check --storage.path` names
//! exactly that file (exit 1); the restart succeeds, names the damage (log,
//! `/metrics`, the file under `quarantine/`) and serves the rest of the data
//! exactly; a damaged block of a part loses only that block, and answers
//! that miss it say so. Also a byte flipped in a part while cairn runs.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use cairn_model::{Histogram, HistogramSample, Labels, Sample};
use cairn_protocols::SeriesSamples;

const HOUR: i64 = 3_600_000;

/// What was written: series → (floats, histograms), as export returns it.
type Model = BTreeMap<BTreeMap<String, String>, (Vec<Sample>, Vec<(i64, Histogram)>)>;

struct Fixture {
    dir: tempfile::TempDir,
    /// The start of the samples of the earlier day ("a") and the later ("b").
    t_a: i64,
    t_b: i64,
    /// Everything visible after the writes and deletes.
    model: Model,
    /// The series deleted first, whose tombstone is the file's first record.
    first_deleted: (BTreeMap<String, String>, Vec<Sample>),
}

fn floats(day: &str, i: usize, t0: i64) -> SeriesSamples {
    let samples = (0..20)
        .map(|k| Sample::new(t0 + k * 15_000, (i * 1000) as f64 + k as f64 * 0.25))
        .collect();
    SeriesSamples::new(
        Labels::from_pairs([("__name__", "m"), ("day", day), ("i", &i.to_string())]),
        samples,
    )
}

fn histogram(k: usize) -> Histogram {
    Histogram {
        schema: 1,
        count: 4.0 + k as f64,
        sum: 1.5 * k as f64,
        zero_threshold: 0.001,
        zero_count: 1.0,
        positive: vec![(0, 1.0), (1, 2.0 + k as f64)],
        ..Histogram::default()
    }
}

fn add(model: &mut Model, s: &SeriesSamples) {
    let labels: BTreeMap<String, String> = s
        .labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect();
    let hs = s.histograms.iter().map(|h| (h.t, (*h.h).clone())).collect();
    model.insert(labels, (s.samples.clone(), hs));
}

fn hour_of(t: i64) -> i64 {
    t - t.rem_euclid(HOUR)
}

/// Writes two days of floats and a day of histograms, deletes two series
/// (two tombstones), and stops cairn cleanly (everything in parts).
fn populate() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let t_b = hour_of(now_ms() - 2 * HOUR);
    let t_a = t_b - 24 * HOUR;
    let mut written: Vec<SeriesSamples> = (0..4)
        .flat_map(|i| [floats("a", i, t_a), floats("b", i, t_b)])
        .collect();
    let hs = (0..10)
        .map(|k| HistogramSample::new(t_b + k as i64 * 15_000, histogram(k)))
        .collect();
    written.push(SeriesSamples::with_histograms(
        Labels::from_pairs([("__name__", "h"), ("day", "b")]),
        Vec::new(),
        hs,
    ));
    let mut model = Model::new();
    for s in &written {
        add(&mut model, s);
    }
    let mut srv = Server::new(dir.path(), &[]);
    srv.restart();
    let c = srv.client();
    c.write(&written);
    let mut first_deleted = None;
    for i in ["3", "2"] {
        let r = c.post_form(
            "/api/v1/admin/tsdb/delete_series",
            &[("match[]", &format!(r#"m{{day="b",i="{i}"}}"#))],
        );
        assert_eq!(r.status, 204, "{}", r.body);
        let key = lmap(&[("__name__", "m"), ("day", "b"), ("i", i)]);
        let (samples, _) = model.remove(&key).unwrap();
        first_deleted.get_or_insert((key, samples));
    }
    assert!(srv.terminate(Duration::from_secs(60)).success());
    Fixture {
        dir,
        t_a,
        t_b,
        model,
        first_deleted: first_deleted.unwrap(),
    }
}

impl Fixture {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn day_dir(&self, t: i64) -> PathBuf {
        self.root().join("partitions").join(cairn_tsdb::Day::of(t).to_string())
    }

    /// The model without the series of `day`.
    fn without_day(&self, day: &str) -> Model {
        let mut m = self.model.clone();
        m.retain(|l, _| l.get("day").map(String::as_str) != Some(day));
        m
    }

    fn without(&self, name: &str) -> Model {
        let mut m = self.model.clone();
        m.retain(|l, _| l["__name__"] != name);
        m
    }
}

fn file_in(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
        .collect();
    assert_eq!(found.len(), 1, "one {prefix}*{suffix} in {}: {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

/// Flips a byte in place (the same inode, as a running cairn has it open).
fn flip(path: &Path, at: u64) {
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x5a], at).unwrap();
    f.sync_all().unwrap();
}

/// Runs `cairn check --storage.path`: its exit code and stdout.
fn check(root: &Path) -> (i32, String) {
    check_with(root, &[])
}

fn check_with(root: &Path, extra: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["check", "--storage.path"])
        .arg(root)
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status.code().unwrap(), stdout)
}

/// `cairn check` names `path` and nothing else, and exits 1.
fn assert_check_names(root: &Path, path: &Path) {
    let (code, out) = check(root);
    assert_eq!(code, 1, "{out}");
    let damaged: Vec<&str> = out.lines().filter(|l| l.starts_with("DAMAGED ")).collect();
    assert_eq!(damaged.len(), 1, "{out}");
    assert!(
        damaged[0].starts_with(&format!("DAMAGED {} (", path.display())),
        "{out}"
    );
    assert!(out.contains("1 damaged"), "{out}");
}

fn quarantined_count(c: &Client, kind: &str) -> f64 {
    let body = c.get("/metrics").body;
    let line = format!("cairn_storage_quarantined_files_total{{kind=\"{kind}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&line)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line} in /metrics"))
}

/// The damage is named: counted on /metrics, logged with its path, and the
/// file is under `quarantine/` with its reason.
fn assert_quarantined(srv: &Server, root: &Path, path: &Path, kind: &str) {
    assert_eq!(quarantined_count(&srv.client(), kind), 1.0);
    let log = srv.log();
    let logged = log
        .lines()
        .any(|l| l.contains("ERROR") && l.contains("quarantine") && l.contains(&path.display().to_string()));
    assert!(logged, "no error naming {} in the log:\n{log}", path.display());
    let moved = root.join("quarantine").join(path.strip_prefix(root).unwrap());
    assert!(moved.is_file(), "{} quarantined", moved.display());
    let mut note = moved.into_os_string();
    note.push(".reason");
    assert!(Path::new(&note).is_file());
}

/// Everything cairn serves, as the model holds it.
fn served(c: &Client, fx: &Fixture) -> Model {
    served_of(c, fx, &[r#"{__name__=~".+"}"#])
}

/// What cairn serves of the series `selectors` select.
fn served_of(c: &Client, fx: &Fixture, selectors: &[&str]) -> Model {
    let range = Some((fx.t_a - HOUR, fx.t_b + 2 * HOUR));
    c.export(selectors, range).into_iter().fold(Model::new(), |mut m, e| {
        let entry = m.entry(e.labels).or_default();
        entry.0.extend(e.samples);
        entry.1.extend(e.histograms);
        m
    })
}

fn restart(fx: &Fixture) -> Server {
    let mut srv = Server::new(fx.root(), &[]);
    srv.restart();
    srv
}

#[test]
fn a_clean_directory_checks_clean() {
    let fx = populate();
    let (code, out) = check(fx.root());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0 damaged"), "{out}");
    assert_eq!(served(&restart(&fx).client(), &fx), fx.model);
    let (code, _) = check(Path::new("/nonexistent/cairn-data"));
    assert_eq!(code, 2);
}

#[test]
fn a_damaged_part_footer_is_quarantined_at_startup() {
    let fx = populate();
    let part = file_in(&fx.day_dir(fx.t_a), "part-", ".cpart");
    let len = std::fs::metadata(&part).unwrap().len();
    flip(&part, len - 20);
    assert_check_names(fx.root(), &part);
    let srv = restart(&fx);
    assert_quarantined(&srv, fx.root(), &part, "part");
    assert_eq!(served(&srv.client(), &fx), fx.without_day("a"));
    drop(srv);
    let (code, out) = check(fx.root());
    assert_eq!(code, 0, "the rest checks clean: {out}");
}

/// Flips the last byte of the middle block of `part` (a value: no other
/// block shares it) and returns the block's series id and time range.
fn damage_a_block(part: &Path) -> cairn_tsdb::BlockRef {
    let blocks: Vec<_> = cairn_tsdb::Part::open(part).unwrap().blocks().collect();
    let b = blocks[blocks.len() / 2];
    flip(part, b.end() - 1);
    b
}

/// After a block of day "a" was damaged: a query over the day answers 200
/// with every series but the block's, and a warning naming that series and
/// `why` (the part, or its repair); export (which has no warnings) serves
/// everything else exactly; nothing is quarantined. Returns the lost series' `i`.
fn assert_block_lost(srv: &Server, fx: &Fixture, why: &str) -> String {
    let c = srv.client();
    let r = c.get_query(
        "/api/v1/query",
        &[
            ("query", r#"count_over_time(m{day="a"}[1h])"#),
            ("time", &ms_to_param(fx.t_a + HOUR)),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let body = r.json();
    let answered: Vec<String> = body["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metric"]["i"].as_str().unwrap().to_string())
        .collect();
    let day_a: Vec<String> = fx
        .model
        .keys()
        .filter(|l| l["day"] == "a")
        .map(|l| l["i"].clone())
        .collect();
    let lost: Vec<&String> = day_a.iter().filter(|i| !answered.contains(i)).collect();
    assert_eq!((answered.len(), lost.len()), (day_a.len() - 1, 1), "{}", r.body);
    let warnings = body["warnings"].as_array().cloned().unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{}", r.body);
    let warning = warnings[0].as_str().unwrap();
    assert!(warning.contains(&format!("i=\"{}\"", lost[0])), "{warning}");
    assert!(warning.contains(why), "{warning}");
    let mut expected = fx.model.clone();
    expected.retain(|l, _| !(l["day"] == "a" && &l["i"] == lost[0]));
    let rest = [r#"{day="b"}"#.to_string(), format!(r#"{{day="a",i!="{}"}}"#, lost[0])];
    assert_eq!(served_of(&c, fx, &[&rest[0], &rest[1]]), expected);
    assert_eq!(quarantined_count(&c, "part"), 0.0);
    lost[0].clone()
}

#[test]
fn a_damaged_part_block_loses_that_block_only_and_answers_say_so() {
    let fx = populate();
    let part = file_in(&fx.day_dir(fx.t_a), "part-", ".cpart");
    damage_a_block(&part);
    assert_check_names(fx.root(), &part);
    let mut srv = restart(&fx);
    let name = part.display().to_string();
    let lost = assert_block_lost(&srv, &fx, &name);
    // Still so for later reads.
    assert_eq!(assert_block_lost(&srv, &fx, &name), lost);
    assert!(part.is_file());
    // Repaired offline: the part rewritten without the block, the loss
    // recorded; the directory checks clean and answers still say so.
    assert!(srv.terminate(Duration::from_secs(60)).success());
    let (code, out) = check_with(fx.root(), &["--repair"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("REPAIRED: 1 damaged block(s) dropped"), "{out}");
    assert!(out.trim_end().ends_with("0 damaged"), "{out}");
    let srv = restart(&fx);
    assert_eq!(assert_block_lost(&srv, &fx, "repair"), lost);
}

#[test]
fn a_damaged_part_is_put_back_from_a_backup_with_nothing_lost() {
    let fx = populate();
    let backups = tempfile::tempdir().unwrap();
    let backed_up = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["backup", "--storage.path"])
        .arg(fx.root())
        .arg("--to")
        .arg(backups.path())
        .output()
        .unwrap();
    assert!(backed_up.status.success(), "{backed_up:?}");
    let part = file_in(&fx.day_dir(fx.t_a), "part-", ".cpart");
    damage_a_block(&part);
    let from = backups.path().to_str().unwrap();
    // Checking alone changes nothing.
    assert_eq!(
        check_with(fx.root(), &["--from-backup", from]).0,
        2,
        "--from-backup goes with --repair"
    );
    assert_check_names(fx.root(), &part);
    let (code, out) = check_with(fx.root(), &["--repair", "--from-backup", from]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("RESTORED {} from backup ", part.display())),
        "{out}"
    );
    assert!(!out.contains("REPAIRED"), "nothing left to drop: {out}");
    let srv = restart(&fx);
    let c = srv.client();
    assert_eq!(served(&c, &fx), fx.model, "nothing is lost");
    let r = c.get_query(
        "/api/v1/query",
        &[
            ("query", r#"count_over_time(m{day="a"}[1h])"#),
            ("time", &ms_to_param(fx.t_a + HOUR)),
        ],
    );
    assert!(r.json()["warnings"].is_null(), "{}", r.body);
}

#[test]
fn a_part_damaged_while_cairn_runs_loses_that_block_only() {
    let fx = populate();
    let srv = restart(&fx);
    let part = file_in(&fx.day_dir(fx.t_a), "part-", ".cpart");
    damage_a_block(&part);
    assert_block_lost(&srv, &fx, &part.display().to_string());
    assert!(srv.is_running());
}

#[test]
fn a_damaged_index_segment_loses_only_its_series() {
    let fx = populate();
    let segment = file_in(&fx.day_dir(fx.t_a), "index-", ".cidx");
    flip(&segment, 20);
    assert_check_names(fx.root(), &segment);
    let srv = restart(&fx);
    assert_quarantined(&srv, fx.root(), &segment, "index");
    assert_eq!(served(&srv.client(), &fx), fx.without_day("a"));
}

#[test]
fn a_damaged_tombstone_undoes_only_its_deletion() {
    let fx = populate();
    let log = fx.day_dir(fx.t_b).join("tombstones.log");
    // Inside the first of the two records.
    flip(&log, 10);
    assert_check_names(fx.root(), &log);
    let srv = restart(&fx);
    assert_quarantined(&srv, fx.root(), &log, "tombstones");
    // The damaged copy is quarantined; the records that check are kept.
    assert!(log.is_file());
    let mut expected = fx.model.clone();
    let (labels, samples) = fx.first_deleted.clone();
    expected.insert(labels, (samples, Vec::new()));
    assert_eq!(served(&srv.client(), &fx), expected);
}

#[test]
fn a_damaged_histogram_file_loses_only_its_histograms() {
    let fx = populate();
    let file = file_in(&fx.day_dir(fx.t_b), "hist-", ".chist");
    flip(&file, 10);
    assert_check_names(fx.root(), &file);
    let srv = restart(&fx);
    assert_quarantined(&srv, fx.root(), &file, "histograms");
    assert_eq!(served(&srv.client(), &fx), fx.without("h"));
}

/// Splits the WAL segment holding two records into two segments of one
/// record each (the format is `len: u32 LE | crc32c: u32 LE | payload`,
/// docs/format/wal.md), as a rotation between the two commits would have.
fn split_wal(wal: &Path) -> (PathBuf, PathBuf) {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(wal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| std::fs::metadata(p).unwrap().len() > 0)
        .collect();
    segments.sort();
    assert_eq!(segments.len(), 1, "{segments:?}");
    let bytes = std::fs::read(&segments[0]).unwrap();
    let first_len = 8 + u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert!(first_len < bytes.len());
    let seq: u64 = segments[0].file_stem().unwrap().to_str().unwrap().parse().unwrap();
    let next = wal.join(format!("{:020}.wal", seq + 1));
    // The empty segment a restart would have opened next is not there yet.
    assert!(!next.exists() || std::fs::metadata(&next).unwrap().len() == 0);
    std::fs::write(&segments[0], &bytes[..first_len]).unwrap();
    std::fs::write(&next, &bytes[first_len..]).unwrap();
    (segments[0].clone(), next)
}

#[test]
fn a_damaged_wal_segment_before_the_last_is_quarantined_and_the_rest_replayed() {
    let mut fx = populate();
    let mut srv = restart(&fx);
    let lost = series(
        &[("__name__", "w"), ("n", "lost")],
        &[(fx.t_b, 1.0), (fx.t_b + 1000, 2.0)],
    );
    let kept = series(&[("__name__", "w"), ("n", "kept")], &[(fx.t_b, 3.0)]);
    srv.client().write(std::slice::from_ref(&lost));
    srv.client().write(std::slice::from_ref(&kept));
    add(&mut fx.model, &kept);
    // A crash: both commits are only in the WAL.
    srv.kill9();
    let (first, _) = split_wal(&fx.root().join("wal"));
    flip(&first, 12);
    assert_check_names(fx.root(), &first);
    srv.restart();
    assert_quarantined(&srv, fx.root(), &first, "wal");
    assert_eq!(served(&srv.client(), &fx), fx.model);
}
