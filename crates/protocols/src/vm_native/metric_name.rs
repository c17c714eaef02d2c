//! VictoriaMetrics' marshalled metric name: the metric name, then each
//! label's name and value, every field ended by byte 1, with bytes 0, 1 and
//! 2 inside a field escaped as 0 followed by `'0'`, `'1'` or `'2'`.

use cairn_model::{Label, Labels};

use super::NativeError;

const ESCAPE: u8 = 0;
const END: u8 = 1;
const KV_SEPARATOR: u8 = 2;

/// Appends the marshalled name of `labels`.
pub(crate) fn encode(dst: &mut Vec<u8>, labels: &Labels) {
    put_field(dst, labels.get("__name__").unwrap_or_default().as_bytes());
    for l in labels.iter().filter(|l| l.name != "__name__") {
        put_field(dst, l.name.as_bytes());
        put_field(dst, l.value.as_bytes());
    }
}

fn put_field(dst: &mut Vec<u8>, field: &[u8]) {
    for &b in field {
        match b {
            ESCAPE => dst.extend_from_slice(&[ESCAPE, b'0']),
            END => dst.extend_from_slice(&[ESCAPE, b'1']),
            KV_SEPARATOR => dst.extend_from_slice(&[ESCAPE, b'2']),
            _ => dst.push(b),
        }
    }
    dst.push(END);
}

/// The labels of a marshalled name, as sent: the metric name (when not
/// empty) as `__name__`, then the labels in their order.
pub(crate) fn decode(mut src: &[u8]) -> Result<Vec<Label>, NativeError> {
    let mut labels = Vec::new();
    let name = take_field(&mut src)?;
    if !name.is_empty() {
        labels.push(Label::new("__name__", name));
    }
    while !src.is_empty() {
        let name = take_field(&mut src)?;
        let value = take_field(&mut src).map_err(|e| NativeError::corrupt(format!("label {name:?}: {e}")))?;
        labels.push(Label::new(name, value));
    }
    Ok(labels)
}

fn take_field(src: &mut &[u8]) -> Result<String, NativeError> {
    let end = memchr::memchr(END, src).ok_or_else(|| NativeError::corrupt("a metric name field has no end"))?;
    let (raw, rest) = src.split_at(end);
    *src = rest.get(1..).unwrap_or_default();
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.iter();
    while let Some(&b) = bytes.next() {
        if b != ESCAPE {
            out.push(b);
            continue;
        }
        out.push(match bytes.next() {
            Some(b'0') => ESCAPE,
            Some(b'1') => END,
            Some(b'2') => KV_SEPARATOR,
            Some(other) => {
                return Err(NativeError::corrupt(format!(
                    "unknown escape {other:#04x} in a metric name"
                )));
            }
            None => return Err(NativeError::corrupt("a metric name field ends inside an escape")),
        });
    }
    String::from_utf8(out).map_err(|_| NativeError::corrupt("a metric name field is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_and_escapes() {
        let labels = Labels::from_pairs([("__name__", "up"), ("job", "a\u{1}b"), ("x", "\u{0}\u{2}")]);
        let mut buf = Vec::new();
        encode(&mut buf, &labels);
        assert_eq!(buf, b"up\x01job\x01a\x001b\x01x\x01\x000\x002\x01");
        assert_eq!(decode(&buf).unwrap(), labels.iter().cloned().collect::<Vec<_>>());
    }

    #[test]
    fn a_name_without_metric_name() {
        let mut buf = Vec::new();
        encode(&mut buf, &Labels::from_pairs([("job", "a")]));
        assert_eq!(buf, b"\x01job\x01a\x01");
        assert_eq!(decode(&buf).unwrap(), vec![Label::new("job", "a")]);
    }

    #[test]
    fn corrupt_names_are_errors() {
        for bad in [
            &b"up"[..],
            b"up\x01job",
            b"up\x01job\x01a",
            b"u\x00",
            b"u\x009\x01",
            b"\xff\x01",
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn names_round_trip(pairs in proptest::collection::btree_map("[a-z_][a-z0-9_]{0,8}", "\\PC{1,8}|[\\x00-\\x03]{1,3}", 0..6)) {
            let labels = Labels::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let mut buf = Vec::new();
            encode(&mut buf, &labels);
            let back = Labels::new(decode(&buf).unwrap()).unwrap();
            prop_assert_eq!(back, labels);
        }

        #[test]
        fn decode_never_panics(src in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&src);
        }
    }
}
