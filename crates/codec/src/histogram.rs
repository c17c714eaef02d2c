//! Native histogram blocks: one series' histogram samples, after the idea of
//! Prometheus' histogram chunks (its layout is not copied).
//!
//! A histogram's bucket layout (schema, zero threshold, custom bounds and the
//! indices of its populated buckets) rarely changes between consecutive samples
//! of a series, and its counts grow by small steps. So a block writes the
//! layout once and again only when it changes, and each count against the
//! previous sample's: when every count of the block is integral, the change
//! of its change as a zig-zag integer (near zero for a steady counter), else
//! the XOR of the two floats. Timestamps are
//! delta-of-deltas. Byte layout in the crate's README.md.

use std::sync::Arc;

use crate::Error;
use crate::bits::{BitReader, BitWriter};
use crate::cursor::Cursor;
use crate::varint::{put_uvarint, zigzag_decode, zigzag_encode};

/// One native histogram as a block stores it: the fields of Prometheus'
/// float histogram, buckets as `(index, count)` by increasing index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistogramValue {
    pub schema: i32,
    /// 0 unknown, 1 reset, 2 not a reset, 3 gauge (2 bits are stored).
    pub reset_hint: u8,
    pub count: f64,
    pub sum: f64,
    pub zero_threshold: f64,
    pub zero_count: f64,
    pub positive: Vec<(i32, f64)>,
    pub negative: Vec<(i32, f64)>,
    /// Upper bounds of custom buckets (schema -53); shared by every sample
    /// of a decoded block that had the same bounds.
    pub custom_bounds: Option<Arc<[f64]>>,
}

/// Tag byte: counts coded as zig-zag integer deltas.
const INTEGER_COUNTS: u8 = 1;
/// Tag byte: counts coded as XORs of their float bits.
const FLOAT_COUNTS: u8 = 2;

/// Largest magnitude a count may have to be coded as an integer: every
/// integer up to it is an exact f64, and a delta of two never overflows.
const MAX_EXACT_INT: f64 = 9_007_199_254_740_992.0; // 2^53

/// Data bits of the signed variable-width code, by the number of one bits
/// before its zero (five ones: no zero, the widest).
const VARBIT_WIDTHS: [u32; 6] = [0, 4, 8, 16, 32, 64];

/// Appends a block of the histogram samples `ts[i]`, `hs[i]`. Any values
/// round-trip bit-exactly.
///
/// # Panics
///
/// If `ts` and `hs` differ in length (a bug of the caller).
pub fn encode_histograms(dst: &mut Vec<u8>, ts: &[i64], hs: &[HistogramValue]) {
    assert_eq!(ts.len(), hs.len(), "BUG: one timestamp per histogram");
    let integer = hs.iter().all(has_integer_counts);
    dst.push(if integer { INTEGER_COUNTS } else { FLOAT_COUNTS });
    put_uvarint(dst, hs.len() as u64);
    let mut w = BitWriter::new(dst);
    let mut prev: Option<&HistogramValue> = None;
    let mut counts = Counts::default();
    let (mut prev_t, mut prev_delta) = (0i64, 0i64);
    for (i, (&t, h)) in ts.iter().zip(hs).enumerate() {
        match i {
            0 => w.write(t as u64, 64),
            1 => {
                prev_delta = t.wrapping_sub(prev_t);
                write_varbit(&mut w, prev_delta);
            }
            _ => {
                let delta = t.wrapping_sub(prev_t);
                write_varbit(&mut w, delta.wrapping_sub(prev_delta));
                prev_delta = delta;
            }
        }
        prev_t = t;
        w.write(u64::from(h.reset_hint & 3), 2);
        let same_layout = prev.is_some_and(|p| same_layout(p, h));
        if prev.is_some() {
            w.write_bit(!same_layout);
        }
        if !same_layout {
            write_layout(&mut w, prev, h);
        }
        counts.start_sample(same_layout, h);
        let state = counts.values.iter_mut().zip(counts.deltas.iter_mut());
        for (now, (value, delta)) in counts_of(h).zip(state) {
            if integer {
                let change = (now as i64).wrapping_sub(*value as i64);
                write_varbit(&mut w, change.wrapping_sub(*delta));
                *delta = change;
            } else {
                write_xor(&mut w, value.to_bits() ^ now.to_bits());
            }
            *value = now;
        }
        write_xor(&mut w, prev.map_or(0, |p| p.sum.to_bits()) ^ h.sum.to_bits());
        prev = Some(h);
    }
    w.finish();
}

