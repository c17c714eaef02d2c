//! A backup's list of files, and where their contents are kept.

use cairn_bucket::Bucket;
use cairn_storage::StorageError;
use serde::{Deserialize, Serialize};

pub const BACKUPS_DIR: &str = "backups";
pub const MANIFEST_FILE: &str = "manifest.json";
const DATA_DIR: &str = "data";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the data directory, `/`-separated.
    pub path: String,
    pub size: u64,
    pub crc32c: u32,
}

impl FileEntry {
    /// The key of this file's contents: a file whose contents change in
    /// place (tombstones) gets a new key each time they do.
    pub fn data_key(&self) -> String {
        format!("{DATA_DIR}/{}@{:08x}-{}", self.path, self.crc32c, self.size)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    /// When the backup was taken, ms since the epoch.
    pub time_ms: i64,
    pub files: Vec<FileEntry>,
}

impl Manifest {
    pub fn key(name: &str) -> String {
        format!("{BACKUPS_DIR}/{name}/{MANIFEST_FILE}")
    }

    pub fn load(dest: &Bucket, name: &str) -> Result<Self, StorageError> {
        let key = Self::key(name);
        let bytes = dest.get(&key)?;
        serde_json::from_slice(&bytes).map_err(|e| StorageError::Corrupt {
            path: dest.url_of(&key),
            reason: e.to_string(),
        })
    }

    pub fn store(&self, dest: &Bucket) -> Result<(), StorageError> {
        let bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| StorageError::InvalidArgument(format!("encode manifest: {e}")))?;
        dest.put(&Self::key(&self.name), bytes)
    }
}
