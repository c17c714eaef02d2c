//! Label sets in the form remote write 1.0 sends them: a `TimeSeries`'
//! repeated `Label` fields (field 1, each a message of `name` = 1 and
//! `value` = 2), canonical (names strictly ascending, no empty value).
//!
//! A forwarder that writes a scraped series straight in this form copies
//! it into each request as it is. Like [`crate::EncodedLabels`], a
//! [`WireLabels`] carries the proof that its bytes are canonical: it comes
//! from a [`WireLabelsWriter`] or is checked by [`WireLabels::new`].

use crate::{EncodedLabels, LabelError, LabelText, Labels};

/// The key of a length-delimited field 1 (a `TimeSeries`' `Label`, a
/// `Label`'s name).
const KEY_1_LEN: u8 = 0x0a;
/// The key of a length-delimited field 2 (a `Label`'s value).
const KEY_2_LEN: u8 = 0x12;

/// One canonical label set as remote write 1.0 `Label` fields.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireLabels<'a>(&'a [u8]);

impl<'a> WireLabels<'a> {
    /// Checks that `bytes` are the `Label` fields of one canonical label
    /// set, as [`WireLabelsWriter`] writes them.
    pub fn new(bytes: &'a [u8]) -> Result<Self, LabelError> {
        let mut previous: Option<&[u8]> = None;
        for pair in Pairs(bytes) {
            let (name, value) = pair?;
            std::str::from_utf8(name).map_err(|_| LabelError::Malformed)?;
            std::str::from_utf8(value).map_err(|_| LabelError::Malformed)?;
            if name.is_empty() || value.is_empty() || previous.is_some_and(|p| p >= name) {
                return Err(LabelError::Malformed);
            }
            previous = Some(name);
        }
        Ok(Self(bytes))
    }

    /// `labels` written at the end of `out`.
    pub fn of_labels(labels: &Labels, out: &'a mut Vec<u8>) -> Self {
        let pairs = labels
            .iter()
            .map(|l| (LabelText::from(&*l.name), LabelText::from(&*l.value)));
        Self::of_canonical(pairs, out)
    }

    /// The label set of a canonical encoding, written at the end of `out`.
    pub fn of_encoded(labels: EncodedLabels<'_>, out: &'a mut Vec<u8>) -> Self {
        Self::of_canonical(labels.text_pairs(), out)
    }

    /// Pairs in canonical order (a label set's), by where they come from.
    fn of_canonical<'x>(pairs: impl Iterator<Item = (LabelText<'x>, LabelText<'x>)>, out: &'a mut Vec<u8>) -> Self {
        let mut w = WireLabelsWriter::new(out);
        for (name, value) in pairs {
            w.push_text_in_order(name, value);
        }
        w.finish()
    }

    pub fn as_bytes(self) -> &'a [u8] {
        self.0
    }

    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }

    /// The `(name, value)` pairs in canonical order, as text.
    pub fn pairs(self) -> impl Iterator<Item = (&'a str, &'a str)> {
        // Canonical, so every pair reads and is UTF-8.
        let text = |b: &'a [u8]| std::str::from_utf8(b).unwrap_or_default();
        Pairs(self.0)
            .map_while(Result::ok)
            .map(move |(n, v)| (text(n), text(v)))
    }

    /// The labels, decoded (allocates).
    pub fn decode(self) -> Labels {
        Labels::from_pairs(self.pairs())
    }
}

impl std::fmt::Debug for WireLabels<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.decode().fmt(f)
    }
}

/// The pairs of `Label` fields, an error at the first that does not read.
struct Pairs<'a>(&'a [u8]);

impl<'a> Iterator for Pairs<'a> {
    type Item = Result<(&'a [u8], &'a [u8]), LabelError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let pair = field(self.0, KEY_1_LEN).and_then(|(label, rest)| {
            self.0 = rest;
            let (name, rest) = field(label, KEY_1_LEN)?;
            let (value, rest) = field(rest, KEY_2_LEN)?;
            rest.is_empty().then_some((name, value))
        });
        if pair.is_none() {
            self.0 = &[];
        }
        Some(pair.ok_or(LabelError::Malformed))
    }
}

/// The bytes of the length-delimited field `key` that `src` starts with,
/// and what follows it.
fn field(src: &[u8], key: u8) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = src.split_first()?;
    if first != key {
        return None;
    }
    let mut len = 0usize;
    for (i, &b) in rest.iter().enumerate().take(5) {
        len |= usize::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            let rest = rest.get(i + 1..)?;
            return (len <= rest.len()).then(|| rest.split_at(len));
        }
    }
    None
}

