//! VictoriaMetrics' native format, as `/api/v1/export/native` writes it and
//! `/api/v1/import/native` reads it (`vmctl vm-native` moves data with the
//! pair). docs/format/vm-native.md describes the bytes.
//!
//! A stream is a time range (two zigzag big-endian `i64`, milliseconds),
//! then blocks until the end: each is a marshalled metric name and a
//! portable block, each preceded by its length as a big-endian `u32`. A
//! portable block holds up to 16 Ki samples of one series: timestamps and
//! decimal value mantissas ([`decimal`]), each sequence encoded as
//! [`ints`] describes. A reader keeps only the samples inside the time range.
//!
//! What the format cannot hold: NaNs other than the staleness marker (which
//! VictoriaMetrics drops at ingestion too) and native histograms. Values are
//! written exactly wherever a decimal mantissa can hold them (every float
//! read from VictoriaMetrics can), else with VictoriaMetrics' own rounding
//! to about twelve significant digits ([`decimal`]).

mod decimal;
mod ints;
mod metric_name;

use std::io::{self, Read};

use cairn_codec::varint::{get_uvarint, get_varint, put_uvarint, put_varint};
use cairn_model::{Label, Labels, Sample};

/// Samples per block written, as VictoriaMetrics cuts its blocks.
pub const ROWS_PER_BLOCK: usize = 8 * 1024;
/// Samples per block accepted: VictoriaMetrics' own bound.
const MAX_ROWS_PER_BLOCK: u64 = 2 * ROWS_PER_BLOCK as u64;
/// Largest metric name or block accepted, as VictoriaMetrics bounds them.
const MAX_FRAME_BYTES: u32 = 1 << 20;
/// Lossless: the writer never drops low bits of deltas.
const PRECISION_BITS: u8 = 64;

/// Why a native stream could not be read.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("invalid native data: {0}")]
    Corrupt(String),
    #[error("cannot read native data: {0}")]
    Read(#[from] io::Error),
}

impl NativeError {
    pub(crate) fn corrupt(why: impl Into<String>) -> Self {
        Self::Corrupt(why.into())
    }
}

/// One block read: a series as sent (labels unchecked) and its samples in
/// the stream's time range, perhaps none.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeBlock {
    pub labels: Vec<Label>,
    pub samples: Vec<Sample>,
}

/// Reads a native stream block by block, holding one block at a time.
pub struct NativeReader<R> {
    input: R,
    min_t: i64,
    max_t: i64,
    frame: Vec<u8>,
    timestamps: Vec<i64>,
    mantissas: Vec<i64>,
    floats: Vec<f64>,
    scratch: ints::Scratch,
}

impl<R: Read> NativeReader<R> {
    /// Reads the stream's time range.
    pub fn new(mut input: R) -> Result<Self, NativeError> {
        let mut header = [0u8; 16];
        input
            .read_exact(&mut header)
            .map_err(|e| NativeError::corrupt(format!("cannot read the time range: {e}")))?;
        let [min_t, max_t] = [&header[..8], &header[8..]].map(|b| {
            let u = u64::from_be_bytes(b.try_into().unwrap_or_default());
            cairn_codec::varint::zigzag_decode(u)
        });
        Ok(Self {
            input,
            min_t,
            max_t,
            frame: Vec::new(),
            timestamps: Vec::new(),
            mantissas: Vec::new(),
            floats: Vec::new(),
            scratch: ints::Scratch::default(),
        })
    }

    /// The time range samples are kept in, both ends included.
    pub fn time_range(&self) -> (i64, i64) {
        (self.min_t, self.max_t)
    }

    /// The next block, or `None` at the end of the stream.
    pub fn next_block(&mut self) -> Result<Option<NativeBlock>, NativeError> {
        if !self.read_frame(true, "metric name")? {
            return Ok(None);
        }
        let labels = metric_name::decode(&self.frame)?;
        self.read_frame(false, "block")?;
        let samples = self.decode_block()?;
        Ok(Some(NativeBlock { labels, samples }))
    }

