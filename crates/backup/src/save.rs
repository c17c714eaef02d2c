//! Taking a backup.

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use cairn_bucket::Bucket;
use cairn_storage::StorageError;

use crate::manifest::{FileEntry, Manifest};

/// What a backup wrote and what it found at the destination already.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackupReport {
    pub name: String,
    pub copied_files: u64,
    pub copied_bytes: u64,
    pub skipped_files: u64,
    pub skipped_bytes: u64,
}

/// Backs up the data directory (or snapshot) `source` to `dest` as backup
/// `name`. The directory must not change meanwhile: a snapshot, or a data
/// directory no process has open.
pub fn backup(source: &Path, dest: &Bucket, name: &str) -> Result<BackupReport, StorageError> {
    let mut files = Vec::new();
    collect(source, "", &mut files)?;
    let mut stored = HashSet::new();
    for earlier in crate::list(dest)? {
        stored.extend(Manifest::load(dest, &earlier)?.files.into_iter().map(|f| f.data_key()));
    }
    let mut report = BackupReport {
        name: name.to_string(),
        ..BackupReport::default()
    };
    let mut entries = Vec::with_capacity(files.len());
    for path in files {
        let full = source.join(&path);
        let (size, crc32c) = crate::size_and_crc32c(&full)?;
        let entry = FileEntry { path, size, crc32c };
        if stored.contains(&entry.data_key()) {
            report.skipped_files += 1;
            report.skipped_bytes += entry.size;
        } else {
            dest.put_file(&entry.data_key(), &full)?;
            report.copied_files += 1;
            report.copied_bytes += entry.size;
        }
        entries.push(entry);
    }
    let time_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    // Last: the backup exists once its manifest does.
    Manifest {
        name: name.to_string(),
        time_ms,
        files: entries,
    }
    .store(dest)?;
    Ok(report)
}

/// The files below `dir` a backup holds, relative and `/`-separated: not
/// the lock, snapshots, the bucket cache or files still being written.
fn collect(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), StorageError> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(StorageError::io("list", dir))?
        .collect::<Result<_, _>>()
        .map_err(StorageError::io("list", dir))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        let path = format!("{prefix}{name}");
        let kind = entry.file_type().map_err(StorageError::io("stat", entry.path()))?;
        if kind.is_dir() {
            if prefix.is_empty() && (name == "snapshots" || name == "cache") {
                continue;
            }
            collect(&entry.path(), &format!("{path}/"), out)?;
        } else if kind.is_file() && name != "LOCK" && !name.ends_with(".tmp") {
            out.push(path);
        }
    }
    Ok(())
}
