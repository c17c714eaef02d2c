//! Restoring a backup into a new data directory.

use std::fs;
use std::path::Path;

use cairn_bucket::Bucket;
use cairn_storage::StorageError;

use crate::manifest::{FileEntry, Manifest};

/// Writes backup `name` (the latest when `None`) into `target`, which must
/// be missing or empty. Each file is downloaded as `*.tmp` (streamed, never
/// held whole), checked against the manifest's size and checksum, synced
/// and renamed. Returns the backup's manifest.
pub fn restore(dest: &Bucket, name: Option<&str>, target: &Path) -> Result<Manifest, StorageError> {
    if fs::read_dir(target).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(StorageError::InvalidArgument(format!(
            "restore target {} is not empty",
            target.display()
        )));
    }
    let name = match name {
        Some(name) => name.to_string(),
        None => crate::list(dest)?
            .pop()
            .ok_or_else(|| StorageError::InvalidArgument("no complete backup at the destination".into()))?,
    };
    let manifest = Manifest::load(dest, &name)?;
    for file in &manifest.files {
        if file.path.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
            return Err(StorageError::Corrupt {
                path: dest.url_of(&Manifest::key(&name)),
                reason: format!("bad path {:?}", file.path),
            });
        }
        let path = target.join(&file.path);
        let dir = path.parent().unwrap_or(target);
        fs::create_dir_all(dir).map_err(StorageError::io("create", dir))?;
        let tmp = path.with_extension("tmp");
        download_checked(dest, file, &tmp)?;
        fs::rename(&tmp, &path).map_err(StorageError::io("rename", &tmp))?;
    }
    Ok(manifest)
}

/// Puts over `target` the copy of `path` (relative to the data directory)
/// that the newest backup at `dest` holding one of `size` bytes has, if
/// `accept` takes it (checked against the manifest first, then by `accept`
/// as `target` with `.tmp` added). Returns the backup it came from, if any.
pub fn restore_file(
    dest: &Bucket,
    path: &str,
    size: u64,
    target: &Path,
    accept: impl Fn(&Path) -> bool,
) -> Result<Option<String>, StorageError> {
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    for name in crate::list(dest)?.iter().rev() {
        // A backup that cannot give an intact copy leaves the older ones to try.
        let manifest = match Manifest::load(dest, name) {
            Ok(manifest) => manifest,
            Err(e) => {
                tracing::warn!(backup = %name, error = %e, "a backup's manifest is unreadable");
                continue;
            }
        };
        let Some(file) = manifest.files.iter().find(|f| f.path == path && f.size == size) else {
            continue;
        };
        if let Err(e) = download_checked(dest, file, &tmp) {
            tracing::warn!(backup = %name, error = %e, "a backup's copy is damaged or missing");
            continue;
        }
        if accept(&tmp) {
            fs::rename(&tmp, target).map_err(StorageError::io("rename", &tmp))?;
            return Ok(Some(name.clone()));
        }
        let _ = fs::remove_file(&tmp);
    }
    Ok(None)
}

/// Downloads `file`'s contents to `tmp` (streamed), checks its size and
/// checksum against the manifest (removing it when they differ) and syncs it.
fn download_checked(dest: &Bucket, file: &FileEntry, tmp: &Path) -> Result<(), StorageError> {
    let key = file.data_key();
    dest.download(&key, tmp)?;
    let (size, crc) = crate::size_and_crc32c(tmp)?;
    if size != file.size || crc != file.crc32c {
        let _ = fs::remove_file(tmp);
        return Err(StorageError::Corrupt {
            path: dest.url_of(&key),
            reason: format!(
                "{size} bytes with crc32c {crc:08x}, the manifest says {} bytes with {:08x}",
                file.size, file.crc32c
            ),
        });
    }
    fs::File::open(tmp)
        .and_then(|f| f.sync_all())
        .map_err(StorageError::io("sync", tmp))
}
