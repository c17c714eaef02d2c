use std::fs::OpenOptions;
use std::io::Write;

use super::*;

fn read_all(dir: &Path) -> Result<Vec<Vec<u8>>, StorageError> {
    let mut out = Vec::new();
    let quarantine = Quarantine::new(dir);
    replay(
        dir,
        u64::MAX,
        &cairn_storage::WalReplay::default(),
        &quarantine,
        |_, p| {
            out.push(p.to_vec());
            Ok(())
        },
    )?;
    Ok(out)
}

fn records(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![i as u8; i * 7 + 1]).collect()
}

#[test]
fn wal_replays_records_in_order_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::open(dir.path(), 64, false, 0).unwrap();
    for r in records(20) {
        wal.append(&r).unwrap();
    }
    assert!(
        list_segments(dir.path()).unwrap().len() > 1,
        "small segment size forces rotation"
    );
    assert_eq!(read_all(dir.path()).unwrap(), records(20));
}

#[test]
fn wal_remove_before_drops_old_segments_only() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
    wal.append(b"old").unwrap();
    let next = wal.rotate().unwrap();
    wal.append(b"new").unwrap();
    wal.remove_before(next).unwrap();
    assert_eq!(read_all(dir.path()).unwrap(), vec![b"new".to_vec()]);
}

#[test]
fn wal_replay_truncates_torn_tail_at_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    {
        let wal = Wal::open(dir.path(), 1 << 20, true, 0).unwrap();
        for r in records(3) {
            wal.append(&r).unwrap();
        }
    }
    let seg = segment_path(dir.path(), 1);
    let full = std::fs::read(&seg).unwrap();
    let first_two = 2 * HEADER_BYTES + 1 + 8;
    for cut in first_two..full.len() {
        std::fs::write(&seg, &full[..cut]).unwrap();
        assert_eq!(read_all(dir.path()).unwrap(), records(2), "cut at {cut}");
        assert_eq!(
            std::fs::metadata(&seg).unwrap().len() as usize,
            first_two,
            "tail truncated"
        );
    }
}

#[test]
fn wal_replay_truncates_garbage_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
        wal.append(b"good").unwrap();
    }
    let seg = segment_path(dir.path(), 1);
    let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
    f.write_all(&[0xff; 100]).unwrap();
    assert_eq!(read_all(dir.path()).unwrap(), vec![b"good".to_vec()]);
    // A new WAL after recovery appends after the truncated segment.
    let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
    wal.append(b"after").unwrap();
    assert_eq!(read_all(dir.path()).unwrap(), vec![b"good".to_vec(), b"after".to_vec()]);
}

#[test]
fn a_damaged_older_segment_is_replayed_up_to_the_damage_and_quarantined() {
    let dir = tempfile::tempdir().unwrap();
    {
        let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
        wal.append(b"before the damage").unwrap();
        wal.append(b"damaged").unwrap();
        wal.append(b"after the damage").unwrap();
        wal.rotate().unwrap();
        wal.append(b"second segment").unwrap();
    }
    let seg = segment_path(dir.path(), 1);
    let mut bytes = std::fs::read(&seg).unwrap();
    let damaged_at = HEADER_BYTES + b"before the damage".len();
    bytes[damaged_at + HEADER_BYTES + 2] ^= 0x55;
    std::fs::write(&seg, &bytes).unwrap();
    assert_eq!(
        read_all(dir.path()).unwrap(),
        vec![b"before the damage".to_vec(), b"second segment".to_vec()]
    );
    assert!(!seg.exists());
    let moved = dir.path().join("quarantine").join(seg.file_name().unwrap());
    assert_eq!(std::fs::read(&moved).unwrap(), bytes);
    let mut note = moved.into_os_string();
    note.push(".reason");
    let note = std::fs::read_to_string(note).unwrap();
    assert!(
        note.contains(&format!("checksum mismatch at offset {damaged_at}")),
        "{note}"
    );
}

#[test]
fn damage_followed_by_whole_records_in_the_last_segment_is_truncated_and_copied() {
    let dir = tempfile::tempdir().unwrap();
    {
        let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
        wal.append(b"kept").unwrap();
        wal.append(b"damaged").unwrap();
        wal.append(b"lost").unwrap();
    }
    let seg = segment_path(dir.path(), 1);
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[2 * HEADER_BYTES + 4 + 1] ^= 1;
    std::fs::write(&seg, &bytes).unwrap();
    assert_eq!(read_all(dir.path()).unwrap(), vec![b"kept".to_vec()]);
    assert_eq!(std::fs::metadata(&seg).unwrap().len() as usize, HEADER_BYTES + 4);
    let copied = dir.path().join("quarantine").join(seg.file_name().unwrap());
    assert_eq!(std::fs::read(copied).unwrap(), bytes);
}

