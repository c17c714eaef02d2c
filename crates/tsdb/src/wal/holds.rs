//! Holds on WAL segments. A reader that follows the WAL (a remote-write
//! queue) holds the oldest segment it still needs; a flush that would delete
//! a held segment moves it to `retired/` instead, which replay never reads
//! (its samples are in parts already), and it is deleted once every hold has
//! passed it. Holds are files, so they hold across a restart from the
//! moment the WAL opens, before replay flushes anything. The retired
//! segments are bounded in bytes: past the bound the oldest go, and a
//! reader finds the gap and reports what it lost.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use cairn_storage::StorageError;

use super::list_segments;

pub(super) const RETIRED_DIR: &str = "retired";
const HOLDS_DIR: &str = "holds";

pub(super) struct Holds {
    holds_dir: PathBuf,
    retired_dir: PathBuf,
    /// Each hold's name and the oldest segment it needs.
    by_name: BTreeMap<String, u64>,
    pub(super) max_retired_bytes: u64,
}

impl Holds {
    /// Reads the holds of `wal_dir`; an unreadable hold file is logged and
    /// dropped (its reader then finds a gap, which it reports).
    pub(super) fn open(wal_dir: &Path, max_retired_bytes: u64) -> Result<Self, StorageError> {
        let holds_dir = wal_dir.join(HOLDS_DIR);
        let retired_dir = wal_dir.join(RETIRED_DIR);
        let mut by_name = BTreeMap::new();
        if holds_dir.is_dir() {
            for entry in fs::read_dir(&holds_dir).map_err(StorageError::io("list", &holds_dir))? {
                let path = entry.map_err(StorageError::io("list", &holds_dir))?.path();
                if path.extension().is_some_and(|e| e == "tmp") {
                    let _ = fs::remove_file(&path);
                    continue;
                }
                let parsed = path.file_name().and_then(|n| decode_name(&n.to_string_lossy())).zip(
                    fs::read_to_string(&path)
                        .ok()
                        .and_then(|s| s.trim().parse::<u64>().ok()),
                );
                match parsed {
                    Some((name, segment)) => {
                        by_name.insert(name, segment);
                    }
                    None => {
                        tracing::error!(path = %path.display(), "unreadable WAL hold dropped");
                        let _ = fs::remove_file(&path);
                    }
                }
            }
        }
        Ok(Self {
            holds_dir,
            retired_dir,
            by_name,
            max_retired_bytes,
        })
    }

    /// The oldest segment any hold needs (`u64::MAX` without holds).
    pub(super) fn oldest(&self) -> u64 {
        self.by_name.values().copied().min().unwrap_or(u64::MAX)
    }

    pub(super) fn get(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    pub(super) fn retired_dir(&self) -> &Path {
        &self.retired_dir
    }

    /// Sets `name`'s hold to `segment` (written to disk when it changes)
    /// and deletes the retired segments no hold needs any more.
    pub(super) fn set(&mut self, name: &str, segment: u64) -> Result<(), StorageError> {
        if self.by_name.get(name) != Some(&segment) {
            fs::create_dir_all(&self.holds_dir).map_err(StorageError::io("create", &self.holds_dir))?;
            let path = self.holds_dir.join(encode_name(name));
            crate::index::write_atomically(&path, format!("{segment}\n").as_bytes())?;
            self.by_name.insert(name.to_string(), segment);
        }
        self.delete_passed()
    }

    /// Drops every hold not named in `keep`.
    pub(super) fn retain(&mut self, keep: &[String]) -> Result<(), StorageError> {
        let gone: Vec<String> = self.by_name.keys().filter(|n| !keep.contains(n)).cloned().collect();
        for name in gone {
            let path = self.holds_dir.join(encode_name(&name));
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StorageError::io("remove", &path)(e)),
            }
            self.by_name.remove(&name);
        }
        self.delete_passed()
    }

    /// Moves segment `seq` of `wal_dir` to the retired directory.
    pub(super) fn retire(&self, wal_dir: &Path, seq: u64) -> Result<(), StorageError> {
        fs::create_dir_all(&self.retired_dir).map_err(StorageError::io("create", &self.retired_dir))?;
        let from = super::segment_path(wal_dir, seq);
        let to = super::segment_path(&self.retired_dir, seq);
        fs::rename(&from, &to).map_err(StorageError::io("retire", &from))
    }

    /// Deletes retired segments below every hold, then the oldest while the
    /// rest exceed the bound.
    pub(super) fn delete_passed(&self) -> Result<(), StorageError> {
        if !self.retired_dir.is_dir() {
            return Ok(());
        }
        let oldest = self.oldest();
        let mut kept = Vec::new();
        for seq in list_segments(&self.retired_dir)? {
            let path = super::segment_path(&self.retired_dir, seq);
            if seq < oldest {
                remove(&path)?;
            } else {
                kept.push((path.clone(), fs::metadata(&path).map_or(0, |m| m.len())));
            }
        }
        let mut total: u64 = kept.iter().map(|(_, len)| len).sum();
        for (path, len) in kept {
            if total <= self.max_retired_bytes {
                break;
            }
            tracing::error!(
                path = %path.display(),
                max_bytes = self.max_retired_bytes,
                "WAL segments held for remote write exceed their bound: the oldest is deleted, and the samples in it will not be forwarded"
            );
            remove(&path)?;
            total -= len;
        }
        Ok(())
    }

    /// Bytes of the retired segments.
    pub(super) fn retired_bytes(&self) -> u64 {
        fs::read_dir(&self.retired_dir)
            .map(|rd| rd.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum())
            .unwrap_or(0)
    }
}

fn remove(path: &Path) -> Result<(), StorageError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io("remove", path)(e)),
    }
}

/// A hold's file name: its name in hex, so any name is a valid file name.
fn encode_name(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_name(file: &str) -> Option<String> {
    if !file.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..file.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(file.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_names_round_trip_through_file_names() {
        for name in ["", "a", "remote/with spaces", "ünïcode"] {
            assert_eq!(decode_name(&encode_name(name)).as_deref(), Some(name));
        }
        assert_eq!(decode_name("zz"), None);
        assert_eq!(decode_name("abc"), None);
    }
}
