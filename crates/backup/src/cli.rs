//! `cairn backup` and `cairn restore`: the command lines over [`backup`],
//! [`list`] and [`restore`]. Exit codes: 0 done, 1 failed, 2 usage error.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use cairn_bucket::BucketConfig;
use clap::{Args, Parser};

use crate::{backup, list, open_destination, restore};

/// Backs up a data directory to a directory or an S3 bucket, incrementally:
/// only files no earlier backup there holds are copied.
#[derive(Parser, Debug)]
#[command(name = "cairn backup")]
struct BackupCli {
    /// The data directory (`--storage.path` of the server).
    #[arg(long = "storage.path", default_value = "cairn-data")]
    storage_path: PathBuf,
    /// Where backups go: a directory, file:///dir or s3://bucket/prefix.
    #[arg(long)]
    to: String,
    /// The running server's snapshot endpoint, e.g.
    /// http://localhost:9090/api/v1/admin/tsdb/snapshot (credentials as
    /// http://user:password@host:port/...): the backup is taken of a
    /// snapshot, removed afterwards. Without it the data directory must not
    /// be in use.
    #[arg(long = "snapshot-url")]
    snapshot_url: Option<String>,
    /// List the complete backups at --to instead of taking one.
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    s3: S3Flags,
}

/// Restores a backup into a new, empty data directory.
#[derive(Parser, Debug)]
#[command(name = "cairn restore")]
struct RestoreCli {
    /// Where the backups are: a directory, file:///dir or s3://bucket/prefix.
    #[arg(long)]
    from: String,
    /// Which backup (default: the latest).
    #[arg(long)]
    backup: Option<String>,
    /// The data directory to restore into; must not exist or be empty.
    #[arg(long = "storage.path")]
    storage_path: PathBuf,
    #[command(flatten)]
    s3: S3Flags,
}

/// The S3 settings, named as the server's flags; what is not given is taken
/// from the usual AWS_* environment variables.
#[derive(Args, Debug)]
struct S3Flags {
    #[arg(long = "storage.object-store.endpoint")]
    endpoint: Option<String>,
    #[arg(long = "storage.object-store.region")]
    region: Option<String>,
    #[arg(long = "storage.object-store.access-key-id")]
    access_key_id: Option<String>,
    #[arg(long = "storage.object-store.secret-access-key")]
    secret_access_key: Option<String>,
}

impl S3Flags {
    fn config(self) -> BucketConfig {
        BucketConfig {
            endpoint: self.endpoint,
            region: self.region,
            access_key_id: self.access_key_id,
            secret_access_key: self.secret_access_key,
            ..BucketConfig::new("")
        }
    }
}

/// Runs `cairn backup|restore ARGS` (`args` starts at the subcommand).
pub fn main(args: Vec<String>) -> i32 {
    let result = match args.first().map(String::as_str) {
        Some("backup") => BackupCli::try_parse_from(&args).map(run_backup),
        Some("restore") => RestoreCli::try_parse_from(&args).map(run_restore),
        _ => {
            eprintln!("usage: cairn backup --to DEST ... | cairn restore --from DEST --storage.path DIR");
            return 2;
        }
    };
    match result {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            1
        }
        Err(usage) => {
            let _ = usage.print();
            if usage.use_stderr() { 2 } else { 0 }
        }
    }
}

