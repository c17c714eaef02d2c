//! Offline verification of a data directory (`cairn check --storage.path`):
//! every file of every kind read whole and checked, nothing written, the
//! directory's lock not taken (it may be in use, or a copy).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use cairn_storage::StorageError;

use crate::part::Part;
use crate::{histograms, index, losses, tombstones, wal};

/// A file found damaged: where, of what kind, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub path: PathBuf,
    pub kind: &'static str,
    pub reason: String,
}

/// What a check found: the files checked of each kind and the damaged ones.
#[derive(Debug, Default)]
pub struct Report {
    pub checked: BTreeMap<&'static str, u64>,
    pub damaged: Vec<Damage>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.damaged.is_empty()
    }

    /// One line: files checked per kind and how many were damaged.
    pub fn summary(&self) -> String {
        let kinds: Vec<String> = KINDS
            .iter()
            .map(|k| format!("{} {k}", self.checked.get(k).copied().unwrap_or(0)))
            .collect();
        format!(
            "checked {} files ({}): {} damaged",
            self.checked.values().sum::<u64>(),
            kinds.join(", "),
            self.damaged.len()
        )
    }

    fn file(&mut self, path: &Path, kind: &'static str, checked: Result<(), String>) {
        *self.checked.entry(kind).or_default() += 1;
        if let Err(reason) = checked {
            self.damaged.push(Damage {
                path: path.to_path_buf(),
                kind,
                reason,
            });
        }
    }
}

const KINDS: [&str; 7] = ["part", "index", "tombstones", "losses", "histograms", "wal", "cache"];

/// Checks every file of the data directory `root` and of its tenants'
/// (`tenants/<id>/`). Errors only when a directory cannot be listed;
/// a file that cannot be read is reported damaged.
pub fn check_dir(root: &Path) -> Result<Report, StorageError> {
    let mut report = Report::default();
    check_engine_dir(root, &mut report)?;
    let tenants = root.join("tenants");
    for dir in subdirs(&tenants)? {
        check_engine_dir(&dir, &mut report)?;
    }
    Ok(report)
}

/// One engine's directory: its WAL, partitions and bucket cache.
fn check_engine_dir(root: &Path, report: &mut Report) -> Result<(), StorageError> {
    let wal_dir = root.join("wal");
    if wal_dir.is_dir() {
        let segments = wal::list_segments(&wal_dir)?;
        for (i, seq) in segments.iter().enumerate() {
            let path = wal_dir.join(format!("{seq:020}.wal"));
            let mut scratch = Vec::new();
            let checked = wal::check_segment(&path, i + 1 == segments.len(), |payload| {
                wal::record::decode_batch(payload, &mut scratch)
                    .map(|_| ())
                    .map_err(|e| format!("undecodable record: {e}"))
            });
            report.file(&path, "wal", checked.map(|_| ()));
        }
    }
    for day in subdirs(&root.join("partitions"))? {
        let mut files = list_files(&day)?;
        files.sort();
        for path in files {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with("part-") && name.ends_with(".cpart") {
                report.file(&path, "part", check_part(&path));
            } else if index::segment_seq(&name).is_some() {
                report.file(&path, "index", read(&path).and_then(|b| check_index_segment(&b)));
            } else if name == tombstones::FILE {
                let checked = read(&path).and_then(|b| tombstones::decode(&b).map(|_| ()));
                report.file(&path, "tombstones", checked);
            } else if name == tombstones::APPLIED_FILE {
                let checked = tombstones::load_applied(&day).map(|_| ()).map_err(|e| reason_of(&e));
                report.file(&path, "tombstones", checked);
            } else if name == losses::FILE {
                let checked = read(&path).and_then(|b| losses::decode(&b).map(|_| ()));
                report.file(&path, "losses", checked);
            } else if histograms::file_seq(&name).is_some() {
                let checked = histograms::check_file(&path).map(|_| ());
                report.file(&path, "histograms", checked);
            }
        }
    }
    let cache = root.join("cache");
    if cache.is_dir() {
        for path in list_files(&cache)? {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if cairn_bucket::is_chunk_name(&name) {
                let checked = read(&path).and_then(|b| {
                    cairn_bucket::intact_chunk(b)
                        .map(|_| ())
                        .ok_or_else(|| "cache chunk checksum mismatch (harmless: read again from the bucket)".into())
                });
                report.file(&path, "cache", checked);
            }
        }
    }
    Ok(())
}

/// A part's footer and index, then every block, read and decoded.
fn check_part(path: &Path) -> Result<(), String> {
    let part = Part::open(path).map_err(|e| reason_of(&e))?;
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    for block in part.blocks() {
        ts.clear();
        vs.clear();
        part.read_block(&block, &mut ts, &mut vs).map_err(|e| reason_of(&e))?;
    }
    Ok(())
}

/// An index segment's checksum and every entry's labels.
fn check_index_segment(bytes: &[u8]) -> Result<(), String> {
    let entries = index::decode_segment(bytes).map_err(String::from)?;
    match entries.checked().into_iter().position(|e| e.is_err()) {
        Some(i) => Err(format!("entry {i} has undecodable labels")),
        None => Ok(()),
    }
}

/// What is wrong, without the path the report prints anyway.
fn reason_of(e: &StorageError) -> String {
    match e {
        StorageError::Corrupt { reason, .. } => reason.clone(),
        StorageError::Io { action, source, .. } => format!("cannot {action}: {source}"),
        other => other.to_string(),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    fs::read(path).map_err(|e| format!("cannot read: {e}"))
}

/// The subdirectories of `dir` (none if it does not exist), sorted.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, StorageError> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    for entry in fs::read_dir(dir).map_err(StorageError::io("list", dir))? {
        let path = entry.map_err(StorageError::io("list", dir))?.path();
        if path.is_dir() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn list_files(dir: &Path) -> Result<Vec<PathBuf>, StorageError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(StorageError::io("list", dir))? {
        let path = entry.map_err(StorageError::io("list", dir))?.path();
        if path.is_file() {
            out.push(path);
        }
    }
    Ok(out)
}

/// Whether the part file `candidate` is an intact copy of the damaged part
/// `damaged`: every block of it checks and decodes, and it has the same
/// blocks (series, range, place, length, checksum) as `damaged`, or, when
/// the damage is to `damaged`'s footer or index, the same name (parts are
/// named by the writes they hold; the caller also compares sizes).
pub fn is_intact_copy(candidate: &Path, damaged: &Path) -> bool {
    let Ok(copy) = crate::Part::open(candidate) else {
        return false;
    };
    let same_blocks = match crate::Part::open(damaged) {
        Ok(original) => copy.blocks().eq(original.blocks()),
        Err(_) => true,
    };
    same_blocks && copy.find_damaged_blocks().is_ok() && !copy.is_damaged()
}