/// Writes one [`WireLabels`] from pairs given in canonical order (names
/// strictly ascending). Pairs with an empty value are left out, as
/// [`Labels`] leaves them out.
pub struct WireLabelsWriter<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    /// Where the last name written lies in `out`.
    last_name: Option<std::ops::Range<usize>>,
}

impl<'a> WireLabelsWriter<'a> {
    /// Starts a label set at the end of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        let start = out.len();
        Self {
            out,
            start,
            last_name: None,
        }
    }

    /// Appends a pair; refuses a name that is empty or not after the last one.
    pub fn push(&mut self, name: &str, value: &str) -> Result<(), LabelError> {
        self.push_text(name.into(), value.into())
    }

    /// [`Self::push`] for text already known to be UTF-8.
    pub fn push_text(&mut self, name: LabelText<'_>, value: LabelText<'_>) -> Result<(), LabelError> {
        if value.is_empty() {
            return Ok(());
        }
        if name.is_empty() {
            return Err(LabelError::EmptyName);
        }
        self.check_order(name)?;
        let (name, value) = (name.as_bytes(), value.as_bytes());
        let name_start = put_wire_label(name, value, self.out);
        self.last_name = Some(name_start..name_start + name.len());
        Ok(())
    }

    /// Appends a label written beforehand; refuses it as [`Self::push`] would.
    pub fn push_label(&mut self, label: &WireLabel) -> Result<(), LabelError> {
        if label.field.is_empty() {
            return Ok(());
        }
        self.check_order(label.name())?;
        self.put_label(label);
        Ok(())
    }

    /// [`Self::push_text`] for a caller whose names ascend strictly by
    /// construction (a merge of two canonical label sets), which is not
    /// checked again but in debug builds. Names must not be empty.
    pub fn push_text_in_order(&mut self, name: LabelText<'_>, value: LabelText<'_>) {
        if value.is_empty() {
            return;
        }
        debug_assert!(!name.is_empty() && self.check_order(name).is_ok());
        let name_start = put_wire_label(name.as_bytes(), value.as_bytes(), self.out);
        self.last_name = Some(name_start..name_start + name.as_bytes().len());
    }

    /// [`Self::push_label`] for a caller whose names ascend strictly by
    /// construction, as [`Self::push_text_in_order`].
    pub fn push_label_in_order(&mut self, label: &WireLabel) {
        if label.field.is_empty() {
            return;
        }
        debug_assert!(self.check_order(label.name()).is_ok());
        self.put_label(label);
    }

    fn put_label(&mut self, label: &WireLabel) {
        let name_start = self.out.len() + label.name.start;
        self.out.extend_from_slice(&label.field);
        self.last_name = Some(name_start..name_start + label.name.len());
    }

    /// Refuses a name not after the last one written.
    fn check_order(&self, name: LabelText<'_>) -> Result<(), LabelError> {
        let Some(last) = &self.last_name else {
            return Ok(());
        };
        let last = LabelText::from_bytes(self.out.get(last.clone()).unwrap_or_default());
        match last.cmp(&name) {
            std::cmp::Ordering::Less => Ok(()),
            std::cmp::Ordering::Equal => Err(LabelError::DuplicateName(
                String::from_utf8_lossy(name.as_bytes()).into_owned(),
            )),
            std::cmp::Ordering::Greater => Err(LabelError::Malformed),
        }
    }

    /// The label set written.
    pub fn finish(self) -> WireLabels<'a> {
        WireLabels(self.out.get(self.start..).unwrap_or_default())
    }
}

/// One label as its `Label` field, written once for the many label sets
/// it goes into (a target's labels, in every series scraped from it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireLabel {
    /// Empty when the value is.
    field: Vec<u8>,
    /// Where the name lies in `field`.
    name: std::ops::Range<usize>,
}

impl WireLabel {
    pub fn new(name: &str, value: &str) -> Self {
        let mut field = Vec::new();
        if value.is_empty() {
            return Self { field, name: 0..0 };
        }
        let start = put_wire_label(name.as_bytes(), value.as_bytes(), &mut field);
        Self {
            field,
            name: start..start + name.len(),
        }
    }

    pub fn name(&self) -> LabelText<'_> {
        LabelText::from_bytes(self.field.get(self.name.clone()).unwrap_or_default())
    }
}

