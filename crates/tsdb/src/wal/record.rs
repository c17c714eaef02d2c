//! The payload of a WAL record: one committed batch, grouped by day, usually
//! compressed with zstd (docs/format/wal.md).
//!
//! ```text
//! record := kind:u8=2 uvarint(len) zstd-frame(batch)  (batch is len bytes)
//!         | kind:u8=6 forward
//!         | batch
//! batch  := kind:u8=1 uvarint(n_days) day*           (no histograms)
//!         | kind:u8=3 uvarint(n_days) hday*
//!         | kind:u8=4 uvarint(n_days) day*           (labelled, no histograms)
//!         | kind:u8=5 uvarint(n_days) hday*          (labelled)
//! day    := varint(day) uvarint(n_new) new* uvarint(n_series) series*
//! hday   := day uvarint(n_hseries) hseries*
//! new    := id:u64 LE uvarint(len) labels[len]      (series created by this batch)
//! series := id:u64 LE uvarint(n) varint(t0) varint(t[i]-t[i-1])*(n-1) value:u64 LE*n
//! hseries := id:u64 LE uvarint(len) histogram-block[len]  (cairn-codec)
//! forward := uvarint(n_series) uvarint(n_histograms) varint(min_t) varint(max_t) block
//! ```
//!
//! A histogram sample is also a row of its series, whose value is the
//! histogram marker (see `histograms.rs`); `hseries` carry the bodies.
//!
//! A labelled batch (agent mode, where samples are only forwarded) names
//! every series it has in `new`, under ids that number them from 0 in the
//! day: its ids mean nothing outside the record, and no index knows them.
//!
//! A forward batch (agent mode's scrapes) is what remote write sends, made
//! once: `block` is a snappy block of remote write 1.0 series fields, each
//! with one sample or histogram, of which `n_histograms` are histograms.
//! Nothing of it is stored.

use std::cell::RefCell;
use std::io::Read;
use std::sync::Arc;

use cairn_codec::varint::{get_uvarint, get_varint, put_uvarint, put_varint};

use cairn_codec::{HistogramValue, decode_histograms, encode_histograms};
use cairn_model::{EncodedLabels, Histogram};

use super::MAX_RECORD_BYTES;
use crate::day::Day;
use crate::histograms::{from_value, to_value};

const KIND_BATCH: u8 = 1;
const KIND_ZSTD: u8 = 2;
/// A batch whose days also carry histogram bodies.
const KIND_HISTOGRAM_BATCH: u8 = 3;
/// Batches whose series are all in their `new` lists, under record-local ids.
const KIND_LABELLED_BATCH: u8 = 4;
const KIND_LABELLED_HISTOGRAM_BATCH: u8 = 5;
const KIND_FORWARD_BATCH: u8 = 6;
/// zstd's fastest regular level: a batch's series of one metric share their
/// ids' first bytes, a target's samples their timestamps, and many values
/// repeat, so even this level shrinks a remote-write batch several times.
const ZSTD_LEVEL: i32 = 1;

/// A commit's raw batch and compression context, reused.
type Encoder = (Vec<u8>, Option<zstd::bulk::Compressor<'static>>);

/// Encoders for commits that encode their records at the same time, one
/// each: as many as ever ran at once, not one per thread that ever
/// committed (the blocking pool's threads come and go).
static ENCODERS: parking_lot::Mutex<Vec<Encoder>> = parking_lot::Mutex::new(Vec::new());

thread_local! {
    /// A decompression context per reading thread, reused from record to record.
    static DECOMPRESSOR: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

/// The samples of one series in one batch, in append order.
pub struct SeriesRows<'a> {
    pub id: u64,
    pub ts: &'a [i64],
    pub vs: &'a [f64],
}

/// What one commit wrote to one day partition.
pub struct DayBatch<'a> {
    pub day: Day,
    /// Series created by this commit: id and canonical label encoding.
    pub new_series: &'a [(u64, &'a [u8])],
    pub rows: Vec<SeriesRows<'a>>,
    /// Histogram bodies: series id, timestamp, histogram.
    pub histograms: &'a [(u64, i64, Arc<Histogram>)],
}

