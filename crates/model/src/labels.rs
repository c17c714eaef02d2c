use std::fmt;

/// The label that holds the metric name.
pub const METRIC_NAME: &str = "__name__";

/// The label that holds the metric type (`counter`, `gauge`, ...) under
/// Prometheus' type-and-unit labels.
pub const METRIC_TYPE: &str = "__type__";

/// The label that holds the metric unit under Prometheus' type-and-unit labels.
pub const METRIC_UNIT: &str = "__unit__";

/// The labels that describe a metric's schema rather than one series of it:
/// a result that no longer measures the metric drops them all together.
pub const SCHEMA_LABELS: [&str; 3] = [METRIC_NAME, METRIC_TYPE, METRIC_UNIT];

/// A label name or value: up to 24 bytes are held inline, so decoding or
/// cloning a typical label set allocates once for its vector, not twice per label.
pub type LabelText = compact_str::CompactString;

/// One label pair.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label {
    pub name: LabelText,
    pub value: LabelText,
}

impl Label {
    pub fn new(name: impl Into<LabelText>, value: impl Into<LabelText>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Why a label set cannot identify a series.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LabelError {
    #[error("empty label set")]
    Empty,
    #[error("empty label name")]
    EmptyName,
    #[error("duplicate label name {0:?}")]
    DuplicateName(String),
    #[error("malformed label set encoding")]
    Malformed,
}

/// A canonical label set: sorted by name, no empty values, no duplicate names.
///
/// Two label sets that name the same series are always equal, whatever order
/// or empty labels the sender used, so `Labels` can key a series directly.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Labels(Vec<Label>);

impl Labels {
    /// The empty label set (valid as a query result, never as a stored series).
    pub fn empty() -> Self {
        Self(Vec::new())
    }

    /// Canonicalises `labels`: drops empty values, sorts by name, and rejects
    /// duplicate or empty names. An empty result is allowed here; storage
    /// rejects it on append.
    pub fn new(mut labels: Vec<Label>) -> Result<Self, LabelError> {
        labels.retain(|l| !l.value.is_empty());
        labels.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        for pair in labels.windows(2) {
            if pair[0].name == pair[1].name {
                return Err(LabelError::DuplicateName(pair[0].name.to_string()));
            }
        }
        if labels.iter().any(|l| l.name.is_empty()) {
            return Err(LabelError::EmptyName);
        }
        Ok(Self(labels))
    }

    /// Builds from `(name, value)` pairs; panics on invalid input, for tests and literals.
    pub fn from_pairs<N: Into<LabelText>, V: Into<LabelText>>(pairs: impl IntoIterator<Item = (N, V)>) -> Self {
        let labels = pairs.into_iter().map(|(n, v)| Label::new(n, v)).collect();
        match Self::new(labels) {
            Ok(l) => l,
            Err(e) => panic!("BUG: invalid literal label set: {e}"),
        }
    }

    /// Checks what a stored series additionally needs: at least one label.
    pub fn validate_for_storage(&self) -> Result<(), LabelError> {
        if self.0.is_empty() {
            return Err(LabelError::Empty);
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .binary_search_by(|l| l.name.as_str().cmp(name))
            .ok()
            .map(|i| self.0[i].value.as_str())
    }

    /// The metric name, if the set has one.
    pub fn metric_name(&self) -> Option<&str> {
        self.get(METRIC_NAME)
    }

    /// Removes the metric name, type and unit ([`SCHEMA_LABELS`]).
    pub fn remove_schema_labels(&mut self) {
        self.0.retain(|l| !SCHEMA_LABELS.contains(&l.name.as_str()));
    }

    /// Whether the set carries a metric type or unit label.
    pub fn has_type_or_unit(&self) -> bool {
        self.get(METRIC_TYPE).is_some() || self.get(METRIC_UNIT).is_some()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Label> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_slice(&self) -> &[Label] {
        &self.0
    }

    pub fn into_vec(self) -> Vec<Label> {
        self.0
    }

    /// Sets (or with an empty value, removes) one label, keeping the set canonical.
    pub fn set(&mut self, name: &str, value: &str) {
        match self.0.binary_search_by(|l| l.name.as_str().cmp(name)) {
            Ok(i) if value.is_empty() => {
                self.0.remove(i);
            }
            Ok(i) => self.0[i].value = value.into(),
            Err(_) if value.is_empty() => {}
            Err(i) => self.0.insert(i, Label::new(name, value)),
        }
    }

    /// Removes one label if present.
    pub fn remove(&mut self, name: &str) {
        self.set(name, "");
    }

    /// Appends the canonical binary form: `varint(count)` then per label
    /// `varint(len) name varint(len) value`. Equal sets encode equally.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        put_pairs(
            dst,
            self.0.len(),
            self.0.iter().map(|l| (l.name.as_str(), l.value.as_str())),
        );
    }

    /// Checks, without allocating, that `src` is exactly one canonical
    /// [`Labels::encode`] form (what [`Labels::decode`] would accept, with
    /// nothing left over) and returns its label count.
    pub fn check_encoding(src: &[u8]) -> Result<usize, LabelError> {
        let (count, mut rest) = get_uvarint(src).ok_or(LabelError::Malformed)?;
        if count > rest.len() as u64 {
            return Err(LabelError::Malformed);
        }
        // One scan of the whole encoding proves every string in it UTF-8
        // when it is all ASCII, as label sets nearly always are; otherwise
        // each string is checked on its own.
        let string = if src.is_ascii() { get_bytes } else { get_utf8 };
        let mut prev: Option<&[u8]> = None;
        for _ in 0..count {
            let (name, r) = string(rest)?;
            let (value, r) = string(r)?;
            rest = r;
            if name.is_empty() || value.is_empty() || prev.is_some_and(|p| p >= name) {
                return Err(LabelError::Malformed);
            }
            prev = Some(name);
        }
        if !rest.is_empty() {
            return Err(LabelError::Malformed);
        }
        Ok(count as usize)
    }

    /// The `(name, value)` byte strings of an encoding in [`Self::encode`]
    /// form, unchecked (for hashing or comparing bytes already known to be
    /// canonical); stops at the first malformed byte.
    pub fn raw_pairs(encoded: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
        RawPairs::new(encoded)
    }

    /// Appends a key for the set a [`Labels::encode`] form holds whose byte
    /// order is the sets' order (`Ord for Labels`): sorting many
    /// series by such keys is a `memcmp` per comparison. Each name and value
    /// is written with its 0x00 bytes as 0x00 0xFF and ended by 0x00 0x00,
    /// which sorts before any continuation, so a string sorts before the
    /// longer ones it begins and a set before the longer ones it begins.
    pub fn sort_key(src: &[u8], dst: &mut Vec<u8>) {
        for (name, value) in RawPairs::new(src) {
            for text in [name, value] {
                for part in text.split_inclusive(|&b| b == 0) {
                    dst.extend_from_slice(part);
                    if part.last() == Some(&0) {
                        dst.push(0xff);
                    }
                }
                dst.extend_from_slice(&[0, 0]);
            }
        }
    }

    /// The metric name's bytes in a [`Labels::encode`] form, without
    /// decoding it (empty when there is none or the bytes are malformed).
    pub fn encoded_metric_name(src: &[u8]) -> &[u8] {
        RawPairs::new(src)
            .take_while(|(name, _)| *name <= METRIC_NAME.as_bytes())
            .find(|(name, _)| *name == METRIC_NAME.as_bytes())
            .map_or(&[], |(_, value)| value)
    }

    /// Decodes [`Labels::encode`]'s form, returning the set and the rest of `src`.
    /// The result is re-checked, so corrupt bytes never yield a non-canonical set.
    pub fn decode(src: &[u8]) -> Result<(Self, &[u8]), LabelError> {
        let (count, mut rest) = get_uvarint(src).ok_or(LabelError::Malformed)?;
        if count > rest.len() as u64 {
            return Err(LabelError::Malformed);
        }
        let mut labels = Vec::with_capacity(count as usize);
        // Stored encodings are canonical: checking that while decoding is
        // cheaper than sorting and checking again.
        let (mut canonical, mut prev) = (true, "");
        for _ in 0..count {
            let (name, r) = get_str(rest)?;
            let (value, r) = get_str(r)?;
            rest = r;
            canonical &= sorts_before(prev, name) && !value.is_empty();
            prev = name;
            labels.push(Label::new(name, value));
        }
        if canonical {
            return Ok((Self(labels), rest));
        }
        let out = Self::new(labels)?;
        if out.len() as u64 != count {
            return Err(LabelError::Malformed);
        }
        Ok((out, rest))
    }
}

/// Canonicalises borrowed `(name, value)` pairs in place, exactly as
/// [`Labels::new`] does (empty values dropped, sorted by name, duplicate or
/// empty names rejected), and appends their [`Labels::encode`] form to
/// `dst`, so a decoder can key a series without allocating a `String` per
/// label. On error `dst` is unchanged; `pairs` is left canonical on success.
pub fn encode_canonical(pairs: &mut Vec<(&str, &str)>, dst: &mut Vec<u8>) -> Result<(), LabelError> {
    pairs.retain(|(_, v)| !v.is_empty());
    // Senders almost always send sorted labels; checking is cheaper than sorting.
    if !pairs.is_sorted_by(|a, b| a.0 < b.0) {
        pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
        if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(LabelError::DuplicateName(w[0].0.to_string()));
        }
    }
    if pairs.first().is_some_and(|(n, _)| n.is_empty()) {
        return Err(LabelError::EmptyName);
    }
    put_pairs(dst, pairs.len(), pairs.iter().copied());
    Ok(())
}

/// The [`Labels::encode`] form of `count` canonical pairs.
pub(crate) fn put_pairs<'a>(dst: &mut Vec<u8>, count: usize, pairs: impl Iterator<Item = (&'a str, &'a str)>) {
    put_uvarint(dst, count as u64);
    for (name, value) in pairs {
        put_uvarint(dst, name.len() as u64);
        dst.extend_from_slice(name.as_bytes());
        put_uvarint(dst, value.len() as u64);
        dst.extend_from_slice(value.as_bytes());
    }
}