    /// Reads a length-prefixed frame into `self.frame`; `false` at a clean
    /// end of the stream where one may end.
    fn read_frame(&mut self, may_end: bool, what: &str) -> Result<bool, NativeError> {
        let mut size = [0u8; 4];
        let mut got = 0;
        while got < size.len() {
            match self.input.read(size.get_mut(got..).unwrap_or_default()) {
                Ok(0) if got == 0 && may_end => return Ok(false),
                Ok(0) => {
                    return Err(NativeError::corrupt(format!(
                        "the stream ends inside the size of a {what}"
                    )));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        let size = u32::from_be_bytes(size);
        if size > MAX_FRAME_BYTES {
            return Err(NativeError::corrupt(format!(
                "a {what} of {size} bytes is over the limit of {MAX_FRAME_BYTES}"
            )));
        }
        self.frame.resize(size as usize, 0);
        self.input.read_exact(&mut self.frame).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                NativeError::corrupt(format!("the stream ends inside a {what} of {size} bytes"))
            } else {
                e.into()
            }
        })?;
        Ok(true)
    }

    fn decode_block(&mut self) -> Result<Vec<Sample>, NativeError> {
        let mut src = self.frame.as_slice();
        let mut varint = |what: &str| -> Result<i64, NativeError> {
            let (v, rest) = get_varint(src).map_err(|e| NativeError::corrupt(format!("block {what}: {e}")))?;
            src = rest;
            Ok(v)
        };
        let min_t = varint("first timestamp")?;
        let max_t = varint("last timestamp")?;
        let first_mantissa = varint("first value")?;
        let (rows, rest) = get_uvarint(src).map_err(|e| NativeError::corrupt(format!("block row count: {e}")))?;
        src = rest;
        if rows == 0 || rows > MAX_ROWS_PER_BLOCK {
            return Err(NativeError::corrupt(format!(
                "a block of {rows} samples; want 1 to {MAX_ROWS_PER_BLOCK}"
            )));
        }
        let (scale, rest) = get_varint(src).map_err(|e| NativeError::corrupt(format!("block scale: {e}")))?;
        src = rest;
        let scale =
            i16::try_from(scale).map_err(|_| NativeError::corrupt(format!("block scale {scale} is out of range")))?;
        let [t_encoding, v_encoding, precision_bits] = match src {
            [a, b, c, rest @ ..] => {
                src = rest;
                [*a, *b, *c]
            }
            _ => return Err(NativeError::corrupt("the block header is cut short")),
        };
        let t_encoding = ints::Encoding::from_byte(t_encoding)?;
        let v_encoding = ints::Encoding::from_byte(v_encoding)?;
        if !(1..=64).contains(&precision_bits) {
            return Err(NativeError::corrupt(format!(
                "precision of {precision_bits} bits; want 1 to 64"
            )));
        }
        let timestamps_data = take_bytes(&mut src, "timestamps")?;
        let values_data = take_bytes(&mut src, "values")?;
        if !src.is_empty() {
            return Err(NativeError::corrupt(format!("{} bytes after a block", src.len())));
        }
        let n = rows as usize;
        ints::decode(
            &mut self.timestamps,
            timestamps_data,
            t_encoding,
            min_t,
            n,
            &mut self.scratch,
        )?;
        if precision_bits < 64 {
            // Lossy deltas can leave timestamps slightly out of order.
            ensure_non_decreasing(&mut self.timestamps, min_t, max_t);
        } else if !self.timestamps.is_sorted() || self.timestamps.last() != Some(&max_t) {
            return Err(NativeError::corrupt(
                "block timestamps are out of order or disagree with its header",
            ));
        }
        ints::decode(
            &mut self.mantissas,
            values_data,
            v_encoding,
            first_mantissa,
            n,
            &mut self.scratch,
        )?;
        self.floats.clear();
        decimal::append_floats(&mut self.floats, &self.mantissas, scale);
        Ok(self
            .timestamps
            .iter()
            .zip(&self.floats)
            .filter(|&(&t, _)| (self.min_t..=self.max_t).contains(&t))
            .map(|(&t, &v)| Sample::new(t, v))
            .collect())
    }
}

fn take_bytes<'a>(src: &mut &'a [u8], what: &str) -> Result<&'a [u8], NativeError> {
    let (len, rest) = get_uvarint(src).map_err(|e| NativeError::corrupt(format!("size of block {what}: {e}")))?;
    let bytes = usize::try_from(len)
        .ok()
        .and_then(|len| rest.get(..len))
        .ok_or_else(|| NativeError::corrupt(format!("block {what} of {len} bytes run past the block")))?;
    *src = rest.get(bytes.len()..).unwrap_or_default();
    Ok(bytes)
}