#[test]
fn a_record_that_checks_but_does_not_decode_quarantines_its_segment() {
    let dir = tempfile::tempdir().unwrap();
    {
        let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
        wal.append(b"good").unwrap();
        wal.append(b"undecodable").unwrap();
        wal.rotate().unwrap();
        wal.append(b"later").unwrap();
    }
    let quarantine = Quarantine::new(dir.path());
    let mut seen = Vec::new();
    replay(dir.path(), u64::MAX, &WalReplay::default(), &quarantine, |_, p| {
        if p == b"undecodable" {
            return Err(StorageError::Corrupt {
                path: dir.path().to_path_buf(),
                reason: "undecodable record".into(),
            });
        }
        seen.push(p.to_vec());
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, vec![b"good".to_vec(), b"later".to_vec()]);
    assert_eq!(quarantine.counts()[4], ("wal", 1));
    assert!(dir.path().join("quarantine").join("00000000000000000001.wal").is_file());
}

#[test]
fn a_tail_waits_for_a_record_being_written_and_reads_it_once_whole() {
    use tail::{TailEvent, WalPosition, WalTail};
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
    wal.append(b"first").unwrap();
    let start = wal.end();
    let mut tail = WalTail::new(start);
    let mut payload = Vec::new();
    let record = frame(|b| b.extend_from_slice(b"second record"));
    let path = segment_path(dir.path(), start.segment);
    let mut writer = OpenOptions::new().append(true).open(&path).unwrap();
    // The bytes of a write as a reader may see them while they are copied.
    for byte in &record {
        assert_eq!(tail.next(&wal, &mut payload).unwrap(), TailEvent::End);
        writer.write_all(std::slice::from_ref(byte)).unwrap();
    }
    assert_eq!(tail.next(&wal, &mut payload).unwrap(), TailEvent::Record { at: start });
    assert_eq!(payload, b"second record");
    assert_eq!(tail.next(&wal, &mut payload).unwrap(), TailEvent::End);
    // Across a rotation the tail moves on to the next segment.
    let next = wal.rotate().unwrap();
    wal.append(b"third").unwrap();
    assert_eq!(
        tail.next(&wal, &mut payload).unwrap(),
        TailEvent::Record {
            at: WalPosition {
                segment: next,
                offset: 0
            }
        }
    );
    assert_eq!(payload, b"third");
}

#[test]
fn a_tail_reports_damage_in_a_finished_segment_and_goes_on_with_the_next() {
    use tail::{TailEvent, WalPosition, WalTail};
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::open(dir.path(), 1 << 20, false, 0).unwrap();
    let start = wal.end();
    wal.append(b"good").unwrap();
    wal.append(b"flipped").unwrap();
    let next = wal.rotate().unwrap();
    wal.append(b"after").unwrap();
    let path = segment_path(dir.path(), start.segment);
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&path, bytes).unwrap();
    let mut tail = WalTail::new(start);
    let mut payload = Vec::new();
    assert!(matches!(
        tail.next(&wal, &mut payload).unwrap(),
        TailEvent::Record { .. }
    ));
    assert_eq!(payload, b"good");
    match tail.next(&wal, &mut payload).unwrap() {
        TailEvent::Lost { from, to, .. } => {
            assert_eq!(from.segment, start.segment);
            assert_eq!(
                to,
                WalPosition {
                    segment: next,
                    offset: 0
                }
            );
        }
        other => panic!("expected the damage reported, got {other:?}"),
    }
    assert!(matches!(
        tail.next(&wal, &mut payload).unwrap(),
        TailEvent::Record { .. }
    ));
    assert_eq!(payload, b"after");
}

#[test]
fn a_reader_at_the_end_wakes_when_a_record_is_appended() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let wal = std::sync::Arc::new(Wal::open(dir.path(), 1 << 20, false, 0).unwrap());
    // Nothing appended since `seen`: the wait lasts its timeout.
    let seen = wal.appends();
    let t = Instant::now();
    wal.wait_for_append(seen, Duration::from_millis(50));
    assert!(t.elapsed() >= Duration::from_millis(50));
    // Appended after `seen` was taken, before the wait: no wait at all.
    wal.append(b"a").unwrap();
    let t = Instant::now();
    wal.wait_for_append(seen, Duration::from_secs(30));
    assert!(t.elapsed() < Duration::from_secs(5));
    // Appended while waiting, or woken: the wait ends then.
    for wake in [false, true] {
        let seen = wal.appends();
        let writer = {
            let wal = wal.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                if wake {
                    wal.wake_readers()
                } else {
                    wal.append(b"b").unwrap()
                }
            })
        };
        let t = Instant::now();
        wal.wait_for_append(seen, Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(5), "wake: {wake}");
        writer.join().unwrap();
    }
    assert_eq!(wal.appends(), 2);
}