/// Appends a batch to `dst`, compressed unless that would not make the
/// record shorter. `labelled`: each day's `new_series` are all its series,
/// numbered from 0 in order (agent mode).
pub fn encode_batch(dst: &mut Vec<u8>, days: &[DayBatch<'_>], labelled: bool) {
    let mut encoder = ENCODERS.lock().pop().unwrap_or_default();
    {
        let (raw, compressor) = &mut encoder;
        raw.clear();
        encode_raw(raw, days, labelled);
        if compressor.is_none() {
            *compressor = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok();
        }
        // A batch a reader would refuse to decompress is left whole (and
        // then refused as a record, being too large either way).
        let compressed = compressor
            .as_mut()
            .filter(|_| raw.len() <= MAX_RECORD_BYTES)
            .and_then(|c| c.compress(raw).ok());
        match compressed {
            Some(c) if c.len() + 6 < raw.len() => {
                dst.push(KIND_ZSTD);
                put_uvarint(dst, raw.len() as u64);
                dst.extend_from_slice(&c);
            }
            _ => dst.extend_from_slice(raw),
        }
        raw.clear();
        raw.shrink_to(1 << 20); // what a next batch may reuse
    }
    ENCODERS.lock().push(encoder);
}

/// Appends a batch to `dst` uncompressed.
fn encode_raw(dst: &mut Vec<u8>, days: &[DayBatch<'_>], labelled: bool) {
    let with_histograms = days.iter().any(|d| !d.histograms.is_empty());
    dst.push(match (labelled, with_histograms) {
        (false, false) => KIND_BATCH,
        (false, true) => KIND_HISTOGRAM_BATCH,
        (true, false) => KIND_LABELLED_BATCH,
        (true, true) => KIND_LABELLED_HISTOGRAM_BATCH,
    });
    put_uvarint(dst, days.len() as u64);
    for DayBatch {
        day,
        new_series,
        rows,
        histograms,
    } in days
    {
        put_varint(dst, i64::from(day.0));
        put_uvarint(dst, new_series.len() as u64);
        for (id, labels) in *new_series {
            dst.extend_from_slice(&id.to_le_bytes());
            put_uvarint(dst, labels.len() as u64);
            dst.extend_from_slice(labels);
        }
        put_uvarint(dst, rows.len() as u64);
        for r in rows {
            dst.extend_from_slice(&r.id.to_le_bytes());
            put_uvarint(dst, r.ts.len() as u64);
            let mut prev = 0i64;
            for (i, &t) in r.ts.iter().enumerate() {
                put_varint(dst, if i == 0 { t } else { t.wrapping_sub(prev) });
                prev = t;
            }
            for v in r.vs {
                dst.extend_from_slice(&v.to_bits().to_le_bytes());
            }
        }
        if with_histograms {
            encode_histogram_series(dst, histograms);
        }
    }
}

/// One block per run of bodies of one series.
fn encode_histogram_series(dst: &mut Vec<u8>, histograms: &[(u64, i64, Arc<Histogram>)]) {
    let runs: Vec<&[(u64, i64, Arc<Histogram>)]> = histograms.chunk_by(|a, b| a.0 == b.0).collect();
    put_uvarint(dst, runs.len() as u64);
    let mut block = Vec::new();
    for run in runs {
        let id = run.first().map_or(0, |r| r.0);
        let (ts, hs): (Vec<i64>, Vec<HistogramValue>) = run.iter().map(|(_, t, h)| (*t, to_value(h))).unzip();
        block.clear();
        encode_histograms(&mut block, &ts, &hs);
        dst.extend_from_slice(&id.to_le_bytes());
        put_uvarint(dst, block.len() as u64);
        dst.extend_from_slice(&block);
    }
}

/// A decoded day group.
#[derive(Debug, Default, PartialEq)]
pub struct DayRecord<'a> {
    pub day: i32,
    /// A labelled batch's series, by the ids its rows carry (`new_series`
    /// is empty then).
    pub labelled: Vec<EncodedLabels<'a>>,
    pub new_series: Vec<(u64, &'a [u8])>,
    /// `(series id, t, value bits)`
    pub rows: Vec<(u64, i64, f64)>,
    /// Histogram bodies: series id, timestamp, histogram.
    pub histograms: Vec<(u64, i64, Arc<Histogram>)>,
}

/// Decodes a record, decompressing it into `scratch` if it is compressed.
/// Errors name what was malformed; never panics.
pub fn decode_batch<'a>(src: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<Vec<DayRecord<'a>>, &'static str> {
    match src.split_first() {
        Some((&KIND_FORWARD_BATCH, _)) => decode_forward(src).map(|_| Vec::new()),
        Some((&KIND_ZSTD, rest)) => {
            let (len, frame) = get_uvarint(rest).map_err(|_| "bad record length")?;
            let len = usize::try_from(len)
                .ok()
                .filter(|&l| l <= MAX_RECORD_BYTES)
                .ok_or("record length out of range")?;
            if zstd::zstd_safe::get_frame_content_size(frame).ok().flatten() != Some(len as u64) {
                return Err("record length mismatch");
            }
            // Streamed, so memory grows with what the frame holds, not with
            // what it claims.
            scratch.clear();
            DECOMPRESSOR.with_borrow_mut(|context| {
                let context = context.get_or_insert_with(zstd::zstd_safe::DCtx::create);
                // A frame that failed half way leaves its state behind.
                context
                    .reset(zstd::zstd_safe::ResetDirective::SessionOnly)
                    .map_err(|_| "undecompressable record")?;
                zstd::stream::read::Decoder::with_context(frame, context)
                    .take(len as u64 + 1)
                    .read_to_end(scratch)
                    .map_err(|_| "undecompressable record")
            })?;
            if scratch.len() != len {
                return Err("record length mismatch");
            }
            decode_raw(scratch)
        }
        _ => decode_raw(src),
    }
}

/// A forward batch: series a remote write request carries as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardBatch<'a> {
    /// Series fields in `block`, one sample or histogram each.
    pub series: u32,
    /// How many of them carry a histogram.
    pub histograms: u32,
    pub min_t: i64,
    pub max_t: i64,
    /// A snappy block of remote write 1.0 `TimeSeries` fields.
    pub block: &'a [u8],
}

