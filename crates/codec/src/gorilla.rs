//! Gorilla XOR float compression (Pelkonen et al., VLDB 2015), the layout Prometheus
//! chunks use: the general fallback for values with no decimal structure.
//!
//! Bit stream: the first value's 64 bits, then per value its XOR with the previous one:
//! `0` when equal; `10` + meaningful bits when they fit the previous window of leading
//! and trailing zeros; else `11` + 5 bits of leading zeros + 6 bits of meaningful-bit
//! count (0 meaning 64) + the meaningful bits, opening a new window.

use crate::Error;
use crate::bits::{BitReader, BitWriter};
use crate::cursor::Cursor;

/// Appends the bit stream for `vs`.
pub(crate) fn encode(dst: &mut Vec<u8>, vs: &[f64]) {
    let mut w = BitWriter::new(dst);
    let mut bits = vs.iter().map(|v| v.to_bits());
    let Some(first) = bits.next() else {
        w.finish();
        return;
    };
    w.write(first, 64);
    let mut prev = first;
    // (leading zeros, trailing zeros) of the current window.
    let mut window: Option<(u32, u32)> = None;
    for v in bits {
        let xor = v ^ prev;
        prev = v;
        if xor == 0 {
            w.write_bit(false);
            continue;
        }
        w.write_bit(true);
        let leading = xor.leading_zeros().min(31);
        let trailing = xor.trailing_zeros();
        match window {
            Some((wl, wt)) if leading >= wl && trailing >= wt => {
                w.write_bit(false);
                w.write(xor >> wt, 64 - wl - wt);
            }
            _ => {
                let significant = 64 - leading - trailing;
                w.write_bit(true);
                w.write(u64::from(leading), 5);
                // 64 does not fit in 6 bits; 0 is never a real count, so it stands in.
                w.write(u64::from(significant % 64), 6);
                w.write(xor >> trailing, significant);
                window = Some((leading, trailing));
            }
        }
    }
    w.finish();
}

/// Appends `count` values decoded from the bit stream at `cur`.
pub(crate) fn decode(cur: &mut Cursor<'_>, count: usize, out: &mut Vec<f64>) -> Result<(), Error> {
    if count == 0 {
        return Ok(());
    }
    // 64 bits for the first value, at least one for each other.
    if count - 1 > cur.remaining().saturating_mul(8).saturating_sub(64) {
        return Err(Error::Corrupt {
            what: "gorilla count beyond input",
            offset: cur.offset(),
        });
    }
    out.reserve(count);
    let mut r = BitReader::new(cur.rest(), cur.offset());
    let mut prev = r.read(64)?;
    out.push(f64::from_bits(prev));
    let mut window: Option<(u32, u32)> = None;
    for _ in 1..count {
        if r.read_bit()? {
            let (leading, significant) = if r.read_bit()? {
                let leading = r.read(5)? as u32;
                let significant = match r.read(6)? as u32 {
                    0 => 64,
                    n => n,
                };
                if leading + significant > 64 {
                    return Err(Error::Corrupt {
                        what: "gorilla window",
                        offset: cur.offset() + r.bytes_consumed(),
                    });
                }
                window = Some((leading, 64 - leading - significant));
                (leading, significant)
            } else {
                let (leading, trailing) = window.ok_or(Error::Corrupt {
                    what: "gorilla window reused before one was set",
                    offset: cur.offset() + r.bytes_consumed(),
                })?;
                (leading, 64 - leading - trailing)
            };
            let trailing = 64 - leading - significant;
            prev ^= r.read(significant)? << trailing;
        }
        out.push(f64::from_bits(prev));
    }
    cur.advance(r.bytes_consumed());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round-trips `vs` and returns the stream's size in bytes.
    fn check(vs: &[f64]) -> usize {
        let mut buf = Vec::new();
        encode(&mut buf, vs);
        let size = buf.len();
        buf.push(0xee);
        let mut cur = Cursor::new(&buf);
        let mut out = Vec::new();
        decode(&mut cur, vs.len(), &mut out).unwrap();
        let bits = |xs: &[f64]| xs.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(vs));
        assert_eq!(cur.rest(), [0xee]);
        size
    }

    #[test]
    fn repeats_cost_a_bit_and_changes_reuse_windows() {
        assert_eq!(check(&[]), 0);
        assert_eq!(check(&[1.5]), 8);
        assert_eq!(check(&[1.5; 17]), 8 + 2);
        // A full-width XOR needs the "64 as 0" significant-bit count.
        check(&[f64::from_bits(0), f64::from_bits(u64::MAX), f64::from_bits(1)]);
        check(&[0.0, -0.0, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE / 2.0, 0.1]);
    }

    #[test]
    fn a_window_reference_without_a_window_is_corrupt() {
        // First value 0, then `10`: reuse a window that was never opened.
        let mut buf = vec![0u8; 8];
        buf.push(0b1000_0000);
        let mut cur = Cursor::new(&buf);
        let err = decode(&mut cur, 2, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    }
}
