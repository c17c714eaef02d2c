use std::sync::Arc;

use super::reader::INDEX_READ_ENTRIES;
use super::*;

fn build(series: &[(u64, Vec<(i64, f64)>)]) -> Vec<u8> {
    let mut w = PartWriter::new(Vec::new(), 1, 2).unwrap();
    for (id, s) in series {
        let ts: Vec<i64> = s.iter().map(|p| p.0).collect();
        let vs: Vec<f64> = s.iter().map(|p| p.1).collect();
        w.add_series(*id, &ts, &vs).unwrap();
    }
    w.finish().unwrap().0
}

fn read(part: &Part, id: u64, mint: i64, maxt: i64) -> Vec<(i64, u64)> {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    for b in part.blocks_of(id, mint, maxt) {
        part.read_block(&b, &mut ts, &mut vs).unwrap();
    }
    ts.into_iter().zip(vs.into_iter().map(f64::to_bits)).collect()
}

#[test]
fn part_round_trips_in_memory_and_on_disk() {
    let long: Vec<(i64, f64)> = (0..20_000).map(|i| (i * 15_000, i as f64)).collect();
    let series = vec![
        (3, vec![(1, 1.0), (2, f64::NAN)]),
        (7, long.clone()),
        (9, vec![(5, -0.0)]),
    ];
    let bytes = build(&series);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.cpart");
    std::fs::write(&path, &bytes).unwrap();
    for part in [Part::from_bytes(bytes).unwrap(), Part::open(&path).unwrap()] {
        assert_eq!(part.meta().samples, 20_003);
        assert_eq!(part.meta().mint, 0);
        assert!(part.block_count() >= 5, "long series split into blocks");
        let want: Vec<(i64, u64)> = long.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        assert_eq!(read(&part, 7, i64::MIN, i64::MAX), want);
        assert_eq!(
            read(&part, 3, 0, 10),
            vec![(1, 1f64.to_bits()), (2, f64::NAN.to_bits())]
        );
        assert_eq!(read(&part, 9, 0, 10), vec![(5, (-0.0f64).to_bits())]);
        assert!(read(&part, 8, i64::MIN, i64::MAX).is_empty());
        // Only blocks overlapping the range are returned.
        let blocks: Vec<_> = part.blocks_of(7, 0, 1000).collect();
        assert_eq!(blocks.len(), 1);
        // Blocks are cut at every multiple of the block span.
        let all: Vec<_> = part.blocks_of(7, i64::MIN, i64::MAX).collect();
        assert_eq!(all.len(), (20_000 * 15_000 / BLOCK_SPAN_MS + 1) as usize);
        for b in &all {
            assert_eq!(
                b.mint.div_euclid(BLOCK_SPAN_MS),
                b.maxt.div_euclid(BLOCK_SPAN_MS),
                "{b:?}"
            );
        }
    }
}

#[test]
fn dense_series_are_cut_by_sample_count_and_extreme_timestamps_terminate() {
    let dense: Vec<(i64, f64)> = (0..20_000).map(|i| (i, 1.0)).collect();
    let extreme = vec![
        (i64::MIN, 1.0),
        (-1, 2.0),
        (0, 3.0),
        (i64::MAX - 1, 4.0),
        (i64::MAX, 5.0),
    ];
    let part = Part::from_bytes(build(&[(1, dense.clone()), (2, extreme.clone())])).unwrap();
    let counts: Vec<u32> = part.blocks_of(1, i64::MIN, i64::MAX).map(|b| b.count).collect();
    assert_eq!(counts, vec![8192, 8192, 20_000 - 2 * 8192]);
    assert_eq!(read(&part, 1, i64::MIN, i64::MAX).len(), dense.len());
    let want: Vec<(i64, u64)> = extreme.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    assert_eq!(read(&part, 2, i64::MIN, i64::MAX), want);
    // i64::MIN, -1 and 0 lie in different windows; the last window's end
    // does not fit in an i64, so i64::MAX gets a block of its own.
    assert_eq!(part.blocks_of(2, i64::MIN, i64::MAX).count(), 5);
}

/// Where a part's index starts, from its footer.
fn index_start(bytes: &[u8]) -> usize {
    let at = bytes.len() - FOOTER_BYTES;
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize
}

#[test]
fn part_open_rejects_every_single_byte_corruption_of_footer_and_index() {
    let bytes = build(&[(1, vec![(1, 1.0), (2, 2.0)]), (2, vec![(3, 3.0)])]);
    for at in index_start(&bytes)..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x01;
        assert!(Part::from_bytes(bad).is_err(), "flip at {at} went unnoticed");
    }
}