/// Appends a forward batch's record.
pub fn encode_forward(dst: &mut Vec<u8>, batch: &ForwardBatch<'_>) {
    dst.push(KIND_FORWARD_BATCH);
    put_uvarint(dst, u64::from(batch.series));
    put_uvarint(dst, u64::from(batch.histograms));
    put_varint(dst, batch.min_t);
    put_varint(dst, batch.max_t);
    dst.extend_from_slice(batch.block);
}

/// The forward batch a record holds, if it is one.
pub fn decode_forward(src: &[u8]) -> Result<Option<ForwardBatch<'_>>, &'static str> {
    let Some((&KIND_FORWARD_BATCH, rest)) = src.split_first() else {
        return Ok(None);
    };
    let count = |v: u64| u32::try_from(v).map_err(|_| "series count out of range");
    let (series, rest) = get_uvarint(rest).map_err(|_| "bad series count")?;
    let (histograms, rest) = get_uvarint(rest).map_err(|_| "bad histogram count")?;
    let (min_t, rest) = get_varint(rest).map_err(|_| "bad least time")?;
    let (max_t, block) = get_varint(rest).map_err(|_| "bad greatest time")?;
    let batch = ForwardBatch {
        series: count(series)?,
        histograms: count(histograms)?,
        min_t,
        max_t,
        block,
    };
    if batch.histograms > batch.series || batch.min_t > batch.max_t {
        return Err("inconsistent forward batch header");
    }
    Ok(Some(batch))
}