fn run_backup(cli: BackupCli) -> Result<(), String> {
    let dest = open_destination(&cli.to, &cli.s3.config()).map_err(|e| e.to_string())?;
    if cli.list {
        for name in list(&dest).map_err(|e| e.to_string())? {
            println!("{name}");
        }
        return Ok(());
    }
    let (source, name, snapshot) = match &cli.snapshot_url {
        Some(url) => {
            let name = take_snapshot(url)?;
            let dir = cli.storage_path.join("snapshots").join(&name);
            if !dir.is_dir() {
                return Err(format!(
                    "the server made snapshot {name}, but {} is not a directory: is --storage.path the server's?",
                    dir.display()
                ));
            }
            (dir.clone(), name, Some(dir))
        }
        None => (cli.storage_path.clone(), backup_name(SystemTime::now()), None),
    };
    // Held for the whole backup: no server may open the directory meanwhile.
    let _lock = match &snapshot {
        Some(_) => None,
        None => Some(lock_unused(&cli.storage_path)?),
    };
    let report = backup(&source, &dest, &name).map_err(|e| e.to_string());
    if let Some(dir) = snapshot
        && let Err(e) = std::fs::remove_dir_all(&dir)
    {
        eprintln!("warning: could not remove snapshot {}: {e}", dir.display());
    }
    let report = report?;
    println!(
        "backup {}: copied {} files ({} bytes), {} files ({} bytes) already there",
        report.name, report.copied_files, report.copied_bytes, report.skipped_files, report.skipped_bytes
    );
    Ok(())
}

fn run_restore(cli: RestoreCli) -> Result<(), String> {
    let dest = open_destination(&cli.from, &cli.s3.config()).map_err(|e| e.to_string())?;
    let manifest = restore(&dest, cli.backup.as_deref(), &cli.storage_path).map_err(|e| e.to_string())?;
    let bytes: u64 = manifest.files.iter().map(|f| f.size).sum();
    println!(
        "restored backup {} into {}: {} files ({bytes} bytes), each checked",
        manifest.name,
        cli.storage_path.display(),
        manifest.files.len()
    );
    Ok(())
}

/// Asks a running server for a snapshot; its name.
fn take_snapshot(url: &str) -> Result<String, String> {
    let response = reqwest::blocking::Client::new()
        .post(url)
        .send()
        .map_err(|e| format!("asking {url} for a snapshot: {e}"))?;
    let status = response.status();
    let body = response
        .text()
        .map_err(|e| format!("reading the snapshot answer: {e}"))?;
    if !status.is_success() {
        return Err(format!("{url} answered {status}: {body}"));
    }
    let answer: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("the snapshot answer is not JSON ({e}): {body}"))?;
    answer["data"]["name"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("the snapshot answer names no snapshot: {body}"))
}

/// Locks `dir` as a server does, so none opens it during the backup.
fn lock_unused(dir: &Path) -> Result<File, String> {
    let path = dir.join("LOCK");
    let file = File::open(&path).map_err(|e| format!("{} is not a data directory: {e}", dir.display()))?;
    file.try_lock().map_err(|_| {
        format!(
            "{} is in use by a running cairn: back it up through the server with \
             --snapshot-url http://HOST:PORT/api/v1/admin/tsdb/snapshot",
            dir.display()
        )
    })?;
    Ok(file)
}

/// `20060102T150405Z`: the backup's time, sortable.
fn backup_name(now: SystemTime) -> String {
    let secs = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    let (year, month, day) = cairn_model::civil::civil_from_days(secs.div_euclid(86_400));
    let of_day = secs.rem_euclid(86_400);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_are_utc_times() {
        let t = UNIX_EPOCH + std::time::Duration::from_secs(1_764_325_805);
        assert_eq!(backup_name(t), "20251128T103005Z");
    }

    #[test]
    fn a_directory_in_use_is_refused_without_a_snapshot_url() {
        let dir = tempfile::tempdir().unwrap();
        let held = File::create(dir.path().join("LOCK")).unwrap();
        held.try_lock().unwrap();
        let err = lock_unused(dir.path()).unwrap_err();
        assert!(err.contains("--snapshot-url"), "{err}");
        drop(held);
        lock_unused(dir.path()).unwrap();
    }

    #[test]
    fn usage_errors_exit_2() {
        assert_eq!(main(vec!["backup".into()]), 2);
        assert_eq!(main(vec!["restore".into(), "--from".into(), "x".into()]), 2);
        assert_eq!(main(vec!["nothing".into()]), 2);
    }
}
