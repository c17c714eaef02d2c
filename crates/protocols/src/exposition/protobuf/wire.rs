//! The outer two levels of a `MetricFamily` read in place: names, help,
//! unit and label pairs borrow the body instead of being copied into
//! strings, which is where decoding a scrape spent its time. The small
//! value messages (counter, gauge, summary, histogram, ...) are decoded by
//! prost, merged as protobuf merges repeated occurrences.

use prost::Message;

use crate::exposition::proto;

/// One protobuf wire field: its number and payload.
enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    /// Fixed-width payloads, read by no field here.
    Other,
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Self { b, i: 0 }
    }

    fn done(&self) -> bool {
        self.i >= self.b.len()
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in 0..10 {
            let Some(&byte) = self.b.get(self.i) else {
                return Err("unexpected end of message in a varint".into());
            };
            self.i += 1;
            value |= u64::from(byte & 0x7f) << (7 * shift);
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err("invalid varint".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .i
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or("field runs past its message")?;
        let out = self.b.get(self.i..end).ok_or("field runs past its message")?;
        self.i = end;
        Ok(out)
    }

    fn field(&mut self) -> Result<(u32, Field<'a>), String> {
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| "invalid field number")?;
        if number == 0 {
            return Err("illegal tag 0".into());
        }
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Field::Other
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "invalid length")?;
                Field::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Field::Other
            }
            wire => return Err(format!("unsupported wire type {wire}")),
        };
        Ok((number, field))
    }
}

fn text<'a>(field: Field<'a>, what: &str) -> Result<&'a str, String> {
    match field {
        Field::Bytes(b) => std::str::from_utf8(b).map_err(|_| format!("invalid UTF-8 {what}")),
        _ => Err(format!("invalid wire type for {what}")),
    }
}

fn message<'a>(field: Field<'a>, what: &str) -> Result<&'a [u8], String> {
    match field {
        Field::Bytes(b) => Ok(b),
        _ => Err(format!("invalid wire type for {what}")),
    }
}

fn varint(field: Field<'_>, what: &str) -> Result<u64, String> {
    match field {
        Field::Varint(v) => Ok(v),
        _ => Err(format!("invalid wire type for {what}")),
    }
}

/// A `MetricFamily` with its metrics still encoded.
#[derive(Default)]
pub(super) struct Family<'a> {
    pub(super) name: &'a str,
    pub(super) help: &'a str,
    pub(super) unit: &'a str,
    pub(super) kind: i32,
}

/// Reads a family's own fields; its metrics' encodings go to `metrics`.
pub(super) fn family<'a>(b: &'a [u8], metrics: &mut Vec<&'a [u8]>) -> Result<Family<'a>, String> {
    metrics.clear();
    let mut out = Family::default();
    let mut r = Reader::new(b);
    while !r.done() {
        match r.field()? {
            (1, f) => out.name = text(f, "metric family name")?,
            (2, f) => out.help = text(f, "help")?,
            (3, f) => out.kind = varint(f, "metric type")? as i32,
            (4, f) => metrics.push(message(f, "metric")?),
            (5, f) => out.unit = text(f, "unit")?,
            _ => {}
        }
    }
    Ok(out)
}

/// A `Metric`: borrowed labels, decoded values.
#[derive(Default)]
pub(super) struct Metric {
    pub(super) gauge: Option<proto::Gauge>,
    pub(super) counter: Option<proto::Counter>,
    pub(super) summary: Option<proto::Summary>,
    pub(super) untyped: Option<proto::Untyped>,
    pub(super) histogram: Option<proto::Histogram>,
    pub(super) timestamp_ms: i64,
}

fn merge<M: Message + Default>(slot: &mut Option<M>, b: &[u8], what: &str) -> Result<(), String> {
    slot.get_or_insert_with(M::default)
        .merge(b)
        .map_err(|e| format!("decoding {what}: {e}"))
}

