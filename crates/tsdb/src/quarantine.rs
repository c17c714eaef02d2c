//! Files found damaged are moved aside, not fatal: a file whose checksums
//! fail is renamed to `<data dir>/quarantine/<its path under the data dir>`
//! with a `.reason` file beside it (when, which check failed, where), logged
//! at error level and counted; the engine goes on with the other files.
//! Nothing is ever taken back from there by the engine: the operator looks.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use cairn_storage::StorageError;

pub const DIR: &str = "quarantine";

/// The kinds of files the engine keeps, as the metric's `kind` label names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    Part,
    Index,
    Tombstones,
    Histograms,
    Wal,
}

impl FileKind {
    pub const ALL: [FileKind; 5] = [Self::Part, Self::Index, Self::Tombstones, Self::Histograms, Self::Wal];

    pub fn name(self) -> &'static str {
        match self {
            Self::Part => "part",
            Self::Index => "index",
            Self::Tombstones => "tombstones",
            Self::Histograms => "histograms",
            Self::Wal => "wal",
        }
    }
}

/// One engine's quarantine: where damaged files go, and how many went.
pub struct Quarantine {
    root: PathBuf,
    counts: [AtomicU64; 5],
}

impl Quarantine {
    /// The quarantine of the data directory `root` (an engine's: a tenant's
    /// engine has its own under `tenants/<id>/`).
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            counts: Default::default(),
        }
    }

    /// Files of each kind quarantined since the engine opened.
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        FileKind::ALL
            .iter()
            .map(|&k| (k.name(), self.counts[k as usize].load(Ordering::Relaxed)))
            .collect()
    }

    /// Moves the damaged file `path` into the quarantine (a rename: the data
    /// directory is one filesystem), with its reason beside it. Returns where
    /// it went.
    pub fn take(&self, path: &Path, kind: FileKind, reason: &str) -> Result<PathBuf, StorageError> {
        let to = self.place_for(path)?;
        fs::rename(path, &to).map_err(StorageError::io("move into quarantine", path))?;
        self.note(path, &to, kind, reason, "moved")?;
        Ok(to)
    }

    /// Copies the damaged file `path` into the quarantine and leaves it in
    /// place, for a file the engine repairs rather than drops (the checked
    /// part of tombstones, a WAL segment's records before its damage).
    pub fn copy(&self, path: &Path, kind: FileKind, reason: &str) -> Result<PathBuf, StorageError> {
        let to = self.place_for(path)?;
        fs::copy(path, &to).map_err(StorageError::io("copy into quarantine", path))?;
        self.note(path, &to, kind, reason, "copied")?;
        Ok(to)
    }

    /// Counts and logs a damaged file that cannot be moved (an object in the
    /// bucket): it is left where it is and no longer read.
    pub fn skip(&self, name: &Path, kind: FileKind, reason: &str) {
        self.counts[kind as usize].fetch_add(1, Ordering::Relaxed);
        tracing::error!(path = %name.display(), kind = kind.name(), reason, "damaged file left out");
    }

    /// A free place under the quarantine for `path`: its path under the data
    /// directory, suffixed `.1`, `.2`, ... when an earlier copy is there.
    fn place_for(&self, path: &Path) -> Result<PathBuf, StorageError> {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let relative: PathBuf = relative
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        let base = self.root.join(DIR).join(relative);
        let parent = base.parent().unwrap_or(&self.root).to_path_buf();
        fs::create_dir_all(&parent).map_err(StorageError::io("create", &parent))?;
        let mut to = base.clone();
        let mut n = 0;
        while to.exists() {
            n += 1;
            let mut name = base.as_os_str().to_owned();
            name.push(format!(".{n}"));
            to = PathBuf::from(name);
        }
        Ok(to)
    }

    fn note(&self, from: &Path, to: &Path, kind: FileKind, reason: &str, how: &str) -> Result<(), StorageError> {
        let mut note_path = to.as_os_str().to_owned();
        note_path.push(".reason");
        let note_path = PathBuf::from(note_path);
        let text = format!(
            "time: {}\nfile: {}\nkind: {}\nreason: {reason}\n",
            utc_now(),
            from.display(),
            kind.name()
        );
        let written =
            fs::File::create(&note_path).and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()));
        written.map_err(StorageError::io("write", &note_path))?;
        if let Some(parent) = to.parent() {
            crate::wal::sync_dir(parent)?;
        }
        if let Some(parent) = from.parent() {
            crate::wal::sync_dir(parent)?;
        }
        self.counts[kind as usize].fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            path = %from.display(),
            quarantined = %to.display(),
            kind = kind.name(),
            reason,
            "damaged file {how} into quarantine"
        );
        Ok(())
    }
}

/// Now as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (proleptic Gregorian calendar),
    // counted in 400-year eras that begin on March 1st.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_file_keeps_its_path_under_the_quarantine_with_its_reason() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("partitions/2026-11-22");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("index-1.cidx");
        fs::write(&file, b"x").unwrap();
        let q = Quarantine::new(root.path());
        let to = q.take(&file, FileKind::Index, "checksum mismatch at offset 3").unwrap();
        assert_eq!(to, root.path().join("quarantine/partitions/2026-11-22/index-1.cidx"));
        assert!(!file.exists());
        assert_eq!(fs::read(&to).unwrap(), b"x");
        let note =
            fs::read_to_string(root.path().join("quarantine/partitions/2026-11-22/index-1.cidx.reason")).unwrap();
        assert!(note.contains("reason: checksum mismatch at offset 3"), "{note}");
        assert!(note.contains("kind: index"), "{note}");
        // The same name again does not overwrite the first.
        fs::write(&file, b"y").unwrap();
        let again = q.copy(&file, FileKind::Index, "again").unwrap();
        assert_eq!(
            again,
            root.path().join("quarantine/partitions/2026-11-22/index-1.cidx.1")
        );
        assert!(file.exists());
        assert_eq!(q.counts()[1], ("index", 2));
    }

    #[test]
    fn utc_dates_are_civil() {
        let now = utc_now();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.starts_with("20"), "{now}");
    }
}
