//! Label sets in their canonical [`Labels::encode`] form, carrying the proof
//! that they are canonical.
//!
//! Ingestion builds these bytes once (decoders canonicalise straight into
//! them) and storage keys series by them. Checking them again in storage
//! was a twentieth of remote-write ingest CPU, so the check happens where
//! the bytes are made: an [`EncodedLabels`] is either checked by
//! [`EncodedLabels::new`] or handed out by a [`LabelsBuf`], whose bytes only
//! this crate's encoders write.

use std::fmt;
use std::sync::Arc;

use crate::labels::{RawPairs, encode_canonical, put_uvarint};
use crate::{LabelError, Labels};

/// One canonical [`Labels::encode`] form (possibly of the empty set).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct EncodedLabels<'a>(&'a [u8]);

impl<'a> EncodedLabels<'a> {
    /// Checks that `bytes` are exactly one canonical encoding.
    pub fn new(bytes: &'a [u8]) -> Result<Self, LabelError> {
        Labels::check_encoding(bytes)?;
        Ok(Self(bytes))
    }

    pub fn as_bytes(self) -> &'a [u8] {
        self.0
    }

    /// The empty label set (a count of zero, nothing else).
    pub fn is_empty(self) -> bool {
        self.0 == [0]
    }

    /// The `(name, value)` pairs in canonical order, borrowed (no
    /// allocation, unlike [`Self::decode`]).
    pub fn pairs(self) -> impl Iterator<Item = (&'a str, &'a str)> {
        // The encoding is canonical, so every name and value is UTF-8.
        let text = |b: &'a [u8]| std::str::from_utf8(b).unwrap_or_default();
        RawPairs::new(self.0).map(move |(name, value)| (text(name), text(value)))
    }

    /// The `(name, value)` pairs as [`LabelText`], in canonical order: text
    /// for [`SortedLabelsWriter`], not checked as UTF-8 again.
    pub fn text_pairs(self) -> impl Iterator<Item = (LabelText<'a>, LabelText<'a>)> {
        RawPairs::new(self.0).map(|(name, value)| (LabelText(name), LabelText(value)))
    }

    /// The `(name, value)` pairs as bytes, in canonical order: for callers
    /// that compare or hash them and need text only now and then.
    pub fn raw_pairs(self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
        RawPairs::new(self.0)
    }

    /// The labels, decoded (allocates).
    pub fn decode(self) -> Labels {
        match Labels::decode(self.0) {
            Ok((labels, _)) => labels,
            Err(e) => panic!("BUG: an EncodedLabels holds a bad encoding: {e}"),
        }
    }
}

impl fmt::Debug for EncodedLabels<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.decode())
    }
}

/// One canonical encoding, owned and cheap to clone: a series held for
/// long (a scrape cache's entries and staleness sets) in a third of the
/// memory of its [`Labels`].
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SharedEncodedLabels(Arc<[u8]>);

impl SharedEncodedLabels {
    pub fn new(labels: &Labels) -> Self {
        thread_local! {
            /// Where the encoding is written before its one allocation.
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with_borrow_mut(|bytes| {
            bytes.clear();
            labels.encode(bytes);
            Self(Arc::from(bytes.as_slice()))
        })
    }

    pub fn get(&self) -> EncodedLabels<'_> {
        EncodedLabels(&self.0)
    }
}

impl From<EncodedLabels<'_>> for SharedEncodedLabels {
    fn from(labels: EncodedLabels<'_>) -> Self {
        Self(labels.0.into())
    }
}

impl fmt::Debug for SharedEncodedLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// A label name or value taken from a label set or a canonical encoding:
/// UTF-8 by where it comes from, so it is written without being checked
/// again. Ordered as its bytes, as names are in an encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabelText<'a>(&'a [u8]);

impl Ord for LabelText<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Names compared while merging label sets mostly differ in their
        // first byte, which then decides without a call to memcmp.
        match (self.0.first(), other.0.first()) {
            (Some(a), Some(b)) if a != b => a.cmp(b),
            _ => self.0.cmp(other.0),
        }
    }
}

impl PartialOrd for LabelText<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<'a> LabelText<'a> {
    /// Bytes this crate wrote from text.
    pub(crate) fn from_bytes(text: &'a [u8]) -> Self {
        Self(text)
    }

    pub fn as_bytes(self) -> &'a [u8] {
        self.0
    }

    pub fn is_empty(self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> From<&'a str> for LabelText<'a> {
    fn from(text: &'a str) -> Self {
        Self(text.as_bytes())
    }
}

/// Writes one canonical encoding from pairs given in canonical order (names
/// strictly ascending), so that merging sorted label sets needs neither a
/// sort nor an allocation. Pairs with an empty value are left out, as
/// [`Labels`] leaves them out.
pub struct SortedLabelsWriter<'a> {
    out: &'a mut Vec<u8>,
    start: usize,
    count: usize,
    /// Where the last name written lies in `out`.
    last_name: std::ops::Range<usize>,
}

