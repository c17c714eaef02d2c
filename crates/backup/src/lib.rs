//! Incremental backups of a Cairn data directory, or of a snapshot of one,
//! to a directory or an S3 bucket (through `cairn-bucket`'s client), and
//! restores from them.
//!
//! Destination layout: `data/<path>@<crc32c>-<size>` holds file contents,
//! shared by every backup that has the same file; `backups/<name>/manifest.json`
//! lists one backup's files and is written last, so a backup is complete iff
//! its manifest exists. A file an earlier manifest already records (same
//! path, size and checksum) is not copied again: parts, index segments and
//! histogram files never change once written, so most are shared.

pub mod cli;
mod manifest;
mod restore;
mod save;

pub use manifest::{FileEntry, Manifest};
pub use restore::{restore, restore_file};
pub use save::{BackupReport, backup};

use cairn_bucket::{Bucket, BucketConfig};
use cairn_storage::StorageError;

/// Where backups go: a directory path, `file:///dir` or `s3://bucket/prefix`.
/// `s3` carries endpoint, region and keys (the `--storage.object-store.*`
/// flags); its URL is replaced by `to`'s.
pub fn open_destination(to: &str, s3: &BucketConfig) -> Result<Bucket, StorageError> {
    let url = if to.starts_with("s3://") || to.starts_with("file://") {
        to.to_string()
    } else {
        let dir = std::path::absolute(to).map_err(StorageError::io("resolve", to))?;
        format!("file://{}", dir.display())
    };
    Bucket::open_uncached(&BucketConfig { url, ..s3.clone() })
}

/// The names of the complete backups at `dest`, oldest first.
pub fn list(dest: &Bucket) -> Result<Vec<String>, StorageError> {
    let mut names: Vec<String> = dest
        .list(manifest::BACKUPS_DIR)?
        .into_iter()
        .filter_map(|o| {
            o.key
                .strip_prefix(&format!("{}/", manifest::BACKUPS_DIR))?
                .strip_suffix(&format!("/{}", manifest::MANIFEST_FILE))
                .map(str::to_string)
        })
        .collect();
    names.sort();
    Ok(names)
}

/// The size and crc32c of the file at `path`, read in chunks: parts can be
/// larger than memory should hold.
fn size_and_crc32c(path: &std::path::Path) -> Result<(u64, u32), StorageError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(StorageError::io("open", path))?;
    let (mut size, mut crc) = (0u64, 0u32);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(StorageError::io("read", path))?;
        if n == 0 {
            return Ok((size, crc));
        }
        crc = crc32c::crc32c_append(crc, &buf[..n]);
        size += n as u64;
    }
}

#[cfg(test)]
mod tests;