/// The same part in format 1 (48-byte index entries), for a part none of
/// whose blocks refers to shared timestamps (those references differ too).
fn to_v1(bytes: &[u8]) -> Vec<u8> {
    let part = Part::from_bytes(bytes.to_vec()).unwrap();
    let index_offset = index_start(bytes);
    let mut out = bytes[..index_offset].to_vec();
    out[..MAGIC_V1.len()].copy_from_slice(MAGIC_V1);
    for b in part.blocks() {
        assert!(bytes[b.start() as usize] != SHARED_TIMESTAMPS, "not convertible");
        for field in [b.id, b.mint as u64, b.maxt as u64, b.start()] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        for field in [b.byte_len(), b.count, b.crc(), 0] {
            out.extend_from_slice(&field.to_le_bytes());
        }
    }
    let mut footer = bytes[bytes.len() - FOOTER_BYTES..].to_vec();
    footer[56..60].copy_from_slice(&cairn_codec::crc32c(&out[index_offset..]).to_le_bytes());
    let crc = cairn_codec::crc32c(&footer[..60]);
    footer[60..64].copy_from_slice(&crc.to_le_bytes());
    footer[64..].copy_from_slice(MAGIC_V1);
    out.extend_from_slice(&footer);
    out
}

#[test]
fn a_format_1_file_whose_index_takes_several_reads_opens_as_in_memory() {
    let n = INDEX_READ_ENTRIES as u64 * 2 + 5;
    let series: Vec<(u64, Vec<(i64, f64)>)> = (0..n).map(|id| (id * 3, vec![(id as i64, id as f64)])).collect();
    let packed = build(&series);
    let bytes = to_v1(&packed);
    assert_eq!(
        bytes.len() - index_start(&bytes) - FOOTER_BYTES,
        n as usize * ENTRY_BYTES
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.cpart");
    std::fs::write(&path, &bytes).unwrap();
    let (memory, file) = (Part::from_bytes(packed).unwrap(), Part::open(&path).unwrap());
    assert_eq!(file.blocks().collect::<Vec<_>>(), memory.blocks().collect::<Vec<_>>());
    assert_eq!(
        read(&file, (n - 1) * 3, i64::MIN, i64::MAX),
        [((n - 1) as i64, ((n - 1) as f64).to_bits())]
    );
    // A flip in the first, a middle and the last read of the index.
    let index_start = index_start(&bytes);
    for entry in [0, INDEX_READ_ENTRIES + 1, n as usize - 1] {
        let mut bad = bytes.clone();
        bad[index_start + entry * ENTRY_BYTES + 3] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        let err = Part::open(&path)
            .err()
            .expect("a damaged index is rejected")
            .to_string();
        assert!(err.contains("index checksum mismatch"), "{err}");
    }
}

/// What `testdata/v1.cpart` holds: written by the format-1 writer (commit
/// 07ed8cc), with shared timestamp columns and a series cut into blocks.
fn v1_fixture_series() -> Vec<(u64, Vec<(i64, f64)>)> {
    let jittered: Vec<i64> = (0..300)
        .map(|i| 1_700_000_000_000 + i * 15_000 + (i * 7919 % 13))
        .collect();
    let with = |f: &dyn Fn(i64) -> f64| jittered.iter().enumerate().map(|(i, &t)| (t, f(i as i64))).collect();
    vec![
        (3, with(&|i| i as f64 * 1.5)),
        (7, with(&|i| (i % 17) as f64)),
        (9, with(&|_| 42.0)),
        (12, (0..20_000).map(|i| (i * 15_000, i as f64)).collect()),
    ]
}

#[test]
fn a_part_written_in_format_1_reads_as_written() {
    let bytes = include_bytes!("testdata/v1.cpart").to_vec();
    assert!(bytes.ends_with(MAGIC_V1));
    let shared = Part::from_bytes(bytes.clone())
        .unwrap()
        .blocks()
        .filter(|b| bytes[b.start() as usize] == SHARED_TIMESTAMPS)
        .count();
    assert!(shared >= 2, "the fixture has shared timestamp columns");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.cpart");
    std::fs::write(&path, &bytes).unwrap();
    for part in [Part::from_bytes(bytes).unwrap(), Part::open(&path).unwrap()] {
        for (id, s) in v1_fixture_series() {
            let want: Vec<(i64, u64)> = s.iter().map(|&(t, v)| (t, v.to_bits())).collect();
            assert_eq!(read(&part, id, i64::MIN, i64::MAX), want, "series {id}");
        }
    }
    // A merge rewrites what it reads in the current format.
    let v1 = Arc::new(Part::open(&path).unwrap());
    let merged = crate::partition::merge_parts(&[v1], &[], Vec::new(), BlockEncoding::Compact, &[])
        .unwrap()
        .finish()
        .unwrap()
        .0;
    assert!(merged.ends_with(MAGIC));
    let merged = Part::from_bytes(merged).unwrap();
    for (id, s) in v1_fixture_series() {
        let want: Vec<(i64, u64)> = s.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        assert_eq!(read(&merged, id, i64::MIN, i64::MAX), want, "series {id}");
    }
}

/// The index of a written part is what the writer would hand to memory,
/// and about a third of format 1's 48 bytes an entry.
#[test]
fn a_packed_index_is_what_an_in_memory_part_holds() {
    let series: Vec<(u64, Vec<(i64, f64)>)> = (0..1000u64)
        .map(|id| {
            (
                id * 0x9e37_79b9,
                (0..4).map(|i| (1_700_000_000_000 + i * 15_000, i as f64)).collect(),
            )
        })
        .collect();
    let bytes = build(&series);
    let index_bytes = bytes.len() - index_start(&bytes) - FOOTER_BYTES;
    assert!(index_bytes < 1000 * 20, "{index_bytes} B of index for 1000 blocks");
    let mut w = PartWriter::new(Vec::new(), 1, 2).unwrap();
    for (id, s) in &series {
        let (ts, vs): (Vec<i64>, Vec<f64>) = s.iter().copied().unzip();
        w.add_series(*id, &ts, &vs).unwrap();
    }
    let memory = w.finish_in_memory().unwrap();
    let parsed = Part::from_bytes(bytes).unwrap();
    assert_eq!(memory.meta(), parsed.meta());
    assert_eq!(memory.blocks().collect::<Vec<_>>(), parsed.blocks().collect::<Vec<_>>());
    for (id, s) in &series {
        let want: Vec<(i64, u64)> = s.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        assert_eq!(read(&memory, *id, i64::MIN, i64::MAX), want);
    }
}

#[test]
fn part_block_corruption_is_reported_on_read() {
    let bytes = build(&[(1, vec![(1, 1.0), (2, 2.0)])]);
    let mut bad = bytes.clone();
    bad[MAGIC.len() + 1] ^= 0xff;
    let part = Part::from_bytes(bad).unwrap();
    let b = part.blocks_of(1, 0, 10).next().unwrap();
    let err = part.read_block(&b, &mut Vec::new(), &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("checksum"), "{err}");
}

#[test]
fn part_decoding_arbitrary_bytes_never_panics() {
    let bytes = build(&[(1, vec![(1, 1.0), (2, 2.0)]), (5, vec![(3, 3.0)])]);
    for cut in 0..bytes.len() {
        let _ = Part::from_bytes(bytes[..cut].to_vec());
    }
}

/// Found by fuzz target tsdb_part: an index entry count whose byte size
/// overflows u64 panicked in the size check.
#[test]
fn regress_fuzz_part_entry_count_overflow() {
    let crash: &[u8] = &[
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 67, 78, 82, 73, 80,
        47, 82, 174, 26, 67, 65, 73, 0, 0, 0, 10, 0, 0, 0, 0, 242, 0, 0, 0, 0, 0, 67, 79, 82, 73, 80, 30, 184, 66, 247,
        237, 67, 65, 73, 82, 78, 80, 84, 49,
    ];
    assert!(Part::from_bytes(crash.to_vec()).is_err());
}

/// Series scraped together share every timestamp: later blocks refer to the
/// first block's timestamp bytes instead of repeating them.
#[test]
fn shared_timestamp_columns_are_stored_once() {
    // A 7 s grid with ±5 ms of pseudo-random scrape jitter, inside one
    // block window.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let ts: Vec<i64> = (0..1000)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            5 + i * 7_000 + (x % 11) as i64 - 5
        })
        .collect();
    let series: Vec<(u64, Vec<(i64, f64)>)> = (0..50u64)
        .map(|id| (id, ts.iter().map(|&t| (t, (t / 1000 + id as i64) as f64)).collect()))
        .collect();
    let bytes = build(&series);
    let mut alone = PartWriter::new(Vec::new(), 1, 2).unwrap();
    let (t, v): (Vec<i64>, Vec<f64>) = series[0].1.iter().copied().unzip();
    alone.add_series(0, &t, &v).unwrap();
    let ts_bytes = {
        let mut b = Vec::new();
        cairn_codec::encode_timestamps(&mut b, &ts);
        b.len()
    };
    assert!(ts_bytes > 100, "a jittered column is worth sharing ({ts_bytes} B)");
    let single = alone.finish().unwrap().0.len();
    assert!(
        bytes.len() < single * 50 - ts_bytes * 45,
        "50 series: {} B, one series: {single} B, timestamps {ts_bytes} B",
        bytes.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.cpart");
    std::fs::write(&path, &bytes).unwrap();
    for part in [Part::from_bytes(bytes.clone()).unwrap(), Part::open(&path).unwrap()] {
        for (id, s) in &series {
            let want: Vec<(i64, u64)> = s.iter().map(|&(t, v)| (t, v.to_bits())).collect();
            assert_eq!(read(&part, *id, i64::MIN, i64::MAX), want);
        }
    }
    // Damage inside the shared column is caught when a referring block is read.
    let mut bad = bytes;
    bad[MAGIC.len() + 3] ^= 0x10;
    let part = Part::from_bytes(bad).unwrap();
    let b = part.blocks_of(7, i64::MIN, i64::MAX).next().unwrap();
    let err = part.read_block(&b, &mut Vec::new(), &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("shared timestamps checksum mismatch"), "{err}");
}