/// [`WireLabels`] back to back, addressed by position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireLabelsBuf {
    bytes: Vec<u8>,
    /// Where each label set ends in `bytes`.
    ends: Vec<usize>,
}

impl WireLabelsBuf {
    /// Appends the label set `write` writes; returns its position. Nothing
    /// is kept of a label set `write` gives up on.
    pub fn push_with<E>(&mut self, write: impl FnOnce(&mut WireLabelsWriter<'_>) -> Result<(), E>) -> Result<usize, E> {
        let start = self.bytes.len();
        let mut w = WireLabelsWriter::new(&mut self.bytes);
        match write(&mut w) {
            Ok(()) => {
                self.ends.push(self.bytes.len());
                Ok(self.ends.len() - 1)
            }
            Err(e) => {
                self.bytes.truncate(start);
                Err(e)
            }
        }
    }

    /// Forgets every label set, keeping the room they took.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// The bytes of room held.
    pub fn capacity_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * std::mem::size_of::<usize>()
    }

    /// The label set at position `i`.
    pub fn get(&self, i: usize) -> Option<WireLabels<'_>> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        self.bytes.get(start..end).map(WireLabels)
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// Appends one `Label` field of remote write 1.0 (an empty name or value
/// is a field left out, as protobuf leaves it out); returns where the name
/// starts in `out`.
pub fn put_wire_label(name: &[u8], value: &[u8], out: &mut Vec<u8>) -> usize {
    let label_len = 4 + name.len() + value.len();
    match (
        u8::try_from(name.len()),
        u8::try_from(value.len()),
        u8::try_from(label_len),
    ) {
        // Nearly every label: one length byte each.
        (Ok(n @ 1..0x80), Ok(v @ 1..0x80), Ok(l @ 0..0x80)) => {
            out.reserve(label_len + 2);
            out.extend_from_slice(&[KEY_1_LEN, l, KEY_1_LEN, n]);
            let name_start = out.len();
            out.extend_from_slice(name);
            out.extend_from_slice(&[KEY_2_LEN, v]);
            out.extend_from_slice(value);
            name_start
        }
        _ => {
            out.push(KEY_1_LEN);
            put_varint(field_len(name.len()) + field_len(value.len()), out);
            let mut name_start = out.len();
            for (key, text) in [(KEY_1_LEN, name), (KEY_2_LEN, value)] {
                if !text.is_empty() {
                    out.push(key);
                    put_varint(text.len(), out);
                    if key == KEY_1_LEN {
                        name_start = out.len();
                    }
                    out.extend_from_slice(text);
                }
            }
            name_start
        }
    }
}

/// The encoded length of a length-delimited field of `len` bytes, none
/// when empty.
fn field_len(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let mut varint = 1;
    let mut v = len >> 7;
    while v > 0 {
        varint += 1;
        v >>= 7;
    }
    1 + varint + len
}

fn put_varint(mut v: usize, dst: &mut Vec<u8>) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn wire(labels: &Labels) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = WireLabelsWriter::new(&mut out);
        for l in labels {
            w.push(&l.name, &l.value).unwrap();
        }
        w.finish();
        out
    }

    #[test]
    fn a_label_set_is_written_as_remote_write_label_fields() {
        let labels = Labels::from_pairs([("__name__", "up"), ("job", "node")]);
        assert_eq!(
            wire(&labels),
            b"\x0a\x0e\x0a\x08__name__\x12\x02up\x0a\x0b\x0a\x03job\x12\x04node".to_vec()
        );
    }

    #[test]
    fn a_label_set_and_its_canonical_encoding_are_written_alike() {
        let labels = Labels::from_pairs([("__name__", "up"), ("job", "node"), ("zone", "ü")]);
        let shared = crate::SharedEncodedLabels::new(&labels);
        let (mut a, mut b) = (vec![7], Vec::new());
        let of_labels = WireLabels::of_labels(&labels, &mut a);
        assert_eq!(
            of_labels.as_bytes(),
            &wire(&labels)[..],
            "written after what `out` held"
        );
        assert_eq!(
            WireLabels::of_encoded(shared.get(), &mut b).as_bytes(),
            &wire(&labels)[..]
        );
        assert_eq!(a[0], 7);
    }

    #[test]
    fn the_writer_refuses_what_is_not_canonical_and_leaves_out_empty_values() {
        let mut out = Vec::new();
        let mut w = WireLabelsWriter::new(&mut out);
        w.push("a", "1").unwrap();
        w.push("b", "").unwrap();
        assert_eq!(w.push("a", "2"), Err(LabelError::DuplicateName("a".into())));
        assert_eq!(w.push("0", "2"), Err(LabelError::Malformed));
        assert_eq!(w.push("", "2"), Err(LabelError::EmptyName));
        assert_eq!(w.finish().decode(), Labels::from_pairs([("a", "1")]));
    }

    #[test]
    fn what_is_not_a_canonical_label_set_is_refused() {
        let ab = wire(&Labels::from_pairs([("a", "1"), ("b", "2")]));
        let mut ba = wire(&Labels::from_pairs([("b", "2")]));
        ba.extend(wire(&Labels::from_pairs([("a", "1")])));
        let mut dup = ab.clone();
        dup.extend(wire(&Labels::from_pairs([("b", "3")])));
        assert!(WireLabels::new(&ab).is_ok());
        assert!(WireLabels::new(&[]).is_ok());
        for bad in [
            &ba[..],
            &dup,
            &ab[..ab.len() - 1],
            &[0x0a, 0x02, 0x0a, 0x00],
            b"\x0a\x05\x0a\x01a\x12\x00",
        ] {
            assert_eq!(WireLabels::new(bad), Err(LabelError::Malformed), "{bad:?}");
        }
        let mut not_utf8 = wire(&Labels::from_pairs([("a", "xy")]));
        let last = not_utf8.len() - 1;
        not_utf8[last] = 0xff;
        assert_eq!(WireLabels::new(&not_utf8), Err(LabelError::Malformed));
    }

    #[test]
    fn a_buffer_keeps_what_was_written_whole_and_nothing_of_what_was_not() {
        let mut buf = WireLabelsBuf::default();
        assert_eq!(buf.push_with(|w| w.push("a", "1")), Ok(0));
        assert!(
            buf.push_with(|w| w.push("b", "2").and_then(|()| w.push("a", "1")))
                .is_err()
        );
        assert_eq!(buf.push_with(|w| w.push("c", "3")), Ok(1));
        let got: Vec<Labels> = (0..3).filter_map(|i| buf.get(i)).map(WireLabels::decode).collect();
        assert_eq!(
            got,
            [Labels::from_pairs([("a", "1")]), Labels::from_pairs([("c", "3")])]
        );
        assert_eq!(buf.len(), 2);
        buf.clear();
        assert!(buf.is_empty() && buf.get(0).is_none() && buf.capacity_bytes() > 0);
    }

    #[test]
    fn a_label_written_beforehand_is_written_as_pushed_and_refused_alike() {
        let (mut pushed, mut prewritten, mut in_order) = (Vec::new(), Vec::new(), Vec::new());
        let mut a = WireLabelsWriter::new(&mut pushed);
        let mut b = WireLabelsWriter::new(&mut prewritten);
        for (name, value) in [("a", "1"), ("b", ""), ("c", "3")] {
            a.push(name, value).unwrap();
            b.push_label(&WireLabel::new(name, value)).unwrap();
        }
        assert_eq!(
            b.push_label(&WireLabel::new("c", "4")),
            Err(LabelError::DuplicateName("c".into()))
        );
        assert_eq!(b.push_label(&WireLabel::new("b", "4")), Err(LabelError::Malformed));
        assert_eq!(a.finish(), b.finish());
        let mut c = WireLabelsWriter::new(&mut in_order);
        c.push_label_in_order(&WireLabel::new("a", "1"));
        c.push_text_in_order("b".into(), "".into());
        c.push_text_in_order("c".into(), "3".into());
        assert_eq!(c.finish().as_bytes(), &pushed[..]);
        assert_eq!(WireLabel::new("job", "x").name().as_bytes(), b"job");
    }

    proptest! {
        /// Whatever the lengths (one or more length bytes), what is written
        /// is checked, reads back, and is what prost would encode.
        #[test]
        fn written_labels_read_back(pairs in proptest::collection::btree_map("[a-z_]{1,200}", "[a-zü]{0,200}", 0..5)) {
            let labels = Labels::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            let bytes = wire(&labels);
            prop_assert_eq!(WireLabels::new(&bytes).unwrap().decode(), labels.clone());
            let mut prost_bytes = Vec::new();
            for l in &labels {
                let mut label = Vec::new();
                prost::encoding::string::encode(1, &l.name.to_string(), &mut label);
                prost::encoding::string::encode(2, &l.value.to_string(), &mut label);
                prost::encoding::bytes::encode(1, &label, &mut prost_bytes);
            }
            prop_assert_eq!(bytes, prost_bytes);
        }
    }
}