impl<'a> SortedLabelsWriter<'a> {
    /// Starts an encoding at the end of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        let start = out.len();
        // The count, one byte until it reaches 128 (see `finish`).
        out.push(0);
        Self {
            out,
            start,
            count: 0,
            last_name: 0..0,
        }
    }

    /// Appends a pair; refuses a name that is empty or not after the last one.
    pub fn push(&mut self, name: &str, value: &str) -> Result<(), LabelError> {
        self.push_text(name.into(), value.into())
    }

    /// [`Self::push`] for text already known to be UTF-8.
    pub fn push_text(&mut self, name: LabelText<'_>, value: LabelText<'_>) -> Result<(), LabelError> {
        let (name, value) = (name.as_bytes(), value.as_bytes());
        if value.is_empty() {
            return Ok(());
        }
        if name.is_empty() {
            return Err(LabelError::EmptyName);
        }
        if self.count > 0 {
            let last = LabelText(&self.out[self.last_name.clone()]);
            match last.cmp(&LabelText(name)) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => {
                    return Err(LabelError::DuplicateName(String::from_utf8_lossy(name).into_owned()));
                }
                std::cmp::Ordering::Greater => return Err(LabelError::Malformed),
            }
        }
        put_uvarint(self.out, name.len() as u64);
        let name_start = self.out.len();
        self.out.extend_from_slice(name);
        self.last_name = name_start..self.out.len();
        put_uvarint(self.out, value.len() as u64);
        self.out.extend_from_slice(value);
        self.count += 1;
        Ok(())
    }

    /// The encoding written.
    pub fn finish(self) -> EncodedLabels<'a> {
        let Self { out, start, count, .. } = self;
        if count < 0x80 {
            out[start] = count as u8;
        } else {
            let mut varint = Vec::with_capacity(10);
            put_uvarint(&mut varint, count as u64);
            out.splice(start..=start, varint);
        }
        EncodedLabels(&out[start..])
    }
}

/// Canonical label encodings back to back, addressed by position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelsBuf {
    bytes: Vec<u8>,
    /// Where each encoding ends in `bytes`.
    ends: Vec<usize>,
}