/// Young parts hold a few samples per series: their columns are written in
/// each block (a reader decodes them faster than it finds a shared one),
/// longer ones are shared.
#[test]
fn only_columns_of_at_least_min_shared_timestamps_are_shared() {
    for (len, shared) in [
        (4, false),
        (MIN_SHARED_TIMESTAMPS - 1, false),
        (MIN_SHARED_TIMESTAMPS, true),
    ] {
        let ts: Vec<i64> = (0..len as i64).map(|i| 1_000_000 + i * 15_000 + (i * 7) % 13).collect();
        let series: Vec<(u64, Vec<(i64, f64)>)> = (0..20u64)
            .map(|id| (id, ts.iter().map(|&t| (t, (t + id as i64) as f64)).collect()))
            .collect();
        let bytes = build(&series);
        let part = Part::from_bytes(bytes.clone()).unwrap();
        let references = part
            .blocks()
            .filter(|b| bytes[b.start() as usize] == SHARED_TIMESTAMPS)
            .count();
        assert_eq!(references > 0, shared, "{len} timestamps");
        for (id, s) in &series {
            let want: Vec<(i64, u64)> = s.iter().map(|&(t, v)| (t, v.to_bits())).collect();
            assert_eq!(read(&part, *id, i64::MIN, i64::MAX), want);
        }
    }
}