/// The `(name, value)` byte strings of an encoding, unchecked; stops at the
/// first malformed byte.
pub(crate) struct RawPairs<'a> {
    rest: &'a [u8],
}

impl<'a> RawPairs<'a> {
    pub(crate) fn new(src: &'a [u8]) -> Self {
        Self {
            rest: get_uvarint(src).map_or(&[][..], |(_, r)| r),
        }
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let (len, rest) = get_uvarint(self.rest)?;
        let len = usize::try_from(len).ok().filter(|&l| l <= rest.len())?;
        let (s, rest) = rest.split_at(len);
        self.rest = rest;
        Some(s)
    }
}

impl<'a> Iterator for RawPairs<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        Some((self.bytes()?, self.bytes()?))
    }
}

/// `a < b`, decided by the first bytes when they differ (as neighbouring
/// label names' usually do) without a call to `memcmp`.
fn sorts_before(a: &str, b: &str) -> bool {
    match (a.as_bytes().first(), b.as_bytes().first()) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a < b,
    }
}

fn get_str(src: &[u8]) -> Result<(&str, &[u8]), LabelError> {
    let (s, rest) = get_bytes(src)?;
    let s = std::str::from_utf8(s).map_err(|_| LabelError::Malformed)?;
    Ok((s, rest))
}