/// Decodes one block, appending its timestamps to `ts` and histograms to
/// `out` (nothing on error), and returns the input after it.
pub fn decode_histograms<'a>(
    src: &'a [u8],
    ts: &mut Vec<i64>,
    out: &mut Vec<HistogramValue>,
) -> Result<&'a [u8], Error> {
    let mut cur = Cursor::new(src);
    let integer = match cur.u8("histogram block tag")? {
        INTEGER_COUNTS => true,
        FLOAT_COUNTS => false,
        tag => {
            return Err(Error::UnknownTag {
                what: "histogram block",
                tag,
            });
        }
    };
    // Every sample takes more than one bit.
    let n = cur.count("histogram count", cur.remaining().saturating_mul(8))?;
    let base = cur.offset();
    let mut r = BitReader::new(cur.rest(), base);
    let (mut new_ts, mut new_hs): (Vec<i64>, Vec<HistogramValue>) = (Vec::new(), Vec::new());
    let mut counts = Counts::default();
    let (mut prev_t, mut prev_delta) = (0i64, 0i64);
    for i in 0..n {
        let t = match i {
            0 => r.read(64)? as i64,
            1 => {
                prev_delta = read_varbit(&mut r)?;
                prev_t.wrapping_add(prev_delta)
            }
            _ => {
                prev_delta = prev_delta.wrapping_add(read_varbit(&mut r)?);
                prev_t.wrapping_add(prev_delta)
            }
        };
        prev_t = t;
        let reset_hint = r.read(2)? as u8;
        let prev = new_hs.last();
        let same_layout = prev.is_some() && !r.read_bit()?;
        let mut h = match prev {
            Some(p) if same_layout => p.clone(),
            _ => read_layout(&mut r, prev)?,
        };
        h.reset_hint = reset_hint;
        counts.start_sample(same_layout, &h);
        for (value, delta) in counts.values.iter_mut().zip(counts.deltas.iter_mut()) {
            *value = if integer {
                *delta = delta.wrapping_add(read_varbit(&mut r)?);
                (*value as i64).wrapping_add(*delta) as f64
            } else {
                f64::from_bits(value.to_bits() ^ read_xor(&mut r)?)
            };
        }
        let mut values = counts.values.iter().copied();
        h.count = values.next().unwrap_or_default();
        h.zero_count = values.next().unwrap_or_default();
        for b in h.positive.iter_mut().chain(h.negative.iter_mut()) {
            b.1 = values.next().unwrap_or_default();
        }
        h.sum = f64::from_bits(prev.map_or(0, |p| p.sum.to_bits()) ^ read_xor(&mut r)?);
        new_ts.push(t);
        new_hs.push(h);
    }
    cur.advance(r.bytes_consumed());
    ts.extend(new_ts);
    out.extend(new_hs);
    Ok(cur.rest())
}

/// The counts of a histogram in block order: count, zero count, positive
/// then negative buckets.
fn counts_of(h: &HistogramValue) -> impl Iterator<Item = f64> + '_ {
    [h.count, h.zero_count]
        .into_iter()
        .chain(h.positive.iter().chain(&h.negative).map(|b| b.1))
}