fn decode_raw(src: &[u8]) -> Result<Vec<DayRecord<'_>>, &'static str> {
    let (&kind, mut src) = src.split_first().ok_or("empty record")?;
    let (labelled, with_histograms) = match kind {
        KIND_BATCH => (false, false),
        KIND_HISTOGRAM_BATCH => (false, true),
        KIND_LABELLED_BATCH => (true, false),
        KIND_LABELLED_HISTOGRAM_BATCH => (true, true),
        _ => return Err("unknown record kind"),
    };
    let n_days = take_count(&mut src)?;
    let mut out = Vec::with_capacity(n_days.min(64));
    for _ in 0..n_days {
        let (day, rest) = get_varint(src).map_err(|_| "bad day")?;
        src = rest;
        let day = i32::try_from(day).map_err(|_| "day out of range")?;
        let mut rec = DayRecord {
            day,
            ..DayRecord::default()
        };
        for _ in 0..take_count(&mut src)? {
            let id = take_u64(&mut src)?;
            let len = take_count(&mut src)?;
            if len > src.len() {
                return Err("labels overrun record");
            }
            let (labels, rest) = src.split_at(len);
            src = rest;
            // Checked here, so that a record whose labels would not become
            // index entries is damage, like any other undecodable record.
            let checked = EncodedLabels::new(labels).map_err(|_| "undecodable series labels")?;
            if !labelled {
                rec.new_series.push((id, labels));
            } else if id == rec.labelled.len() as u64 {
                rec.labelled.push(checked);
            } else {
                return Err("labelled series out of order");
            }
        }
        let known = |id: u64| !labelled || id < rec.labelled.len() as u64;
        for _ in 0..take_count(&mut src)? {
            let id = take_u64(&mut src)?;
            if !known(id) {
                return Err("row of a series the labelled batch lacks");
            }
            let n = take_count(&mut src)?;
            let mut t = 0i64;
            let start = rec.rows.len();
            for i in 0..n {
                let (d, rest) = get_varint(src).map_err(|_| "bad timestamp")?;
                src = rest;
                t = if i == 0 { d } else { t.wrapping_add(d) };
                rec.rows.push((id, t, 0.0));
            }
            for row in &mut rec.rows[start..] {
                row.2 = f64::from_bits(take_u64(&mut src)?);
            }
        }
        if with_histograms {
            for _ in 0..take_count(&mut src)? {
                let id = take_u64(&mut src)?;
                if !known(id) {
                    return Err("histogram of a series the labelled batch lacks");
                }
                let len = take_count(&mut src)?;
                let (block, rest) = src.split_at(len);
                src = rest;
                let (mut ts, mut hs) = (Vec::new(), Vec::new());
                let left = decode_histograms(block, &mut ts, &mut hs).map_err(|_| "bad histogram block")?;
                if !left.is_empty() {
                    return Err("trailing bytes in histogram block");
                }
                rec.histograms
                    .extend(ts.into_iter().zip(hs).map(|(t, h)| (id, t, Arc::new(from_value(h)))));
            }
        }
        out.push(rec);
    }
    if !src.is_empty() {
        return Err("trailing bytes in record");
    }
    Ok(out)
}

/// A count that must be plausible for the bytes left (each item takes at least one byte).
fn take_count(src: &mut &[u8]) -> Result<usize, &'static str> {
    let (n, rest) = get_uvarint(src).map_err(|_| "bad count")?;
    *src = rest;
    if n > src.len() as u64 {
        return Err("count exceeds record size");
    }
    Ok(n as usize)
}