/// Clamps timestamps decoded from lossy deltas into `[min, max]`, in order.
fn ensure_non_decreasing(ts: &mut [i64], min: i64, max: i64) {
    let Some(first) = ts.first_mut() else { return };
    *first = min;
    let mut prev = min;
    for t in ts.iter_mut() {
        if *t < prev {
            *t = prev;
        }
        prev = *t;
    }
    for t in ts.iter_mut().rev() {
        if *t <= max {
            break;
        }
        *t = max;
    }
    if let Some(last) = ts.last_mut() {
        *last = max;
    }
}

/// Appends a stream's time range; blocks follow it.
pub fn write_header(dst: &mut Vec<u8>, min_t: i64, max_t: i64) {
    for t in [min_t, max_t] {
        dst.extend_from_slice(&cairn_codec::varint::zigzag_encode(t).to_be_bytes());
    }
}

/// Appends one series' samples (timestamps in order) as blocks of up to
/// [`ROWS_PER_BLOCK`], leaving out NaNs other than staleness markers, which
/// the format cannot hold. Returns how many samples were left out.
pub fn write_series(dst: &mut Vec<u8>, labels: &Labels, timestamps: &[i64], values: &[f64]) -> usize {
    let mut name = Vec::new();
    metric_name::encode(&mut name, labels);
    let mut kept_t = Vec::with_capacity(timestamps.len().min(ROWS_PER_BLOCK));
    let mut kept_v = Vec::with_capacity(kept_t.capacity());
    let mut left_out = 0;
    for (&t, &v) in timestamps.iter().zip(values) {
        if v.is_nan() && !cairn_model::is_stale_nan(v) {
            left_out += 1;
            continue;
        }
        kept_t.push(t);
        kept_v.push(v);
        if kept_t.len() == ROWS_PER_BLOCK {
            write_blocks(dst, &name, &kept_t, &kept_v);
            kept_t.clear();
            kept_v.clear();
        }
    }
    if !kept_t.is_empty() {
        write_blocks(dst, &name, &kept_t, &kept_v);
    }
    left_out
}

/// Appends samples as one block when one decimal exponent holds every value
/// exactly, else as the blocks of each half; a lone value no exponent holds
/// exactly gets the decimal VictoriaMetrics would give it.
fn write_blocks(dst: &mut Vec<u8>, name: &[u8], timestamps: &[i64], values: &[f64]) {
    let mut mantissas = Vec::with_capacity(values.len());
    let scale = match decimal::append_exact_decimals(&mut mantissas, values) {
        Some(scale) => scale,
        None if values.len() > 1 => {
            let half = values.len() / 2;
            let (t1, t2) = timestamps.split_at(half);
            let (v1, v2) = values.split_at(half);
            write_blocks(dst, name, t1, v1);
            write_blocks(dst, name, t2, v2);
            return;
        }
        None => decimal::append_decimals(&mut mantissas, values),
    };
    let mut block = Vec::new();
    encode_block(&mut block, timestamps, &mantissas, scale);
    for frame in [name, &block] {
        dst.extend_from_slice(&(frame.len() as u32).to_be_bytes());
        dst.extend_from_slice(frame);
    }
}

/// One portable block of at least one sample.
fn encode_block(dst: &mut Vec<u8>, timestamps: &[i64], mantissas: &[i64], scale: i16) {
    let mut t_data = Vec::new();
    let (t_encoding, min_t) = ints::encode(&mut t_data, timestamps);
    let mut v_data = Vec::new();
    let (v_encoding, first_mantissa) = ints::encode(&mut v_data, mantissas);
    put_varint(dst, min_t);
    put_varint(dst, timestamps.last().copied().unwrap_or(min_t));
    put_varint(dst, first_mantissa);
    put_uvarint(dst, timestamps.len() as u64);
    put_varint(dst, i64::from(scale));
    dst.extend_from_slice(&[t_encoding as u8, v_encoding as u8, PRECISION_BITS]);
    for data in [&t_data, &v_data] {
        put_uvarint(dst, data.len() as u64);
        dst.extend_from_slice(data);
    }
}

#[cfg(test)]
mod tests;