#[test]
fn interleaved_timestamp_columns_are_each_shared_and_near_misses_kept_apart() {
    // Three targets' columns, the third differing from the first in one
    // timestamp; series of the targets interleave, as ids hash them apart.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut jittered = |offset: i64| -> Vec<i64> {
        (0..500)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                offset + i * 14_000 + (x % 11) as i64
            })
            .collect()
    };
    let a = jittered(0);
    let b = jittered(3);
    let mut c = a.clone();
    c[250] += 1;
    let columns = [&a, &b, &c];
    let series: Vec<(u64, Vec<(i64, f64)>)> = (0..60u64)
        .map(|id| {
            let ts = columns[id as usize % 3];
            (id, ts.iter().map(|&t| (t, id as f64)).collect())
        })
        .collect();
    let bytes = build(&series);
    let part = Part::from_bytes(bytes.clone()).unwrap();
    for (id, s) in &series {
        let want: Vec<(i64, u64)> = s.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        assert_eq!(read(&part, *id, i64::MIN, i64::MAX), want, "series {id}");
    }
    let column_bytes: usize = columns
        .iter()
        .map(|ts| {
            let mut b = Vec::new();
            cairn_codec::encode_timestamps(&mut b, ts);
            b.len()
        })
        .sum();
    assert!(
        column_bytes > 3 * 200,
        "jittered columns are worth sharing ({column_bytes} B)"
    );
    // Each column once; every other block holds a reference, its values and
    // its index entry.
    assert!(
        bytes.len() < column_bytes + 60 * 100,
        "{} B for columns of {column_bytes} B",
        bytes.len()
    );
}