fn take_u64(src: &mut &[u8]) -> Result<u64, &'static str> {
    let (head, rest) = src.split_first_chunk::<8>().ok_or("truncated u64")?;
    *src = rest;
    Ok(u64::from_le_bytes(*head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn record_round_trips_with_special_values() {
        let ts = [1_700_000_000_000, 1_700_000_015_000, 1_699_999_000_000];
        let vs = [1.5, cairn_model::stale_nan(), -0.0];
        let mut labels = Vec::new();
        cairn_model::Labels::from_pairs([("__name__", "m")]).encode(&mut labels);
        let new_series = [(42u64, &labels[..])];
        let days = vec![DayBatch {
            day: Day(19675),
            new_series: &new_series,
            rows: vec![SeriesRows {
                id: 42,
                ts: &ts,
                vs: &vs,
            }],
            histograms: &[],
        }];
        let mut buf = Vec::new();
        encode_batch(&mut buf, &days, false);
        assert_eq!(buf[0], KIND_BATCH, "too small to be worth compressing");
        let mut scratch = Vec::new();
        let got = decode_batch(&buf, &mut scratch).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].day, 19675);
        assert_eq!(got[0].new_series, vec![(42, &labels[..])]);
        let rows: Vec<_> = got[0].rows.iter().map(|&(id, t, v)| (id, t, v.to_bits())).collect();
        let want: Vec<_> = ts.iter().zip(vs).map(|(&t, v)| (42, t, v.to_bits())).collect();
        assert_eq!(rows, want);
    }

    /// A labelled batch names each series by its place in the day: one
    /// whose ids do not number its series in order, or with a row of a
    /// series it lacks, is damage.
    #[test]
    fn a_labelled_batch_must_name_each_row_by_its_series_place() {
        let mut labels = Vec::new();
        cairn_model::Labels::from_pairs([("__name__", "m")]).encode(&mut labels);
        let encode = |ids: [u64; 2], row: u64| {
            let new_series = [(ids[0], &labels[..]), (ids[1], &labels[..])];
            let mut buf = Vec::new();
            let rows = vec![SeriesRows {
                id: row,
                ts: &[1],
                vs: &[2.0],
            }];
            encode_batch(
                &mut buf,
                &[DayBatch {
                    day: Day(1),
                    new_series: &new_series,
                    rows,
                    histograms: &[],
                }],
                true,
            );
            decode_batch(&buf, &mut Vec::new()).map(|days| (days[0].labelled.len(), days[0].rows.clone()))
        };
        assert_eq!(encode([0, 1], 1), Ok((2, vec![(1, 1, 2.0)])));
        assert_eq!(encode([1, 0], 1), Err("labelled series out of order"));
        assert_eq!(encode([0, 1], 2), Err("row of a series the labelled batch lacks"));
    }

    /// A new series whose labels do not decode makes the record damaged:
    /// replay must not turn its bytes into an index entry.
    #[test]
    fn a_record_with_undecodable_labels_is_refused() {
        let new_series = [(42u64, &[0xffu8; 3][..])];
        let days = [DayBatch {
            day: Day(19675),
            new_series: &new_series,
            rows: Vec::new(),
            histograms: &[],
        }];
        let mut buf = Vec::new();
        encode_batch(&mut buf, &days, false);
        let mut scratch = Vec::new();
        assert_eq!(
            decode_batch(&buf, &mut scratch).err(),
            Some("undecodable series labels")
        );
    }

    /// A batch like a remote-write request's: many series of one metric at
    /// one timestamp is compressed, and decodes to what was written; a
    /// damaged or lying frame is an error.
    #[test]
    fn large_batches_are_compressed_and_round_trip() {
        let ids: Vec<u64> = (0..2000u64)
            .map(|i| 0xabcd_e000_0000_0000 | ((i * 0x9e37_79b9) & 0xfff_ffff_ffff))
            .collect();
        let ts = [1_700_000_000_000i64];
        let vs: Vec<[f64; 1]> = (0..2000).map(|i| [(i % 7) as f64]).collect();
        let rows = ids
            .iter()
            .zip(&vs)
            .map(|(&id, v)| SeriesRows { id, ts: &ts, vs: v })
            .collect();
        let days = [DayBatch {
            day: Day(19675),
            new_series: &[],
            rows,
            histograms: &[],
        }];
        let mut raw = Vec::new();
        encode_raw(&mut raw, &days, false);
        let mut buf = Vec::new();
        encode_batch(&mut buf, &days, false);
        assert_eq!(buf[0], KIND_ZSTD);
        assert!(
            buf.len() * 2 < raw.len(),
            "{} B compressed, {} B raw",
            buf.len(),
            raw.len()
        );
        let mut scratch = Vec::new();
        assert_eq!(decode_batch(&buf, &mut scratch).unwrap(), decode_raw(&raw).unwrap());
        let mut cut = buf.clone();
        cut.truncate(buf.len() - 1);
        assert!(decode_batch(&cut, &mut scratch).is_err());
        let mut garbled = buf.clone();
        let middle = garbled.len() / 2;
        garbled[middle..].iter_mut().for_each(|b| *b = !*b);
        assert!(decode_batch(&garbled, &mut scratch).is_err());
        assert_eq!(
            decode_batch(&buf, &mut scratch).unwrap(),
            decode_raw(&raw).unwrap(),
            "the thread's decompressor is whole again after a broken frame"
        );
        let mut lying = vec![KIND_ZSTD];
        put_uvarint(&mut lying, raw.len() as u64 + 1);
        lying.extend_from_slice(&buf[1 + uvarint_len(raw.len())..]);
        assert_eq!(decode_batch(&lying, &mut scratch).err(), Some("record length mismatch"));
        let mut huge = vec![KIND_ZSTD];
        put_uvarint(&mut huge, u64::MAX);
        assert_eq!(
            decode_batch(&huge, &mut scratch).err(),
            Some("record length out of range")
        );
    }

    #[test]
    fn histogram_bodies_round_trip_and_old_records_still_decode() {
        let h = |c: f64| {
            Arc::new(Histogram {
                schema: -53,
                count: c,
                positive: vec![(0, c)],
                custom_bounds: Some(Arc::from(vec![1.0, 2.0])),
                ..Histogram::default()
            })
        };
        let marker = crate::histograms::marker();
        let histograms = [(7u64, 10i64, h(1.0)), (7, 20, h(2.0)), (9, 10, h(3.0)), (7, 30, h(4.0))];
        let (ts7, vs7) = ([10i64, 20, 30], [marker; 3]);
        let days = [DayBatch {
            day: Day(1),
            new_series: &[],
            rows: vec![
                SeriesRows {
                    id: 7,
                    ts: &ts7,
                    vs: &vs7,
                },
                SeriesRows {
                    id: 9,
                    ts: &ts7[..1],
                    vs: &vs7[..1],
                },
            ],
            histograms: &histograms,
        }];
        let mut buf = Vec::new();
        encode_batch(&mut buf, &days, false);
        let mut scratch = Vec::new();
        let got = decode_batch(&buf, &mut scratch).unwrap();
        assert_eq!(got[0].histograms, histograms.to_vec());
        assert_eq!(got[0].rows.len(), 4);
        // A record of the format before histograms (kind 1) decodes as it did.
        let old = [
            KIND_BATCH, 1, 2, 0, 1, 7, 0, 0, 0, 0, 0, 0, 0, 1, 20, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f,
        ];
        let mut scratch = Vec::new();
        let got = decode_batch(&old, &mut scratch).unwrap();
        assert_eq!(got[0].rows, vec![(7, 10, 1.5)]);
        assert!(got[0].histograms.is_empty());
    }

    fn uvarint_len(x: usize) -> usize {
        let mut v = Vec::new();
        put_uvarint(&mut v, x as u64);
        v.len()
    }

    proptest! {
        #[test]
        fn record_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_batch(&bytes, &mut Vec::new());
            let mut compressed = vec![KIND_ZSTD];
            put_uvarint(&mut compressed, bytes.len() as u64);
            compressed.extend_from_slice(&zstd::bulk::compress(&bytes, 1).unwrap());
            let _ = decode_batch(&compressed, &mut Vec::new());
        }

        #[test]
        fn record_round_trips(series in proptest::collection::vec((any::<u64>(), proptest::collection::vec((any::<i64>(), any::<u64>()), 0..20)), 0..8)) {
            let cols: Vec<(u64, Vec<i64>, Vec<f64>)> = series
                .iter()
                .map(|(id, s)| (*id, s.iter().map(|p| p.0).collect(), s.iter().map(|p| f64::from_bits(p.1)).collect()))
                .collect();
            let rows: Vec<SeriesRows> = cols.iter().map(|(id, ts, vs)| SeriesRows { id: *id, ts, vs }).collect();
            let mut buf = Vec::new();
            encode_batch(&mut buf, &[DayBatch { day: Day(-3), new_series: &[], rows, histograms: &[] }], false);
            let mut scratch = Vec::new();
            let got = decode_batch(&buf, &mut scratch).unwrap();
            let want: Vec<(u64, i64, u64)> = cols
                .iter()
                .flat_map(|(id, ts, vs)| ts.iter().zip(vs).map(move |(&t, v)| (*id, t, v.to_bits())))
                .collect();
            let have: Vec<(u64, i64, u64)> = got[0].rows.iter().map(|&(id, t, v)| (id, t, v.to_bits())).collect();
            prop_assert_eq!(have, want);
        }
    }
}