/// Reads a metric; its label pairs go to `labels`.
pub(super) fn metric<'a>(b: &'a [u8], labels: &mut Vec<(&'a str, &'a str)>) -> Result<Metric, String> {
    labels.clear();
    let mut out = Metric::default();
    let mut r = Reader::new(b);
    while !r.done() {
        match r.field()? {
            (1, f) => labels.push(label_pair(message(f, "label pair")?)?),
            (2, f) => merge(&mut out.gauge, message(f, "gauge")?, "gauge")?,
            (3, f) => merge(&mut out.counter, message(f, "counter")?, "counter")?,
            (4, f) => merge(&mut out.summary, message(f, "summary")?, "summary")?,
            (5, f) => merge(&mut out.untyped, message(f, "untyped")?, "untyped")?,
            (6, f) => out.timestamp_ms = varint(f, "timestamp")? as i64,
            (7, f) => merge(&mut out.histogram, message(f, "histogram")?, "histogram")?,
            _ => {}
        }
    }
    Ok(out)
}

fn label_pair(b: &[u8]) -> Result<(&str, &str), String> {
    let (mut name, mut value) = ("", "");
    let mut r = Reader::new(b);
    while !r.done() {
        match r.field()? {
            (1, f) => name = text(f, "label name")?,
            (2, f) => value = text(f, "label value")?,
            _ => {}
        }
    }
    Ok((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::proto::{LabelPair, MetricFamily};

    #[test]
    fn reads_what_prost_writes_and_merges_repeats() {
        let m = proto::Metric {
            label: vec![LabelPair {
                name: "a".into(),
                value: "é".into(),
            }],
            gauge: Some(proto::Gauge { value: 2.5 }),
            timestamp_ms: -7,
            ..proto::Metric::default()
        };
        let f = MetricFamily {
            name: "x".into(),
            help: "h".into(),
            r#type: 1,
            metric: vec![m.clone(), m],
            unit: "u".into(),
        };
        let bytes = f.encode_to_vec();
        let mut metrics = Vec::new();
        let fam = family(&bytes, &mut metrics).unwrap();
        assert_eq!(
            (fam.name, fam.help, fam.unit, fam.kind, metrics.len()),
            ("x", "h", "u", 1, 2)
        );
        let mut labels = Vec::new();
        let m = metric(metrics[0], &mut labels).unwrap();
        assert_eq!(labels, [("a", "é")]);
        assert_eq!((m.gauge, m.timestamp_ms), (Some(proto::Gauge { value: 2.5 }), -7));

        // Two counter fields merge: the second's value, the first's exemplar.
        let first = proto::Metric {
            counter: Some(proto::Counter {
                value: 1.0,
                exemplar: Some(proto::Exemplar::default()),
                start_timestamp: None,
            }),
            ..proto::Metric::default()
        }
        .encode_to_vec();
        let second = proto::Metric {
            counter: Some(proto::Counter {
                value: 3.0,
                ..proto::Counter::default()
            }),
            ..proto::Metric::default()
        }
        .encode_to_vec();
        let both = [first, second].concat();
        let m = metric(&both, &mut labels).unwrap();
        let c = m.counter.unwrap();
        assert_eq!((c.value, c.exemplar.is_some()), (3.0, true));
    }

    #[test]
    fn malformed_fields_fail() {
        let mut metrics = Vec::new();
        for bad in [
            &[0x0a, 0x05, b'a'][..],
            &[0x0a, 0x01, 0xff],
            &[0x08],
            &[0x00, 0x01],
            &[0x0b],
            &[0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            &[0x0d, 0x00],
        ] {
            assert!(family(bad, &mut metrics).is_err(), "{bad:?}");
        }
        assert!(family(&[0x08, 0x01], &mut metrics).is_err());
        let mut labels = Vec::new();
        assert!(metric(&[0x12, 0x02, 0x09, 0x00], &mut labels).is_err());
    }
}
