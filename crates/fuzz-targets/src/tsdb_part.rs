//! Parts must fail cleanly, never panic or over-allocate, whatever the bytes:
//! both arbitrary bytes, and valid parts (built from the input: several
//! series, some sharing a timestamp column; and a format-1 part) with one
//! byte changed, which get past the checksums' front door to the block and
//! shared-column decoding.

use cairn_tsdb::PartWriter;
use cairn_tsdb::formats::Part;

fn read_all(part: &Part) {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    for b in part.blocks() {
        ts.clear();
        vs.clear();
        let _ = part.read_block(&b, &mut ts, &mut vs);
        // The packed index's search, for every id present and its neighbours.
        let mut cursor = part.block_cursor();
        let mut ids = [b.id.wrapping_sub(1), b.id, b.id.wrapping_add(1)];
        ids.sort_unstable();
        for id in ids {
            cursor.series(id, |_| {});
        }
    }
}

/// A valid part from `data`: up to 8 series of up to 64 samples; even series
/// share one timestamp column, odd ones get their own.
fn build(data: &[u8]) -> Option<Vec<u8>> {
    let (&n, rest) = data.split_first()?;
    let words: Vec<u64> = rest
        .chunks(8)
        .map(|c| c.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b)))
        .collect();
    let len = words.len().clamp(1, 64);
    let mut shared = Vec::with_capacity(len);
    let mut t = 0i64;
    for w in words.iter().take(len) {
        t += 1 + (*w % 20_000) as i64;
        shared.push(t);
    }
    let mut w = PartWriter::new(Vec::new(), 1, 2).ok()?;
    for id in 0..u64::from(n % 8) + 1 {
        let ts: Vec<i64> = if id % 2 == 0 {
            shared.clone()
        } else {
            shared.iter().map(|t| t * 2 + id as i64).collect()
        };
        let vs: Vec<f64> = words
            .iter()
            .cycle()
            .skip(id as usize)
            .take(ts.len())
            .map(|&x| f64::from_bits(x))
            .collect();
        w.add_series(id, &ts, &vs).ok()?;
    }
    Some(w.finish().ok()?.0)
}

/// A part written in format 1 (48-byte index entries, 17-byte shared
/// timestamp references), still read.
const V1_PART: &[u8] = include_bytes!("../../tsdb/src/part/testdata/v1.cpart");

pub fn tsdb_part(data: &[u8]) {
    if let Ok(part) = Part::from_bytes(data.to_vec()) {
        read_all(&part);
    }
    if let (Some(&at), Some(&flip)) = (data.first(), data.get(3)) {
        let mut v1 = V1_PART.to_vec();
        let i = usize::from(at) * 31 % v1.len();
        v1[i] ^= flip.max(1);
        if let Ok(part) = Part::from_bytes(v1) {
            read_all(&part);
        }
    }
    if let (Some(mut bytes), Some(&at), Some(&flip)) = (build(data), data.get(1), data.get(2)) {
        let i = usize::from(at) * 7 % bytes.len();
        bytes[i] ^= flip.max(1);
        if let Ok(part) = Part::from_bytes(bytes) {
            read_all(&part);
        }
    }
}