/// The previous sample's counts (in [`counts_of`] order) and, for integer
/// blocks, their changes from the sample before: each count is coded as the
/// change of its change, near zero for a counter growing at a steady rate.
#[derive(Default)]
struct Counts {
    values: Vec<f64>,
    deltas: Vec<i64>,
}

impl Counts {
    /// Readies the state for a sample of layout `h`. The count and zero count
    /// always continue; buckets only under the same layout, else they start
    /// from zero.
    fn start_sample(&mut self, same_layout: bool, h: &HistogramValue) {
        let len = 2 + h.positive.len() + h.negative.len();
        if !same_layout {
            self.values.truncate(2);
            self.deltas.truncate(2);
        }
        self.values.resize(len, 0.0);
        self.deltas.resize(len, 0);
    }
}

/// Whether every count is an integer an f64 holds exactly (not -0.0, whose
/// sign an integer would lose).
fn has_integer_counts(h: &HistogramValue) -> bool {
    let integral = |v: f64| v.trunc() == v && v.abs() <= MAX_EXACT_INT && !(v == 0.0 && v.is_sign_negative());
    integral(h.count) && integral(h.zero_count) && h.positive.iter().chain(&h.negative).all(|b| integral(b.1))
}

fn same_layout(a: &HistogramValue, b: &HistogramValue) -> bool {
    let indices = |x: &[(i32, f64)], y: &[(i32, f64)]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.0 == q.0);
    a.schema == b.schema
        && a.zero_threshold.to_bits() == b.zero_threshold.to_bits()
        && same_bounds(a.custom_bounds.as_deref(), b.custom_bounds.as_deref())
        && indices(&a.positive, &b.positive)
        && indices(&a.negative, &b.negative)
}

fn same_bounds(a: Option<&[f64]>, b: Option<&[f64]>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
        _ => false,
    }
}

/// Schema, zero threshold, custom bounds (only when they differ from the
/// previous layout's) and the bucket indices of both sides.
fn write_layout(w: &mut BitWriter<'_>, prev: Option<&HistogramValue>, h: &HistogramValue) {
    write_varbit(w, i64::from(h.schema));
    w.write(h.zero_threshold.to_bits(), 64);
    match &h.custom_bounds {
        None => w.write_bit(false),
        Some(bounds) => {
            w.write_bit(true);
            let repeated = prev.is_some_and(|p| same_bounds(p.custom_bounds.as_deref(), Some(bounds)));
            w.write_bit(repeated);
            if !repeated {
                write_varbit(w, bounds.len() as i64);
                for b in bounds.iter() {
                    w.write(b.to_bits(), 64);
                }
            }
        }
    }
    for side in [&h.positive, &h.negative] {
        write_varbit(w, side.len() as i64);
        let mut last: Option<i32> = None;
        for &(index, _) in side {
            match last {
                None => write_varbit(w, i64::from(index)),
                // Indices increase, so the gap minus one is never negative.
                Some(l) => write_varbit(w, i64::from(index) - i64::from(l) - 1),
            }
            last = Some(index);
        }
    }
}