impl LabelsBuf {
    /// A buffer with room for `bytes` of encodings, `count` of them.
    pub fn with_capacity(bytes: usize, count: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
            ends: Vec::with_capacity(count),
        }
    }

    /// Appends `labels`' encoding; returns its position.
    pub fn push(&mut self, labels: &Labels) -> usize {
        labels.encode(&mut self.bytes);
        self.end_one()
    }

    /// Canonicalises borrowed pairs as [`encode_canonical`] does and appends
    /// their encoding; returns its position. On error nothing is appended.
    pub fn push_pairs(&mut self, pairs: &mut Vec<(&str, &str)>) -> Result<usize, LabelError> {
        encode_canonical(pairs, &mut self.bytes)?;
        Ok(self.end_one())
    }

    /// Appends the encoding of pairs given in canonical order (see
    /// [`SortedLabelsWriter`]); returns its position. On error nothing is
    /// appended.
    pub fn push_sorted<'p>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'p str, &'p str)>,
    ) -> Result<usize, LabelError> {
        self.push_with(|w| pairs.into_iter().try_for_each(|(name, value)| w.push(name, value)))
    }

    /// Appends the encoding `write` writes; returns its position. Nothing
    /// is kept of an encoding `write` gives up on.
    pub fn push_with<E>(
        &mut self,
        write: impl FnOnce(&mut SortedLabelsWriter<'_>) -> Result<(), E>,
    ) -> Result<usize, E> {
        let start = self.bytes.len();
        let mut w = SortedLabelsWriter::new(&mut self.bytes);
        match write(&mut w) {
            Ok(()) => {
                w.finish();
                Ok(self.end_one())
            }
            Err(e) => {
                self.bytes.truncate(start);
                Err(e)
            }
        }
    }

    fn end_one(&mut self) -> usize {
        self.ends.push(self.bytes.len());
        self.ends.len() - 1
    }

    /// The encoding at position `i`.
    pub fn get(&self, i: usize) -> Option<EncodedLabels<'_>> {
        let end = *self.ends.get(i)?;
        Some(EncodedLabels(&self.bytes[self.start(i)..end]))
    }

    /// Every encoding, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = EncodedLabels<'_>> + '_ {
        (0..self.ends.len()).map(|i| EncodedLabels(&self.bytes[self.start(i)..self.ends[i]]))
    }

    fn start(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.ends[i - 1] }
    }

    /// Removes the last encoding.
    pub fn pop(&mut self) {
        self.ends.pop();
        self.bytes.truncate(self.ends.last().copied().unwrap_or(0));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::put_pairs;

    /// The encoded form of pairs in the given order, canonical or not.
    fn encode_pairs(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        put_pairs(&mut out, pairs.len(), pairs.iter().copied());
        out
    }

    #[test]
    fn pairs_borrow_what_decode_returns() {
        for labels in [
            Labels::empty(),
            Labels::from_pairs([("__name__", "up")]),
            Labels::from_pairs([("__name__", "a"), ("job", "x"), ("zone", "ü")]),
        ] {
            let mut buf = LabelsBuf::default();
            buf.push(&labels);
            let encoded = buf.get(0).unwrap();
            let pairs: Vec<(&str, &str)> = encoded.pairs().collect();
            let want: Vec<(&str, &str)> = labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
            assert_eq!(pairs, want);
        }
    }

    #[test]
    fn a_buffer_hands_back_each_encoding_by_position() {
        let mut buf = LabelsBuf::default();
        let a = Labels::from_pairs([("__name__", "a"), ("job", "x")]);
        assert_eq!(buf.push(&a), 0);
        let mut pairs = vec![("job", "y"), ("__name__", "b"), ("empty", "")];
        assert_eq!(buf.push_pairs(&mut pairs), Ok(1));
        let mut dup = vec![("b", "1"), ("b", "2")];
        assert!(buf.push_pairs(&mut dup).is_err());
        assert_eq!(buf.len(), 2);
        assert_eq!(buf.get(0).map(EncodedLabels::decode), Some(a));
        assert_eq!(
            buf.get(1).map(EncodedLabels::as_bytes),
            Some(&encode_pairs(&[("__name__", "b"), ("job", "y")])[..])
        );
        assert_eq!(buf.get(2), None);
        assert_eq!(
            buf.iter().collect::<Vec<_>>(),
            vec![buf.get(0).unwrap(), buf.get(1).unwrap()]
        );
        assert_eq!(buf.push_sorted([("b", "1"), ("a", "2")]), Err(LabelError::Malformed));
        assert_eq!(buf.len(), 2, "a refused set leaves nothing behind");
        assert_eq!(buf.push_sorted([("__name__", "c"), ("job", "")]), Ok(2));
        assert_eq!(
            buf.get(2).map(EncodedLabels::decode),
            Some(Labels::from_pairs([("__name__", "c")]))
        );
        buf.pop();
        buf.pop();
        assert_eq!((buf.len(), buf.get(1)), (1, None));
        buf.push(&Labels::empty());
        assert!(buf.get(1).is_some_and(EncodedLabels::is_empty));
    }

    #[test]
    fn a_sorted_writer_encodes_as_labels_do_and_refuses_what_is_out_of_order() {
        let many: Vec<(String, String)> = (0..300).map(|i| (format!("l{i:03}"), format!("v{i}"))).collect();
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![],
            vec![("__name__", "up")],
            vec![("A", "x"), ("__name__", "m"), ("empty", ""), ("job", "ü")],
            many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect(),
        ];
        for pairs in cases {
            let mut out = vec![7];
            let mut w = SortedLabelsWriter::new(&mut out);
            for &(n, v) in &pairs {
                w.push(n, v).unwrap();
            }
            let encoded = w.finish().as_bytes().to_vec();
            let mut want = Vec::new();
            Labels::from_pairs(pairs.iter().copied()).encode(&mut want);
            assert_eq!(encoded, want);
            assert_eq!(out[0], 7, "what was in the buffer stays");
            assert!(EncodedLabels::new(&out[1..]).is_ok());
        }
        let mut out = Vec::new();
        let mut w = SortedLabelsWriter::new(&mut out);
        w.push("b", "1").unwrap();
        assert_eq!(w.push("b", "2"), Err(LabelError::DuplicateName("b".into())));
        assert_eq!(w.push("a", "2"), Err(LabelError::Malformed));
        assert_eq!(w.push("", "2"), Err(LabelError::EmptyName));
        w.push("c", "").unwrap();
        w.push("c", "3").unwrap();
        assert_eq!(w.finish().decode(), Labels::from_pairs([("b", "1"), ("c", "3")]));
    }

    #[test]
    fn new_refuses_what_is_not_one_canonical_encoding() {
        let good = encode_pairs(&[("a", "1"), ("b", "2")]);
        assert!(EncodedLabels::new(&good).is_ok());
        let unsorted = encode_pairs(&[("b", "1"), ("a", "2")]);
        for bad in [&unsorted[..], &good[..good.len() - 1], &[3, 1][..], &[][..]] {
            assert!(EncodedLabels::new(bad).is_err(), "{bad:?}");
        }
        assert!(EncodedLabels::new(&[0]).is_ok_and(EncodedLabels::is_empty));
    }
}
