use std::fs;
use std::path::Path;

use cairn_bucket::BucketConfig;

use super::*;

fn write(dir: &Path, path: &str, contents: &[u8]) {
    let path = dir.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "LOCK", b"");
    write(dir.path(), "partitions/2026-11-22/part-1-5.cpart", &[1; 1000]);
    write(dir.path(), "partitions/2026-11-22/index-6.cidx", &[2; 300]);
    write(dir.path(), "partitions/2026-11-22/tombstones.log", b"one");
    write(dir.path(), "partitions/2026-11-22/part-6-7.cpart.tmp", b"half");
    write(dir.path(), "tenants/a/partitions/2026-11-22/part-1-2.cpart", &[3; 50]);
    write(
        dir.path(),
        "snapshots/x/partitions/2026-11-22/part-1-5.cpart",
        &[1; 1000],
    );
    dir
}

fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_str().unwrap().to_string();
                out.push((rel, fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn second_backup_copies_only_new_and_changed_files_and_restores() {
    let source = data_dir();
    let dest_dir = tempfile::tempdir().unwrap();
    let dest = open_destination(dest_dir.path().to_str().unwrap(), &BucketConfig::default()).unwrap();

    let first = backup(source.path(), &dest, "b1").unwrap();
    assert_eq!((first.copied_files, first.copied_bytes), (4, 1353));
    assert_eq!(first.skipped_files, 0);

    write(source.path(), "partitions/2026-11-22/part-8-9.cpart", &[4; 70]);
    write(source.path(), "partitions/2026-11-22/tombstones.log", b"one two");
    let second = backup(source.path(), &dest, "b2").unwrap();
    assert_eq!((second.copied_files, second.copied_bytes), (2, 77));
    assert_eq!((second.skipped_files, second.skipped_bytes), (3, 1350));
    assert_eq!(list(&dest).unwrap(), ["b1", "b2"]);

    // The latest by default; the restored files are the source's.
    let target = tempfile::tempdir().unwrap();
    restore(&dest, None, target.path()).unwrap();
    let mut expected = files_of(source.path());
    expected.retain(|(p, _)| p != "LOCK" && !p.ends_with(".tmp") && !p.starts_with("snapshots"));
    assert_eq!(files_of(target.path()), expected);

    // The first backup still restores as it was.
    let older = tempfile::tempdir().unwrap();
    restore(&dest, Some("b1"), older.path()).unwrap();
    let tombstones = fs::read(older.path().join("partitions/2026-11-22/tombstones.log")).unwrap();
    assert_eq!(tombstones, b"one");
}

#[test]
fn restore_detects_a_corrupt_file_and_refuses_a_non_empty_target() {
    let source = data_dir();
    let dest_dir = tempfile::tempdir().unwrap();
    let dest = open_destination(dest_dir.path().to_str().unwrap(), &BucketConfig::default()).unwrap();
    backup(source.path(), &dest, "b1").unwrap();

    let busy = tempfile::tempdir().unwrap();
    write(busy.path(), "something", b"x");
    let err = restore(&dest, None, busy.path()).unwrap_err();
    assert!(err.to_string().contains("is not empty"), "{err}");

    let manifest = Manifest::load(&dest, "b1").unwrap();
    let part = manifest
        .files
        .iter()
        .find(|f| f.path.ends_with("part-1-5.cpart"))
        .unwrap();
    let stored = dest_dir.path().join(part.data_key());
    let mut bytes = fs::read(&stored).unwrap();
    bytes[500] ^= 0x40;
    fs::write(&stored, bytes).unwrap();
    let target = tempfile::tempdir().unwrap();
    let err = restore(&dest, None, target.path()).unwrap_err();
    assert!(err.to_string().contains("crc32c"), "{err}");
    // The damaged download is not left behind.
    let left: Vec<_> = files_of(target.path()).into_iter().map(|(p, _)| p).collect();
    assert!(!left.iter().any(|p| p.ends_with(".tmp")), "{left:?}");
    assert!(!left.iter().any(|p| p.ends_with("part-1-5.cpart")), "{left:?}");
}

#[test]
fn an_incomplete_backup_is_not_listed() {
    let dest_dir = tempfile::tempdir().unwrap();
    let dest = open_destination(
        &format!("file://{}", dest_dir.path().display()),
        &BucketConfig::default(),
    )
    .unwrap();
    dest.put("data/partitions/x@00000000-0", Vec::new()).unwrap();
    assert!(list(&dest).unwrap().is_empty());
    let err = restore(&dest, None, &dest_dir.path().join("new")).unwrap_err();
    assert!(err.to_string().contains("no complete backup"), "{err}");
}