/// A layout as [`write_layout`] wrote it, counts zero.
fn read_layout(r: &mut BitReader<'_>, prev: Option<&HistogramValue>) -> Result<HistogramValue, Error> {
    let corrupt = |what, r: &BitReader<'_>| Error::Corrupt {
        what,
        offset: r.bytes_consumed(),
    };
    let schema = i32::try_from(read_varbit(r)?).map_err(|_| corrupt("histogram schema", r))?;
    let zero_threshold = f64::from_bits(r.read(64)?);
    let custom_bounds = if r.read_bit()? {
        if r.read_bit()? {
            Some(
                prev.and_then(|p| p.custom_bounds.clone())
                    .ok_or_else(|| corrupt("histogram bounds repeated without earlier ones", r))?,
            )
        } else {
            let len = read_len(r, 64)?;
            let mut bounds = Vec::with_capacity(len);
            for _ in 0..len {
                bounds.push(f64::from_bits(r.read(64)?));
            }
            Some(Arc::from(bounds))
        }
    } else {
        None
    };
    let mut sides = [Vec::new(), Vec::new()];
    for side in &mut sides {
        // Each bucket takes at least a bit of index and one of count.
        let len = read_len(r, 2)?;
        side.reserve(len);
        let mut last: Option<i64> = None;
        for _ in 0..len {
            let v = read_varbit(r)?;
            let index = match last {
                None => v,
                Some(l) if v >= 0 => l.saturating_add(v).saturating_add(1),
                Some(_) => return Err(corrupt("histogram bucket gap", r)),
            };
            let index32 = i32::try_from(index).map_err(|_| corrupt("histogram bucket index", r))?;
            side.push((index32, 0.0));
            last = Some(index);
        }
    }
    let [positive, negative] = sides;
    Ok(HistogramValue {
        schema,
        zero_threshold,
        custom_bounds,
        positive,
        negative,
        ..HistogramValue::default()
    })
}

/// A length written by [`write_varbit`], refused when the rest of the
/// stream could not hold that many items of at least `bits_each` bits.
fn read_len(r: &mut BitReader<'_>, bits_each: usize) -> Result<usize, Error> {
    let len = read_varbit(r)?;
    usize::try_from(len)
        .ok()
        .filter(|&len| len.saturating_mul(bits_each) <= r.bits_left())
        .ok_or(Error::Corrupt {
            what: "histogram length beyond input",
            offset: r.bytes_consumed(),
        })
}

/// A signed integer, zig-zag mapped, as a unary width class (see
/// [`VARBIT_WIDTHS`]) and that many bits: zero costs one bit, small steps
/// of a counter six.
fn write_varbit(w: &mut BitWriter<'_>, v: i64) {
    let z = zigzag_encode(v);
    let class = VARBIT_WIDTHS
        .iter()
        .position(|&width| width == 64 || z < (1u64 << width))
        .unwrap_or(VARBIT_WIDTHS.len() - 1);
    let ones = class as u32;
    w.write(u64::MAX, ones);
    if class < VARBIT_WIDTHS.len() - 1 {
        w.write_bit(false);
    }
    w.write(z, VARBIT_WIDTHS.get(class).copied().unwrap_or(64));
}

fn read_varbit(r: &mut BitReader<'_>) -> Result<i64, Error> {
    let max = (VARBIT_WIDTHS.len() - 1) as u32;
    let ones = r.read_ones(max)?;
    let width = VARBIT_WIDTHS.get(ones as usize).copied().unwrap_or(64);
    Ok(zigzag_decode(if width == 0 { 0 } else { r.read(width)? }))
}

/// The XOR of two floats' bits: `0` when zero, else `1`, 6 bits of leading
/// zeros, 6 bits of significant-bit count (0 meaning 64) and those bits.
fn write_xor(w: &mut BitWriter<'_>, xor: u64) {
    if xor == 0 {
        w.write_bit(false);
        return;
    }
    let leading = xor.leading_zeros();
    let trailing = xor.trailing_zeros();
    let significant = 64 - leading - trailing;
    w.write_bit(true);
    w.write(u64::from(leading), 6);
    w.write(u64::from(significant % 64), 6);
    w.write(xor >> trailing, significant);
}

fn read_xor(r: &mut BitReader<'_>) -> Result<u64, Error> {
    if !r.read_bit()? {
        return Ok(0);
    }
    let leading = r.read(6)? as u32;
    let significant = match r.read(6)? as u32 {
        0 => 64,
        n => n,
    };
    if leading + significant > 64 {
        return Err(Error::Corrupt {
            what: "histogram xor width",
            offset: r.bytes_consumed(),
        });
    }
    Ok(r.read(significant)? << (64 - leading - significant))
}

#[cfg(test)]
mod tests;