/// Reading ahead through one buffer gives exactly what block-by-block reads
/// give, also when the buffer last held another part's bytes at the same offsets.
#[test]
fn buffered_reads_match_single_reads_across_parts() {
    let dir = tempfile::tempdir().unwrap();
    let parts: Vec<Part> = [0.0, 1000.0]
        .iter()
        .enumerate()
        .map(|(n, &base)| {
            let long: Vec<(i64, f64)> = (0..3000).map(|i| (i * 15_000, base + i as f64)).collect();
            let bytes = build(&[(3, vec![(1, base)]), (7, long)]);
            let path = dir.path().join(format!("{n}.cpart"));
            std::fs::write(&path, bytes).unwrap();
            Part::open(&path).unwrap()
        })
        .collect();
    let mut buf = ReadBuffer::default();
    for round in 0..2 {
        for part in &parts {
            for id in [3, 7] {
                let blocks: Vec<BlockRef> = part.blocks_of(id, i64::MIN, i64::MAX).collect();
                assert!(id == 3 || blocks.len() > 3, "round {round}");
                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                for (i, b) in blocks.iter().enumerate() {
                    part.read_block_buffered(b, blocks[i + 1..].iter(), &mut buf, &mut ts, &mut vs)
                        .unwrap();
                }
                let got: Vec<(i64, u64)> = ts.into_iter().zip(vs.into_iter().map(f64::to_bits)).collect();
                assert_eq!(got, read(part, id, i64::MIN, i64::MAX), "round {round} series {id}");
            }
        }
    }
}

/// A value repeated for hours stays one block over whole windows; once it
/// changes, blocks are cut at window boundaries again.
#[test]
fn repeated_values_run_over_whole_windows() {
    let span = BLOCK_SPAN_MS;
    // Constant for windows 0..3, changing in window 3, constant again in 4..6.
    let s: Vec<(i64, f64)> = (0..6 * span / 15_000)
        .map(|i| {
            let t = i * 15_000;
            let v = match t / span {
                0..=2 => 1.0,
                3 => (t % 7) as f64,
                _ => f64::from_bits(0x7ff0_0000_0000_0002),
            };
            (t, v)
        })
        .collect();
    let part = Part::from_bytes(build(&[(1, s.clone())])).unwrap();
    let spans: Vec<(i64, i64)> = part
        .blocks_of(1, i64::MIN, i64::MAX)
        .map(|b| (b.mint / span, b.maxt / span))
        .collect();
    assert_eq!(spans, vec![(0, 2), (3, 3), (4, 5)]);
    let want: Vec<(i64, u64)> = s.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    assert_eq!(read(&part, 1, i64::MIN, i64::MAX), want);
}

/// A block whose bytes were read but whose shared timestamps could not be
/// (the bucket failed) is not damaged: the read fails, nothing is listed as
/// lost, and the next read once the bucket answers again succeeds.
#[test]
fn a_failed_read_is_an_error_and_loses_no_block() {
    let ts: Vec<i64> = (0..1000).map(|i| i * 7_000 + (i * 7919) % 11).collect();
    let series: Vec<(u64, Vec<(i64, f64)>)> = (0..2u64)
        .map(|id| (id, ts.iter().map(|&t| (t, id as f64)).collect()))
        .collect();
    let bytes = build(&series);
    let dir = tempfile::tempdir().unwrap();
    let config = cairn_bucket::BucketConfig::new(format!("file://{}", dir.path().display()));
    let bucket = Arc::new(cairn_bucket::Bucket::open_uncached(&config).unwrap());
    bucket.put("p.cpart", bytes.clone()).unwrap();
    let part = Part::open_object(bucket.clone(), bucket.head("p.cpart").unwrap()).unwrap();
    let first = part.blocks_of(0, i64::MIN, i64::MAX).next().unwrap();
    let second = part.blocks_of(1, i64::MIN, i64::MAX).next().unwrap();
    let (mut t, mut v) = (Vec::new(), Vec::new());
    let mut buf = ReadBuffer::default();
    // One read brings both blocks; the second refers to the first's timestamps.
    part.read_block_buffered(&first, [&second].into_iter(), &mut buf, &mut t, &mut v)
        .unwrap();
    bucket.delete("p.cpart").unwrap();
    let err = part
        .read_block_buffered(&second, std::iter::empty(), &mut buf, &mut t, &mut v)
        .unwrap_err();
    assert!(!matches!(err, cairn_storage::StorageError::Corrupt { .. }), "{err}");
    assert!(part.lost_block(&second).is_none() && !part.is_damaged());
    bucket.put("p.cpart", bytes).unwrap();
    t.clear();
    v.clear();
    part.read_block_buffered(&second, std::iter::empty(), &mut buf, &mut t, &mut v)
        .unwrap();
    assert_eq!(t, ts);
    assert!(v.iter().all(|&x| x == 1.0));
}