/// One length-prefixed string as bytes, unchecked as text.
fn get_bytes(src: &[u8]) -> Result<(&[u8], &[u8]), LabelError> {
    let (len, rest) = get_uvarint(src).ok_or(LabelError::Malformed)?;
    let len = usize::try_from(len).map_err(|_| LabelError::Malformed)?;
    if len > rest.len() {
        return Err(LabelError::Malformed);
    }
    Ok(rest.split_at(len))
}

/// One length-prefixed string, checked to be UTF-8, as bytes.
fn get_utf8(src: &[u8]) -> Result<(&[u8], &[u8]), LabelError> {
    get_str(src).map(|(s, rest)| (s.as_bytes(), rest))
}

pub(crate) fn put_uvarint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

fn get_uvarint(src: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, &b) in src.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Some((v, &src[i + 1..]));
        }
    }
    None
}

impl<'a> IntoIterator for &'a Labels {
    type Item = &'a Label;
    type IntoIter = std::slice::Iter<'a, Label>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Prometheus' text form: `name{a="b", c="d"}`.
impl fmt::Display for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.metric_name();
        if let Some(n) = name {
            f.write_str(n)?;
        }
        let rest: Vec<_> = self.0.iter().filter(|l| l.name != METRIC_NAME).collect();
        if rest.is_empty() && name.is_some() {
            return Ok(());
        }
        f.write_str("{")?;
        for (i, l) in rest.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}={:?}", l.name, l.value)?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn labels_canonicalise_order_and_empty_values() {
        let a = Labels::new(vec![Label::new("b", "2"), Label::new("a", "1"), Label::new("c", "")]).unwrap();
        let b = Labels::from_pairs([("a", "1"), ("b", "2")]);
        assert_eq!(a, b);
    }

    #[test]
    fn schema_labels_go_together_and_others_stay() {
        let mut l = Labels::from_pairs([
            ("__name__", "m"),
            ("__type__", "counter"),
            ("__unit__", "s"),
            ("job", "a"),
        ]);
        assert!(l.has_type_or_unit());
        l.remove_schema_labels();
        assert_eq!(l, Labels::from_pairs([("job", "a")]));
        assert!(!l.has_type_or_unit());
    }

    #[test]
    fn labels_reject_duplicates_and_empty_names() {
        let dup = Labels::new(vec![Label::new("a", "1"), Label::new("a", "2")]);
        assert_eq!(dup, Err(LabelError::DuplicateName("a".into())));
        assert_eq!(Labels::new(vec![Label::new("", "1")]), Err(LabelError::EmptyName));
        assert_eq!(Labels::empty().validate_for_storage(), Err(LabelError::Empty));
    }

    #[test]
    fn labels_set_and_remove_keep_order() {
        let mut l = Labels::from_pairs([("b", "2")]);
        l.set("a", "1");
        l.set("c", "3");
        assert_eq!(l, Labels::from_pairs([("a", "1"), ("b", "2"), ("c", "3")]));
        l.remove("b");
        assert_eq!(l.get("b"), None);
        assert_eq!(l.get("c"), Some("3"));
    }

    #[test]
    fn labels_display_like_prometheus() {
        let l = Labels::from_pairs([("__name__", "up"), ("job", "node")]);
        assert_eq!(l.to_string(), r#"up{job="node"}"#);
        assert_eq!(Labels::from_pairs([("__name__", "up")]).to_string(), "up");
    }

    #[test]
    fn encoded_metric_name_finds_the_name_among_other_labels() {
        let enc = |l: &Labels| {
            let mut b = Vec::new();
            l.encode(&mut b);
            b
        };
        // Upper-case names sort before `__name__`, lower-case after it.
        let l = Labels::from_pairs([("A", "x"), ("__name__", "up"), ("job", "node")]);
        assert_eq!(Labels::encoded_metric_name(&enc(&l)), b"up");
        let nameless = Labels::from_pairs([("A", "x"), ("job", "node")]);
        assert_eq!(Labels::encoded_metric_name(&enc(&nameless)), b"");
        assert_eq!(Labels::encoded_metric_name(&[7, 1]), b"");
    }

    proptest! {
        #[test]
        fn encoded_metric_name_is_the_decoded_one(
            pairs in proptest::collection::btree_map("[A-Za-z_]{1,3}|__name__", "[a-z]{0,3}", 0..6),
        ) {
            let l = Labels::from_pairs(pairs);
            let mut b = Vec::new();
            l.encode(&mut b);
            prop_assert_eq!(Labels::encoded_metric_name(&b), l.metric_name().unwrap_or("").as_bytes());
        }
    }

    #[test]
    fn labels_decode_rejects_garbage() {
        assert!(Labels::decode(&[5, 1]).is_err());
        assert!(Labels::decode(&[]).is_err());
        // Two labels with the same name are not canonical.
        let mut bad = vec![2];
        for _ in 0..2 {
            bad.extend_from_slice(&[1, b'a', 1, b'x']);
        }
        assert!(Labels::decode(&bad).is_err());
    }

    proptest! {
        /// Pairs in any order, with empty and repeated names and empty values:
        /// decoding takes its fast path only for canonical input and
        /// otherwise canonicalises as `Labels::new`, or fails as it does.
        #[test]
        fn decode_agrees_with_new_on_any_pairs(
            pairs in proptest::collection::vec(("[ab_]{0,2}", "[xy]{0,2}"), 0..6),
        ) {
            let mut buf = Vec::new();
            super::put_pairs(&mut buf, pairs.len(), pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            let new = Labels::new(pairs.iter().map(|(n, v)| Label::new(n.as_str(), v.as_str())).collect());
            let dropped_empty = new.as_ref().is_ok_and(|l| l.len() != pairs.len());
            match Labels::decode(&buf) {
                Ok((decoded, rest)) => {
                    prop_assert!(rest.is_empty());
                    prop_assert_eq!(Ok(decoded), new);
                }
                Err(_) => prop_assert!(new.is_err() || dropped_empty),
            }
        }
    }

    proptest! {
        #[test]
        fn labels_encode_round_trips(pairs in proptest::collection::btree_map("[a-z_]{1,8}", "\\PC{1,12}", 0..10)) {
            let l = Labels::from_pairs(pairs);
            let mut buf = Vec::new();
            l.encode(&mut buf);
            buf.push(0xAA);
            let (back, rest) = Labels::decode(&buf).unwrap();
            prop_assert_eq!(&back, &l);
            prop_assert_eq!(rest, &[0xAA][..]);
            prop_assert!(Labels::check_encoding(&buf).is_err());
            buf.pop();
            prop_assert_eq!(Labels::check_encoding(&buf), Ok(l.len()));
        }

        /// Small alphabets, so that sets share names, values and prefixes.
        #[test]
        fn sort_keys_order_as_the_sets_do(
            a in proptest::collection::btree_map("[a-c_\\x00]{1,3}", "[ab\\x00é]{1,3}", 0..4),
            b in proptest::collection::btree_map("[a-c_\\x00]{1,3}", "[ab\\x00é]{1,3}", 0..4),
        ) {
            let (a, b) = (Labels::from_pairs(a), Labels::from_pairs(b));
            let key = |l: &Labels| {
                let (mut enc, mut key) = (Vec::new(), Vec::new());
                l.encode(&mut enc);
                Labels::sort_key(&enc, &mut key);
                key
            };
            prop_assert_eq!(key(&a).cmp(&key(&b)), a.cmp(&b));
        }

        #[test]
        fn check_encoding_accepts_exactly_what_decode_accepts(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            let decoded = Labels::decode(&bytes).ok().filter(|(_, rest)| rest.is_empty());
            prop_assert_eq!(Labels::check_encoding(&bytes).ok(), decoded.map(|(l, _)| l.len()));
        }

        /// Bytes that are mostly small counts, lengths and ASCII letters, so
        /// that many are well-formed: the all-ASCII path and the one that
        /// checks each string must agree with `decode`.
        #[test]
        fn check_encoding_agrees_with_decode_on_near_canonical_bytes(
            bytes in proptest::collection::vec(
                prop_oneof![0u8..4, Just(b'a'), Just(b'b'), Just(0xC3), Just(0xA9), Just(0x80)],
                0..16,
            ),
        ) {
            let decoded = Labels::decode(&bytes).ok().filter(|(_, rest)| rest.is_empty());
            prop_assert_eq!(Labels::check_encoding(&bytes).ok(), decoded.map(|(l, _)| l.len()));
        }

        #[test]
        fn encode_canonical_agrees_with_labels_new(
            pairs in proptest::collection::vec(("[a-c_]{0,2}", "[xy]{0,2}"), 0..8),
        ) {
            let owned: Vec<Label> = pairs.iter().map(|(n, v)| Label::new(n.as_str(), v.as_str())).collect();
            let mut borrowed: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let mut got = vec![0xAA];
            let result = encode_canonical(&mut borrowed, &mut got);
            match Labels::new(owned) {
                Ok(labels) => {
                    prop_assert_eq!(result, Ok(()));
                    let mut want = vec![0xAA];
                    labels.encode(&mut want);
                    prop_assert_eq!(got, want);
                    let names: Vec<&str> = labels.iter().map(|l| l.name.as_str()).collect();
                    prop_assert_eq!(borrowed.iter().map(|p| p.0).collect::<Vec<_>>(), names);
                }
                Err(e) => {
                    prop_assert_eq!(result, Err(e));
                    prop_assert_eq!(got, vec![0xAA]);
                }
            }
        }
    }
}
